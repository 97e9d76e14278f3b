"""Pod annotations that carry GPU intent: HAMi's card choice, and requests other schedulers
(KAI, Run:ai) take only from annotations."""

from __future__ import annotations

import json
from collections.abc import Mapping

from .constants import NVIDIA_ATTRIBUTE_DOMAIN
from .model import Note, Severity

_ATTRS = f'device.attributes["{NVIDIA_ATTRIBUTE_DOMAIN}"]'
# Scheduler-specific annotations that ask for a GPU with no resource request at all.
ANNOTATION_ONLY_KEYS = ("gpu-fraction", "gpu-memory", "gpu-fraction-num-devices", "runai-gpu-fraction")
_MIG_ANNOTATION_PREFIX = "nvidia.com/mig-"


def _values(raw: object) -> list[str]:
    return [v.strip() for v in str(raw).split(",") if v.strip()]


def hami_selectors(annotations: Mapping[str, object]) -> tuple[list[str], list[Note]]:
    """HAMi's `nvidia.com/use-gputype` & co. become device selectors."""
    selectors: list[str] = []
    notes: list[Note] = []
    for key, attr, negate, upper in (
        ("nvidia.com/use-gputype", "productName", False, True),
        ("nvidia.com/nouse-gputype", "productName", True, True),
        ("nvidia.com/use-gpuuuid", "uuid", False, False),
        ("nvidia.com/nouse-gpuuuid", "uuid", True, False),
    ):
        if key not in annotations:
            continue
        values = _values(annotations[key])
        if not values:
            continue
        if upper:  # HAMi matches card types as case-insensitive substrings of the product name
            parts = [f"{_ATTRS}.productName.upperAscii().contains({json.dumps(v.upper())})" for v in values]
        else:
            parts = [f"{_ATTRS}.uuid == {json.dumps(v)}" for v in values]
        condition = parts[0] if len(parts) == 1 else "(" + " || ".join(parts) + ")"
        if negate:
            condition = f"!{condition}"
        selectors.append(f'("{attr}" in {_ATTRS} && {condition})')
        notes.append(Note(Severity.INFO, f"annotation {key}={annotations[key]} became a device selector"))
    return selectors, notes


def annotation_only_notes(annotations: Mapping[str, object]) -> list[Note]:
    """Warn about GPUs asked for only by annotation: nothing to translate, but silence would mislead."""
    keys = [k for k in annotations if k in ANNOTATION_ONLY_KEYS or str(k).startswith(_MIG_ANNOTATION_PREFIX)]
    if not keys:
        return []
    listed = ", ".join(f"{k}={annotations[k]}" for k in keys)
    return [Note(Severity.WARNING, f"GPU requested only by annotation ({listed}), which a specific scheduler "
                                   "(KAI, Run:ai) reads; not translated: write a DRA claim for it by hand")]
