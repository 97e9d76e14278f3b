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
from .tree_patch import PatchError, apply_patch
from .plan import FilePlan
from .unshare import operation_pointers, unshare_paths


@dataclass
class AppliedFile:
    plan: FilePlan
    changed_documents: set[int] = field(default_factory=set)
    # New documents to write just before document i (plain manifests, in order).
    documents_before: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    # Documents whose patch did not apply (they are written back exactly as read), with why.
    failed_documents: dict[int, str] = field(default_factory=dict)


def apply_plan(plan: FilePlan) -> AppliedFile:
    parsed = plan.file
    wrap = to_round_trip if parsed.format is Format.YAML else copy.deepcopy
    applied = AppliedFile(plan)
    for template in plan.templates:
        index = template.obj.document
        if template.operations and index not in applied.failed_documents:
            document = parsed.documents[index]
            try:
                if parsed.format is Format.YAML:
                    unshare_paths(document.tree, operation_pointers(template.operations))
                apply_patch(document.tree, template.operations, wrap)
            except (PatchError, KeyError, TypeError, ValueError, AttributeError) as err:
                # The patch was proven on a plain copy; this is the round-trip tree disagreeing.
                applied.failed_documents[index] = (
                    f"line {document.line}: the rewrite could not be applied to this document "
                    f"({type(err).__name__}: {err}); it is left exactly as it was: please report this as a "
                    "kubectl-gpu bug with the document")
                applied.changed_documents.discard(index)
                continue
            applied.changed_documents.add(index)

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
