"""The user's cache directory, where kubectl-gpu keeps work between runs (CEL parsing:
kubectl_gpu/cli/cel_parser_cache.py; rendered help: kubectl_gpu/cli/launch.py).  Light on
purpose (os, stat and pathlib, which the interpreter has loaded already): `--help` reads it
before anything else is imported."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def cache_directory() -> Path | None:
    """``$XDG_CACHE_HOME/kubectl-gpu``, else ``~/.cache/kubectl-gpu``; None when neither is an
    absolute path (the XDG spec ignores a relative one; without a home "~" stays "~"), so nothing
    is ever written relative to the current directory."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kubectl-gpu" if os.path.isabs(base) else None


def _private(directory: Path) -> bool:
    """Ours and writable by nobody else: what is loaded from it is as trusted as our own files."""
    try:
        info = directory.stat()
    except OSError:
        return False
    getuid = getattr(os, "getuid", None)
    return (stat.S_ISDIR(info.st_mode) and (getuid is None or info.st_uid == getuid())) and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def usable_cache_directory() -> Path | None:
    """The cache directory, created private (0700) if missing; None when it cannot be created or
    someone else could write to it (nothing is then kept or read)."""
    directory = cache_directory()
    if directory is None:
        return None
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return None
    return directory if _private(directory) else None
