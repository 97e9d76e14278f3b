"""Pod annotations that carry GPU intent: HAMi's card choice, and requests other schedulers
(KAI, Run:ai) take only from annotations."""

from __future__ import annotations

from collections.abc import Mapping

from kubectl_gpu.dra import hami
from kubectl_gpu.dra.facts import attr, guarded_attr, literal
from .notes import Note, Severity

# Scheduler-specific annotations that ask for a GPU with no resource request at all.
ANNOTATION_ONLY_KEYS = ("gpu-fraction", "gpu-memory", "gpu-fraction-num-devices", "runai-gpu-fraction")
_MIG_ANNOTATION_PREFIX = "nvidia.com/mig-"
_BY_KEY = {a.key: a for a in hami.CARD_ANNOTATIONS}
# HAMi's card choice, in the order the selectors are written for NVIDIA's driver (card types first);
# for HAMi's, HAMi-DRA's own order (hami.CARD_ANNOTATIONS).
NVIDIA_ORDER = tuple(_BY_KEY[k] for k in (hami.USE_GPU_TYPE, hami.NO_USE_GPU_TYPE, hami.USE_GPU_UUID,
                                          hami.NO_USE_GPU_UUID))


def hami_selectors(annotations: Mapping[str, object], hami_dra: bool = False) -> tuple[list[str], list[Note]]:
    """HAMi's `nvidia.com/use-gputype` & co. become device selectors: on NVIDIA's attributes, where
    HAMi's scheduler matched card types as case-insensitive parts of the product name; or with
    ``hami_dra`` exactly as HAMi-DRA writes them for HAMi's driver (dra/hami.py card_selector).  An
    annotation with no value in it (`""`, `","`) is an ERROR: dropping it would let the pod have any
    GPU (fail closed), as HAMi-DRA refuses it too."""
    selectors: list[str] = []
    notes: list[Note] = []
    for annotation in hami.CARD_ANNOTATIONS if hami_dra else NVIDIA_ORDER:
        key = annotation.key
        if key not in annotations:
            continue
        card_type = annotation.attribute == "productName"
        values = hami.annotation_values(annotations[key])
        if not values:
            what = "card types (e.g. A100,H100)" if card_type else "GPU UUIDs (GPU-...)"
            notes.append(Note(Severity.ERROR, f"annotation {key}={annotations[key]!r} is empty: it names no "
                                              f"{what}; list them comma-separated, or remove the annotation"))
            continue
        selectors.append(hami.card_selector(annotation, values) if hami_dra else _nvidia_selector(annotation, values))
        if hami_dra and card_type:
            notes.append(Note(Severity.WARNING, f"annotation {key}={annotations[key]} became HAMi-DRA's selector, "
                                                "which compares the whole productName (e.g. \"NVIDIA A100-SXM4-80GB\"); "
                                                "HAMi's scheduler matched a part of it, so name the GPUs in full"))
        else:
            notes.append(Note(Severity.INFO, f"annotation {key}={annotations[key]} became a device selector"))
    return selectors, notes


def _nvidia_selector(annotation: hami.CardAnnotation, values: list[str]) -> str:
    """A card choice on NVIDIA's attributes, guarded; card types match as HAMi's scheduler matched them."""
    name = annotation.attribute
    if name == "productName":
        parts = [f"{attr(name)}.upperAscii().contains({literal(v.upper())})" for v in values]
    else:
        parts = [f"{attr(name)} == {literal(v)}" for v in values]
    condition = "(" + " || ".join(parts) + ")" if len(parts) > 1 or annotation.excludes else parts[0]
    return guarded_attr(name, f"!{condition}" if annotation.excludes else condition)


def annotation_only_notes(annotations: Mapping[str, object]) -> list[Note]:
    """Warn about GPUs asked for only by annotation: nothing to translate, but silence would mislead."""
    keys = [k for k in annotations if k in ANNOTATION_ONLY_KEYS or str(k).startswith(_MIG_ANNOTATION_PREFIX)]
    if not keys:
        return []
    listed = ", ".join(f"{k}={annotations[k]}" for k in keys)
    return [Note(Severity.WARNING, f"GPU requested only by annotation ({listed}), which a specific scheduler "
                                   "(KAI, Run:ai) reads; not translated: write a DRA claim for it by hand")]
