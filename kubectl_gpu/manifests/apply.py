"""Carry out a plan on one parsed document, in place: patches first (their paths count List
items as they were read), then new List items; standalone new documents are handed back for
the renderer to place before it.

A document is rewritten whole or not at all: a YAML document whose patch does not apply is
written back from its text; a JSON document is patched on a copy that replaces it only when
every operation applied.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .loader import Format, ParsedDocument
from .nodes import to_round_trip
from .text_edit import rewrite_text
from .plan import Emission, QuotaChange, TemplatePlan, VersionChange
from .tree_patch import PatchError, apply_patch
from .yamlio import Indentation
from .unshare import operation_pointers, unshare_paths


@dataclass
class AppliedDocument:
    changed: bool = False
    # New documents to write just before this one (plain manifests, in order).
    documents_before: list[dict[str, Any]] = field(default_factory=list)
    # Why the patch did not apply (the document is written back exactly as read), or None.
    failed: str | None = None
    # The document's new text, when it was rewritten as edits of its text (text_edit.py).
    text: str | None = None


def apply_document(
    document: ParsedDocument,
    file_format: Format,
    templates: Sequence[TemplatePlan | QuotaChange | VersionChange],
    emissions: Sequence[Emission],
) -> AppliedDocument:
    """Apply `templates` (this document's pod templates, ResourceQuotas and DRA objects rewritten to
    a served version) and place `emissions`
    (the DRA objects its objects need first) on `document.tree`."""
    applied = AppliedDocument()
    operations = [operation for template in templates for operation in template.operations]
    if operations:
        tree = document.tree if file_format is Format.YAML else copy.deepcopy(document.tree)
        try:
            if file_format is Format.YAML:
                for template in templates:
                    unshare_paths(tree, operation_pointers(template.operations))
                    apply_patch(tree, template.operations, to_round_trip)
            else:
                apply_patch(tree, operations, copy.deepcopy)
        except (PatchError, KeyError, TypeError, ValueError, AttributeError) as err:
            # The patch was proven on a plain copy; this is the document's tree disagreeing.
            applied.failed = (
                f"line {document.line}: the rewrite could not be applied to this document "
                f"({type(err).__name__}: {err}); it is left exactly as it was: please report this as a "
                "kubectl-gpu bug with the document")
        else:
            document.tree = tree
            applied.changed = True

    list_items: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for emission in emissions:
        # Into a List that could not be rewritten, a new object goes before it instead: it may be
        # the one copy a later document relies on.
        if emission.before.item is None or applied.failed is not None:
            applied.documents_before.append(emission.manifest)
        else:
            list_items[emission.before.item].append(emission.manifest)
    if list_items:
        wrap = to_round_trip if file_format is Format.YAML else copy.deepcopy
        items = document.tree["items"]
        for item in sorted(list_items, reverse=True):  # from the end: earlier indexes stay valid
            items[item:item] = [wrap(manifest) for manifest in list_items[item]]
        applied.changed = True
    return applied


def apply_as_text(document: ParsedDocument, changes: Sequence[TemplatePlan | QuotaChange | VersionChange],
                  emissions: Sequence[Emission], indentation: Indentation, newline: str) -> AppliedDocument | None:
    """apply_document for a document fast_read took: the patch applied to a copy of its plain tree
    and written as edits of its text.  None when that cannot be done faithfully (the caller then
    reads it with ruamel and applies the same plan there)."""
    assert document.fast is not None and document.chunk is not None
    if any(emission.before.item is not None for emission in emissions):
        return None  # new items inside a List: ruamel's tree places them
    applied = AppliedDocument(documents_before=[emission.manifest for emission in emissions])
    operations = [operation for change in changes for operation in change.operations]
    if not operations:
        return applied
    if any(operation.get("op") in ("move", "copy") for operation in operations):
        return None  # a moved value takes its comments along (tree_patch), which only ruamel's tree holds
    tree, nodes = document.fast.twin()
    try:
        apply_patch(tree, operations, copy.deepcopy)
    except (PatchError, KeyError, TypeError, ValueError, AttributeError):
        return None  # apply_document says what went wrong
    text = rewrite_text(document.chunk.body, document.fast.root, nodes, tree, indentation, newline)
    if text is None:
        return None
    applied.text, applied.changed = text, True
    return applied
