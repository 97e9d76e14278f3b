"""Carry out a FilePlan on its parsed trees, in place: patches first (their paths count List
items as they were read), then new List items; standalone new documents are left for
the renderer to place."""

from __future__ import annotations

import copy
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from .loader import Format
from .nodes import to_round_trip
from .patch import apply_patch
from .plan import FilePlan


@dataclass
class AppliedFile:
    plan: FilePlan
    changed_documents: set[int] = field(default_factory=set)
    # New documents to write just before document i (plain manifests, in order).
    documents_before: dict[int, list[dict[str, Any]]] = field(default_factory=dict)


def apply_plan(plan: FilePlan) -> AppliedFile:
    parsed = plan.file
    wrap = to_round_trip if parsed.format is Format.YAML else copy.deepcopy
    applied = AppliedFile(plan)
    for template in plan.templates:
        if template.operations:
            apply_patch(parsed.documents[template.obj.document].tree, template.operations, wrap)
            applied.changed_documents.add(template.obj.document)

    list_items: dict[int, dict[int, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for emission in plan.emissions:
        before = emission.before
        if before.item is None:
            applied.documents_before.setdefault(before.document, []).append(emission.manifest)
        else:
            list_items[before.document][before.item].append(emission.manifest)
    for document, by_item in list_items.items():
        items = parsed.documents[document].tree["items"]
        for item in sorted(by_item, reverse=True):  # from the end: earlier indexes stay valid
            items[item:item] = [wrap(manifest) for manifest in by_item[item]]
        applied.changed_documents.add(document)
    return applied
