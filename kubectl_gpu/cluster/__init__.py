"""The target cluster: its profile (version, DRA gates, classes, devices) and translation fitted to it.

    from kubectl_gpu.cluster import load_profile_files, fit_options, checked_translator
"""

from .files import load_profile_files
from .fit import DRIVER_REQUIREMENTS, FittedOptions, checked_translator, fit_options, unsatisfiable
from .profile import (ClusterProfile, ProfileError, build_profile, parse_feature_gates, parse_kubernetes_version,
                      read_live_profile)

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
