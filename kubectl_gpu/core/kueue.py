"""Kueue's quota follows the migration: what its configuration and ClusterQueues need so that GPUs
held through claims are counted where ``nvidia.com/gpu`` was.

Kueue counts a ResourceClaimTemplate's devices only through ``resources.deviceClassMappings`` in
its manager Configuration (kubernetes-sigs/kueue, commit ff69552e79ad21652c36caa97038382e55625cf7:
site/content/en/docs/tasks/manage/setup_dra.md, apis/config/v1beta2/configuration_types.go
``DeviceClassMapping``, pkg/config/validation.go): each mapping names a quota resource and the
DeviceClasses whose requests count ``count`` units of it.  The feature is alpha in Kueue v0.14
(gate ``DynamicResourceAllocation``, off), beta and on by default from v0.18 (gate renamed
``KueueDRAIntegration``); the Configuration is read at start-up, so the manager must be restarted.
A claim of a class no mapping names makes its Workload inadmissible.

Mapping the GPU class to ``nvidia.com/gpu`` itself keeps one pool: a ClusterQueue's
``nvidia.com/gpu`` quota counts device-plugin pods and claims alike, during the migration and
after, with no change to the queue (``pkg/dra/extended_resources.go`` charges an extended
resource backed by a mapped class under the mapping's name too).  MIG profiles cannot keep one
quota each: claims of every profile share the MIG class, so its mapping gets a name of its own and
each flavor covering MIG resources gets it with the sum of their quotas.  Kueue refuses
``firstAvailable`` requests and ``allocationMode: All`` (pkg/dra/claims.go: "FirstAvailable device
selection is not supported"), so those shapes must not be emitted for workloads it admits.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from kubectl_gpu.dra.facts import DEVICE_PLUGIN_GPU

from .families import family_of, mig_profile_of
from .model import TranslateOptions
from .notes import Note, Severity
from kubectl_gpu.dra.quantity import QuantityError, format_plain, parse_quantity

KUEUE_GROUP = "kueue.x-k8s.io"
CONFIGURATION_API_VERSION = "config.kueue.x-k8s.io/v1beta2"
# Kueue releases: deviceClassMappings exists from (alpha, gate off) and is on by default from.
DRA_ALPHA_RELEASE, DRA_DEFAULT_RELEASE = "v0.14", "v0.18"


def is_cluster_queue(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "ClusterQueue" and str(obj.get("apiVersion", "")).startswith(KUEUE_GROUP + "/")


def mig_quota_resource(options: TranslateOptions) -> str:
    """The quota resource MIG claims are counted under: one for every profile (their class is one)."""
    return f"{options.mig_device_class}/devices"


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _amount(value: Any) -> Fraction:
    try:
        return parse_quantity(value)
    except QuantityError:
        return Fraction(0)


@dataclass(frozen=True)
class QueueChange:
    """One ClusterQueue: the JSON patch (relative to it) that adds its MIG device count, what to say,
    and the deviceClassMappings it relies on."""

    operations: tuple[dict[str, Any], ...]
    notes: tuple[Note, ...]
    mappings: tuple[dict[str, Any], ...]
    covers_gpu: bool


def queue_change(queue: Mapping[str, Any], options: TranslateOptions = TranslateOptions()) -> QueueChange:
    notes: list[Note] = []
    operations: list[dict[str, Any]] = []
    covers_gpu = covers_mig = False
    mig_resource = mig_quota_resource(options)
    for index, group in enumerate((queue.get("spec") or {}).get("resourceGroups") or ()):
        covered = [str(r) for r in group.get("coveredResources") or ()]
        covers_gpu = covers_gpu or DEVICE_PLUGIN_GPU in covered
        migs = [r for r in covered if family_of(r) == "mig" and mig_profile_of(r)]
        if not migs:
            continue
        covers_mig = True
        if mig_resource in covered:
            continue
        where = f"/spec/resourceGroups/{index}"
        operations.append({"op": "add", "path": f"{where}/coveredResources/-", "value": mig_resource})
        for position, flavor in enumerate(group.get("flavors") or ()):
            resources = flavor.get("resources") or []
            total = format_plain(sum((_amount(r.get("nominalQuota")) for r in resources if r.get("name") in migs),
                                     Fraction(0)))
            operations.append({"op": "add", "path": f"{where}/flavors/{position}/resources/-",
                               "value": {"name": mig_resource, "nominalQuota": total}})
            notes.append(Note(Severity.WARNING,
                              f"ClusterQueue {_name(queue)}, flavor {flavor.get('name')}: add {mig_resource} {total} "
                              f"(the sum of {', '.join(migs)}): MIG claims of every profile count there, so no quota "
                              "can hold one profile alone any more"))
    mappings = []
    if covers_gpu:
        mappings.append({"name": DEVICE_PLUGIN_GPU, "deviceClassNames": [options.gpu_device_class]})
        notes.append(Note(Severity.INFO,
                          f"ClusterQueue {_name(queue)}: {DEVICE_PLUGIN_GPU} counts claims of DeviceClass "
                          f"{options.gpu_device_class} too once Kueue's Configuration maps it there (no change to "
                          "the queue: one pool for device-plugin pods and claims)"))
    if covers_mig:
        mappings.append({"name": mig_resource, "deviceClassNames": [options.mig_device_class]})
    return QueueChange(tuple(operations), tuple(notes), tuple(mappings), covers_gpu)


def merged_mappings(changes: Sequence[QueueChange]) -> tuple[dict[str, Any], ...]:
    found: dict[str, dict[str, Any]] = {}
    for change in changes:
        for mapping in change.mappings:
            found.setdefault(mapping["name"], mapping)
    return tuple(found.values())


def kueue_notes(mappings: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """What to do with the mappings, and what Kueue refuses."""
    if not mappings:
        return ()
    return (f"Kueue {DRA_DEFAULT_RELEASE} or newer counts claims through resources.deviceClassMappings "
            f"({DRA_ALPHA_RELEASE}-{DRA_DEFAULT_RELEASE}: alpha, feature gate DynamicResourceAllocation); merge the "
            "configuration into Kueue's and restart kueue-controller-manager",
            "Kueue does not admit firstAvailable requests or allocationMode All (pkg/dra/claims.go): migrate GPU "
            "shares for Kueue-managed workloads without DRAPrioritizedList")


def kueue_configuration(mappings: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The part of Kueue's manager Configuration to merge in (restart the manager after)."""
    if not mappings:
        return None
    return {"apiVersion": CONFIGURATION_API_VERSION, "kind": "Configuration",
            "resources": {"deviceClassMappings": [dict(m) for m in mappings]}}


