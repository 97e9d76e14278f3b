"""The pure translation core: legacy GPU requests -> DRA claims + a JSON patch. No I/O.

This module is the core's public face: every package outside the core (the webhook, the CLI and
its packages, CEL) imports from here and from the fact tables `constants`, `facts` and
`driver_config`, never from the other modules, which are the core's own business (.importlinter
checks it; tests/test_architecture.py runs the check and keeps the list of internals complete).
"""

from .existing_claims import (BesideLegacy, ClaimRef, KnownClaim, claim_spec_requests_gpus, claims_beside_legacy_gpus,
                              gpus_asked_twice, known_claims)
from .families import (ContainerRef, LegacyRequest, family_of, has_legacy_gpu_request, is_plain_integer_gpu,
                       legacy_requests, mig_profile_of)
from .json_patch import PatchError
from .json_patch import escape as escape_pointer
from .json_patch import prefix as prefix_patch
from .json_patch import unescape as unescape_pointer
from .model import (ApiVersion, ClaimObject, IntegerGpuMode, Note, PodTranslation, Severity, Sharing,
                    TranslateOptions)
from .quantity import FORMAT_ERROR as QUANTITY_FORMAT_ERROR
from .quantity import QuantityError, format_bytes, format_plain, parse_kubernetes_quantity, parse_quantity
from .translate import translate_pod_template

__all__ = [
    "ApiVersion", "BesideLegacy", "ClaimObject", "ClaimRef", "KnownClaim", "claim_spec_requests_gpus",
    "claims_beside_legacy_gpus", "gpus_asked_twice", "known_claims", "ContainerRef", "IntegerGpuMode", "LegacyRequest", "Note", "PatchError",
    "PodTranslation", "QuantityError", "Severity", "Sharing", "TranslateOptions", "escape_pointer", "family_of",
    "has_legacy_gpu_request", "is_plain_integer_gpu", "legacy_requests", "parse_quantity", "prefix_patch",
    "QUANTITY_FORMAT_ERROR", "format_bytes", "format_plain", "mig_profile_of", "parse_kubernetes_quantity",
    "translate_pod_template", "unescape_pointer",
]
