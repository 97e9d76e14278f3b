"""The pure translation core: legacy GPU requests -> DRA claims + a JSON patch. No I/O."""

from .families import has_legacy_gpu_request, legacy_requests
from .model import (ApiVersion, ClaimObject, IntegerGpuMode, Note, PodTranslation, Severity, Sharing,
                    TranslateOptions)
from .translate import translate_pod_template

__all__ = [
    "ApiVersion", "ClaimObject", "IntegerGpuMode", "Note", "PodTranslation", "Severity", "Sharing",
    "TranslateOptions", "has_legacy_gpu_request", "legacy_requests", "translate_pod_template",
]
