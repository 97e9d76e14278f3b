"""The target cluster: its profile (version, DRA gates, classes, devices) and translation fitted to it.

    from kubectl_gpu.cluster import load_profile_files, fit_options, checked_translator
"""

from kubectl_gpu.lazy_exports import homes_of, lazy_exports

# Where each public name lives.  The package loads a module only when one of its names is first
# used: `explain` reads a profile (profile.py) and never fits a translation (fit.py) or reads
# profile files (files.py).
_HOMES = {
    "files": ("load_profile_files",),
    "fit": ("DRIVER_REQUIREMENTS", "FittedOptions", "checked_translator", "fit_options", "unsatisfiable"),
    "profile": ("ClusterProfile", "ProfileError", "build_profile", "parse_feature_gates", "parse_kubernetes_version",
                "read_live_profile"),
}
__getattr__ = lazy_exports(__name__, globals(), homes_of(_HOMES))


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
