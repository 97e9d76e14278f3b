"""A cluster profile from files: what `kubectl get resourceslices,deviceclasses -o yaml` prints."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from kubectl_gpu.input_text import NotText, decode, load_all

from .profile import ClusterProfile, ProfileError, build_profile

SUFFIXES = (".yaml", ".yml", ".json")


def load_profile_files(paths: Sequence[str], *, kubernetes_minor: int | None = None,
                       gate_overrides: Mapping[str, bool] | None = None) -> ClusterProfile:
    """Read every YAML/JSON file given (directories recursively).  ProfileError says which file
    is wrong and what was expected."""
    objects: list[Any] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
            if not files:
                raise ProfileError(f"--cluster {name}: the directory holds no .yaml/.yml/.json file")
        elif path.exists():  # a file, or a pipe (the shell's <(kubectl get ...) is /dev/fd/N)
            files = [path]
        else:
            raise ProfileError(f"--cluster {name}: no such file or directory")
        for file in files:
            objects.extend(_read(file))
    profile = build_profile("files " + ", ".join(paths), objects=objects, kubernetes_minor=kubernetes_minor,
                            gate_overrides=gate_overrides)
    if not profile.resource_slices and not profile.device_classes:
        raise ProfileError(f"--cluster {', '.join(paths)}: no ResourceSlice or DeviceClass found; pass the output of "
                           "`kubectl get resourceslices,deviceclasses -o yaml`")
    return profile


def _read(file: Path) -> list[Any]:
    try:
        text, _ = decode(file.read_bytes(), str(file))
    except NotText as err:
        raise ProfileError(f"--cluster {err}") from None
    except OSError as err:
        raise ProfileError(f"--cluster {file}: cannot read it ({err})") from err
    try:
        return [doc for doc in load_all(text) if doc is not None]
    except yaml.YAMLError as err:
        raise ProfileError(f"--cluster {file}: not valid YAML/JSON ({err})") from err
