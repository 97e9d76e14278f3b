"""The target cluster: its profile (version, DRA gates, classes, devices) and translation fitted to it.

    from kubectl_gpu.cluster import load_profile_files, fit_options, checked_translator
"""

from importlib import import_module
from typing import Any

# Where each public name lives.  The package loads a module only when one of its names is first
# used: `explain` reads a profile (profile.py) and never fits a translation (fit.py) or reads
# profile files (files.py).
_HOMES = {
    "files": ("load_profile_files",),
    "fit": ("DRIVER_REQUIREMENTS", "FittedOptions", "checked_translator", "fit_options", "unsatisfiable"),
    "profile": ("ClusterProfile", "ProfileError", "build_profile", "parse_feature_gates", "parse_kubernetes_version",
                "read_live_profile"),
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "DRIVER_REQUIREMENTS",
    "ClusterProfile",
    "FittedOptions",
    "ProfileError",
    "build_profile",
    "checked_translator",
    "fit_options",
    "load_profile_files",
    "parse_feature_gates",
    "parse_kubernetes_version",
    "read_live_profile",
    "unsatisfiable",
]
