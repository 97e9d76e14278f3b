"""The pure translation core: legacy GPU requests -> DRA claims + a JSON patch. No I/O."""

from .families import LegacyRequest, has_legacy_gpu_request, is_plain_integer_gpu, legacy_requests
from .model import (ApiVersion, ClaimObject, IntegerGpuMode, Note, PodTranslation, Severity, Sharing,
                    TranslateOptions)
from .translate import translate_pod_template

__all__ = [
    "ApiVersion", "ClaimObject", "IntegerGpuMode", "LegacyRequest", "Note", "PodTranslation", "Severity",
    "Sharing", "TranslateOptions", "has_legacy_gpu_request", "is_plain_integer_gpu", "legacy_requests",
    "translate_pod_template",
]
