"""The pure translation core: legacy GPU requests -> DRA claims + a JSON patch. No I/O.

This module is the core's public face: every package outside the core (the webhook, the CLI and
its packages) imports from here and from `constants`, never from the other modules, which are the
core's own business (.importlinter checks it; tests/test_architecture.py runs the check and keeps
the list of internals complete).  What DRA and the driver are (facts, quantities, the driver's
config) is not the core's: it lives in kubectl_gpu.dra, which callers import directly.
"""

from kubectl_gpu.lazy_exports import lazy_exports

# Where each public name lives (name in this face -> module, name there).  A module is loaded when
# one of its names is first used: `explain -f --slices` needs the fact tables, not
# the translation (translate, demand, claims, node constraints: about a tenth of its start-up).
_HOMES: dict[str, tuple[str, str]] = {
    **{name: ("existing_claims", name) for name in (
        "BesideLegacy", "ClaimRef", "KnownClaim", "claim_spec_requests_gpus", "claims_beside_legacy_gpus",
        "gpus_asked_twice", "known_claims")},
    **{name: ("families", name) for name in (
        "ContainerRef", "LegacyRequest", "family_of", "has_legacy_gpu_request", "is_plain_integer_gpu",
        "legacy_requests", "legacy_texts", "mig_profile_of")},
    "PatchError": ("json_patch", "PatchError"),
    "escape_pointer": ("json_patch", "escape"),
    "prefix_patch": ("json_patch", "prefix"),
    "split_pointer": ("json_patch", "split"),
    "unescape_pointer": ("json_patch", "unescape"),
    **{name: ("model", name) for name in (
        "ApiVersion", "ClaimObject", "IntegerGpuMode", "PodTranslation", "Sharing", "TargetDriver", "TranslateOptions")},
    **{name: ("notes", name) for name in ("Note", "Severity")},
    "for_target": ("hami_target", "for_target"),
    **{name: ("kueue", name) for name in (
        "KUEUE_GROUP", "QueueChange", "is_cluster_queue", "kueue_configuration", "kueue_notes", "merged_mappings",
        "queue_change")},
    **{name: ("quota", name) for name in (
        "QuotaEntry", "QuotaPlan", "QuotaTarget", "devices_entry", "is_resource_quota", "plan_quota")},
    "translate_pod_template": ("translate", "translate_pod_template"),
    **{name: ("volcano", name) for name in ("VOLCANO_SCHEDULING_GROUP", "VolcanoQueueChange", "is_volcano_queue", "volcano_queue_change")},
}

__getattr__ = lazy_exports(__name__, globals(), _HOMES)


__all__ = [
    "ApiVersion", "BesideLegacy", "ClaimObject", "ClaimRef", "KnownClaim", "claim_spec_requests_gpus",
    "claims_beside_legacy_gpus", "gpus_asked_twice", "known_claims", "ContainerRef", "IntegerGpuMode", "LegacyRequest", "Note", "PatchError",
    "PodTranslation", "Severity", "Sharing", "TargetDriver", "TranslateOptions", "for_target", "escape_pointer", "family_of",
    "has_legacy_gpu_request", "is_plain_integer_gpu", "legacy_requests", "legacy_texts", "prefix_patch", "split_pointer",
    "mig_profile_of", "translate_pod_template", "unescape_pointer",
    "QuotaEntry", "QuotaPlan", "QuotaTarget", "devices_entry", "is_resource_quota", "plan_quota",
    "KUEUE_GROUP", "QueueChange", "is_cluster_queue", "kueue_configuration", "kueue_notes", "merged_mappings",
    "queue_change", "VOLCANO_SCHEDULING_GROUP", "VolcanoQueueChange", "is_volcano_queue", "volcano_queue_change",
]
