"""Keep cel-python's CEL parser tables between runs, in the user's cache directory.

Selectors are parsed with cel-python's lark grammar (kubectl_gpu/cel/syntax.py).  lark computes
the LALR tables of that grammar when the first parser is made: 0.27 s of CPU, every process, more
than half of the 0.5 s `kubectl gpu explain -f claim.yaml --slices slices.yaml` may take.  lark
can save the finished parser and load it again (its ``cache=`` option, 0.03 s), keyed by a hash
of the grammar, the options, lark's and Python's versions: a file written for another grammar is
never used, lark builds the tables again.

The parser is still built by cel-python itself, with its own grammar and options; only lark's
``cache`` is added.  The file lives in ``$XDG_CACHE_HOME/kubectl-gpu`` (``~/.cache/kubectl-gpu``),
a directory only its owner can write, because lark's cache is a pickle.  When that directory
cannot be used (read-only home, someone else's directory), the tables are built as before.
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import sys
import tempfile
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


def build_cel_parser() -> None:
    """Make cel-python's parser (its ``CELParser.CEL_PARSER``) through lark's cache.

    Registered with kubectl_gpu.cel.syntax by the CLI and called before the first parse."""
    import celpy
    import lark
    from celpy import celparser

    if celparser.CELParser.CEL_PARSER is not None:
        return
    directory = cache_directory()
    if directory is None:
        return  # cel-python builds it on first use, as without a cache
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return  # cel-python builds it on first use, as without a cache
    if not _private(directory):
        return
    try:
        grammar = (Path(celpy.__file__).parent / "cel.lark").read_bytes()
    except OSError:
        return
    # One file per grammar, lark and Python: a file that exists is complete and is for this parser.
    name = (f"cel-parser-{hashlib.sha256(grammar).hexdigest()[:16]}-lark-{lark.__version__}"
            f"-py{sys.version_info[0]}.{sys.version_info[1]}.lark")
    target = directory / name
    if target.exists():
        _make_parser(celparser, target)  # lark checks the hash inside and rebuilds if it differs
        return
    # First run: write beside the target and rename, so a concurrent run never reads half a file.
    handle, partial = tempfile.mkstemp(prefix=".cel-parser-", dir=directory)
    os.close(handle)
    os.unlink(partial)  # lark writes the file itself
    try:
        _make_parser(celparser, Path(partial))
        if os.path.exists(partial):
            os.replace(partial, target)
    except OSError:
        pass
    finally:
        if os.path.exists(partial):
            os.unlink(partial)


def _make_parser(celparser, cache_file: Path) -> None:
    """cel-python's CELParser() with lark's ``cache=cache_file`` added to its own Lark options."""
    original = celparser.Lark
    celparser.Lark = functools.partial(original, cache=str(cache_file))
    try:
        celparser.CELParser()
    finally:
        celparser.Lark = original
