"""Volcano's Queues follow the migration: the DRA entries that cap what a Queue's legacy GPU
entries capped.

Volcano's capacity plugin (volcano-sh/volcano, from v1.15.0; read at commit
ed72c7c815a9fd547a787134676f73d42e9d049c, pkg/scheduler/plugins/capacity/capacity.go) counts a
queue's DRA devices only under reserved keys of its ``capability``, ``deserved`` and ``guarantee.resource``:
``deviceclass/<DeviceClass>`` (devices; ``DeviceClassCountPrefix``) and ``<dim>.deviceclass/<DeviceClass>``
(consumable capacity; ``DeviceClassCapacitySep``), with the plugin arguments
``capacity.DynamicResourceAllocationEnable`` (and ``capacity.DRAConsumableCapacityEnable`` for the
capacity keys).  A class the Queue does not name passes through uncapped (capacity_dra_test.go, "Case
4"), so ``nvidia.com/gpu: 8`` stops capping pods once they hold claims.  The proportion plugin, the
default, counts no DRA device at all.  Requests with ``firstAvailable`` or ``allocationMode: All``
are not counted (pkg/scheduler/cache/cache.go), which ``schedulers.py`` keeps the translation from
emitting for Volcano's pods; a claim shared by several pods is charged once.

Like ``quota.py``: the legacy entries stay (pods not yet migrated still use them), entries that map
to one DeviceClass add up, and what no entry can express is a WARNING.  Pure.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .families import MIG_PREFIX, family_of, mig_profile_of
from .json_patch import escape
from .model import TranslateOptions
from .notes import Note, Severity
from .quota import SHARE_RESOURCES, read_cap, target_class
from kubectl_gpu.dra.quantity import format_plain

VOLCANO_SCHEDULING_GROUP = "scheduling.volcano.sh"
# Where each of a Queue's ResourceLists lives under its spec: capability and deserved are lists
# themselves; guarantee is a struct whose list is `resource` (volcano-sh/apis
# pkg/apis/scheduling/v1beta1/types.go at ed2d962a, `Guarantee.Resource`, which capacity.go reads).
QUEUE_SECTIONS: tuple[tuple[str, ...], ...] = (("capability",), ("deserved",), ("guarantee", "resource"))
DEVICE_COUNT_PREFIX = "deviceclass/"  # capacity.go DeviceClassCountPrefix
CAPACITY_SEPARATOR = ".deviceclass/"  # capacity.go DeviceClassCapacitySep
DRA_QUOTA_RELEASE = "v1.15.0"
DRA_QUOTA_ARGUMENT = "capacity.DynamicResourceAllocationEnable"


def is_volcano_queue(obj: object) -> bool:
    return (isinstance(obj, Mapping) and obj.get("kind") == "Queue"
            and str(obj.get("apiVersion", "")).startswith(VOLCANO_SCHEDULING_GROUP + "/"))


def device_count_key(device_class: str) -> str:
    return DEVICE_COUNT_PREFIX + device_class


@dataclass(frozen=True)
class VolcanoQueueChange:
    operations: tuple[dict[str, Any], ...]  # RFC 6902, relative to the Queue
    notes: tuple[Note, ...]
    added: tuple[str, ...]  # "section: key: value" of each entry added


def volcano_queue_change(queue: Mapping[str, Any], options: TranslateOptions = TranslateOptions()) -> VolcanoQueueChange:
    name = str((queue.get("metadata") or {}).get("name") or "")
    spec = queue.get("spec") if isinstance(queue.get("spec"), Mapping) else {}
    label = f"Volcano Queue {name}"
    operations: list[dict[str, Any]] = []
    notes: list[Note] = []
    added: list[str] = []
    for path in QUEUE_SECTIONS:
        section = ".".join(path)
        entries = _at(spec, path)
        if not isinstance(entries, Mapping):
            continue
        sums: dict[str, Fraction] = {}
        carried: dict[str, list[str]] = {}
        for raw_key, raw_value in entries.items():
            resource = str(raw_key).strip()
            if family_of(resource) is None:
                continue
            amount, unread = read_cap(f"{label}: {section}.{resource}", resource, raw_value, options, "the Queue",
                                      "Volcano's queue admission refuses")
            if unread is not None:
                notes.append(unread)
                continue
            device_class = target_class(resource, options)
            role = SHARE_RESOURCES.get(resource)
            if role is not None:
                notes.append(Note(Severity.WARNING,
                                  f"{label}: {section}.{resource}: {raw_value} caps the {role} of shared GPUs; once "
                                  f"the pods hold claims only <capacity>{CAPACITY_SEPARATOR}{device_class} keys cap "
                                  f"what claims request (with {DRA_QUOTA_ARGUMENT} and "
                                  "capacity.DRAConsumableCapacityEnable), in the units of the driver's capacity, or "
                                  f"{device_count_key(device_class)} the number of GPUs: set one by hand",
                                  resource=resource))
                continue
            if resource.startswith(MIG_PREFIX):
                notes.append(Note(Severity.WARNING,
                                  f"{label}: {section}.{resource}: {raw_value} caps MIG profile "
                                  f"{mig_profile_of(resource)} alone, which no key can once its pods hold claims of "
                                  f"{device_class}: {device_count_key(device_class)} carries the MIG caps' sum",
                                  resource=resource))
            key = device_count_key(device_class)
            sums[key] = sums.get(key, Fraction(0)) + amount
            carried.setdefault(key, []).append(resource)
        for key, amount in sums.items():
            legacy = ", ".join(carried[key])
            if key in entries:
                notes.append(Note(Severity.INFO, f"{label}: {section}.{key} is already set ({entries[key]}); it caps "
                                                 f"the DRA devices of {legacy}"))
                continue
            if amount.denominator != 1:
                # Volcano reads the count with Quantity.Value(), which rounds up: a fraction would let one
                # more device in than the legacy cap did.
                notes.append(Note(Severity.WARNING,
                                  f"{label}: {section}: {legacy} adds up to {format_plain(amount)} GPUs; {key} is "
                                  f"{math.floor(amount)}, the whole devices it allows (Volcano rounds up a fraction)"))
                amount = Fraction(math.floor(amount))
            value = format_plain(amount)
            operations.append({"op": "add", "path": "/spec/" + "/".join([*path, escape(key)]), "value": value})
            added.append(f"{section}: {key}: {value}")
            notes.append(Note(Severity.INFO, f"{label}: added {section}.{key}: {value} (the DRA devices of {legacy}; "
                                             "the legacy entries stay for pods not yet migrated)"))
    if notes:
        notes.append(Note(Severity.INFO,
                          f"{label}: Volcano counts DRA devices against a Queue only in its capacity plugin "
                          f"({DRA_QUOTA_RELEASE} or newer, plugin argument {DRA_QUOTA_ARGUMENT}: true); the proportion "
                          "plugin, Volcano's default, counts none, so there these caps do not hold for claims"))
    return VolcanoQueueChange(tuple(operations), tuple(notes), tuple(added))


def _at(spec: Mapping[str, Any], path: tuple[str, ...]) -> object:
    node: object = spec
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node
