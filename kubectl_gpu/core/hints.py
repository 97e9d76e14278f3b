"""Pod annotations that carry GPU intent: HAMi's card choice, and requests other schedulers
(KAI, Run:ai) take only from annotations."""

from __future__ import annotations

from collections.abc import Mapping

from kubectl_gpu.dra import hami
from kubectl_gpu.dra.facts import attr, guarded_attr, literal
from .model import Note, Severity

# Scheduler-specific annotations that ask for a GPU with no resource request at all.
ANNOTATION_ONLY_KEYS = ("gpu-fraction", "gpu-memory", "gpu-fraction-num-devices", "runai-gpu-fraction")
_MIG_ANNOTATION_PREFIX = "nvidia.com/mig-"
# HAMi's card choice: (annotation, attribute, excludes, matched as a case-insensitive substring).
HAMI_CARD_ANNOTATIONS = (
    (hami.USE_GPU_TYPE, "productName", False, True),
    (hami.NO_USE_GPU_TYPE, "productName", True, True),
    (hami.USE_GPU_UUID, "uuid", False, False),
    (hami.NO_USE_GPU_UUID, "uuid", True, False),
)


def _values(raw: object) -> list[str]:
    return [v.strip() for v in str(raw).split(",") if v.strip()]


def hami_selectors(annotations: Mapping[str, object], hami_dra: bool = False) -> tuple[list[str], list[Note]]:
    """HAMi's `nvidia.com/use-gputype` & co. become device selectors: on NVIDIA's attributes, or with
    ``hami_dra`` exactly as HAMi-DRA writes them for HAMi's driver (dra/hami.py card_selector).  An
    annotation with no value in it (`""`, `","`) is an ERROR: dropping it would let the pod have any
    GPU (fail closed), as HAMi-DRA refuses it too."""
    selectors: list[str] = []
    notes: list[Note] = []
    order = [(a.key, a.attribute, a.excludes, a.attribute == "productName") for a in hami.CARD_ANNOTATIONS] \
        if hami_dra else HAMI_CARD_ANNOTATIONS
    for key, name, negate, substring in order:
        if key not in annotations:
            continue
        values = _values(annotations[key])
        if not values:
            what = "card types (e.g. A100,H100)" if substring else "GPU UUIDs (GPU-...)"
            notes.append(Note(Severity.ERROR, f"annotation {key}={annotations[key]!r} is empty: it names no "
                                              f"{what}; list them comma-separated, or remove the annotation"))
            continue
        if hami_dra:
            annotation = next(a for a in hami.CARD_ANNOTATIONS if a.key == key)
            selectors.append(hami.card_selector(annotation, values))
            if substring:
                notes.append(Note(Severity.WARNING, f"annotation {key}={annotations[key]} became HAMi-DRA's selector, "
                                                    "which compares the whole productName (e.g. \"NVIDIA A100-SXM4-80GB\"); "
                                                    "HAMi's scheduler matched a part of it, so name the GPUs in full"))
            else:
                notes.append(Note(Severity.INFO, f"annotation {key}={annotations[key]} became a device selector"))
            continue
        if substring:  # HAMi matches card types as case-insensitive substrings of the product name
            parts = [f"{attr(name)}.upperAscii().contains({literal(v.upper())})" for v in values]
        else:
            parts = [f"{attr(name)} == {literal(v)}" for v in values]
        condition = "(" + " || ".join(parts) + ")" if len(parts) > 1 or negate else parts[0]
        if negate:
            condition = f"!{condition}"
        selectors.append(guarded_attr(name, condition))
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
