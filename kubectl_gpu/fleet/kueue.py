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

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from kubectl_gpu.core import QuantityError, TranslateOptions, family_of, format_plain, mig_profile_of, parse_quantity

KUEUE_GROUP = "kueue.x-k8s.io"
CONFIGURATION_API_VERSION = "config.kueue.x-k8s.io/v1beta2"
# Kueue releases: deviceClassMappings exists from (alpha, gate off) and is on by default from.
DRA_ALPHA_RELEASE, DRA_DEFAULT_RELEASE = "v0.14", "v0.18"
GPU_RESOURCE = "nvidia.com/gpu"


def is_cluster_queue(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "ClusterQueue" and str(obj.get("apiVersion", "")).startswith(KUEUE_GROUP + "/")


def mig_quota_resource(options: TranslateOptions) -> str:
    """The quota resource MIG claims are counted under: one for every profile (their class is one)."""
    return f"{options.mig_device_class}/devices"


@dataclass(frozen=True)
class KueuePlan:
    mappings: tuple[dict[str, Any], ...]  # resources.deviceClassMappings entries
    cluster_queues: tuple[dict[str, Any], ...]  # ClusterQueues that change, whole, as they should become
    notes: tuple[str, ...]

    @property
    def configuration(self) -> dict[str, Any] | None:
        """The part of Kueue's manager Configuration to merge in (restart the manager after)."""
        if not self.mappings:
            return None
        return {"apiVersion": CONFIGURATION_API_VERSION, "kind": "Configuration",
                "resources": {"deviceClassMappings": [dict(m) for m in self.mappings]}}

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"notes": list(self.notes)}
        if self.configuration is not None:
            out["configuration"] = self.configuration
        if self.cluster_queues:
            out["clusterQueues"] = [copy.deepcopy(q) for q in self.cluster_queues]
        return out


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _amount(value: Any) -> Fraction:
    try:
        return parse_quantity(value)
    except QuantityError:
        return Fraction(0)


def plan_kueue(cluster_queues: Sequence[Mapping[str, Any]], options: TranslateOptions = TranslateOptions()) -> KueuePlan:
    notes: list[str] = []
    changed: list[dict[str, Any]] = []
    covers_gpu: list[str] = []
    covers_mig = False
    mig_resource = mig_quota_resource(options)
    for queue in cluster_queues:
        groups = (queue.get("spec") or {}).get("resourceGroups") or ()
        patched = copy.deepcopy(dict(queue))
        touched = False
        for index, group in enumerate(groups):
            covered = [str(r) for r in group.get("coveredResources") or ()]
            if GPU_RESOURCE in covered:
                covers_gpu.append(_name(queue))
            migs = [r for r in covered if family_of(r) == "mig" and mig_profile_of(r)]
            if not migs:
                continue
            covers_mig = True
            if mig_resource in covered:
                continue
            target = patched["spec"]["resourceGroups"][index]
            target["coveredResources"] = [*covered, mig_resource]
            for flavor in target.get("flavors") or ():
                resources = flavor.get("resources") or []
                total = sum((_amount(r.get("nominalQuota")) for r in resources if r.get("name") in migs), Fraction(0))
                flavor["resources"] = [*resources, {"name": mig_resource, "nominalQuota": format_plain(total)}]
                notes.append(f"ClusterQueue {_name(queue)}, flavor {flavor.get('name')}: add {mig_resource} "
                             f"{format_plain(total)} (the sum of {', '.join(migs)}): MIG claims of every profile "
                             f"count there, so no quota can hold one profile alone any more")
            touched = True
        if touched:
            patched.get("metadata", {}).pop("resourceVersion", None)
            changed.append(patched)
    mappings: list[dict[str, Any]] = []
    if covers_gpu:
        mappings.append({"name": GPU_RESOURCE, "deviceClassNames": [options.gpu_device_class]})
        notes.append(f"ClusterQueue(s) {', '.join(dict.fromkeys(covers_gpu))}: {GPU_RESOURCE} counts claims of "
                     f"DeviceClass {options.gpu_device_class} too once Kueue's Configuration maps it there "
                     "(no change to the queues: one pool for device-plugin pods and claims)")
    if covers_mig:
        mappings.append({"name": mig_resource, "deviceClassNames": [options.mig_device_class]})
    if mappings:
        notes.append(f"Kueue {DRA_DEFAULT_RELEASE} or newer counts claims through resources.deviceClassMappings "
                     f"({DRA_ALPHA_RELEASE}-{DRA_DEFAULT_RELEASE}: alpha, feature gate DynamicResourceAllocation); "
                     "merge the configuration below into Kueue's and restart kueue-controller-manager")
        notes.append("Kueue does not admit firstAvailable requests or allocationMode All (pkg/dra/claims.go): "
                     "migrate GPU shares for Kueue-managed workloads without DRAPrioritizedList")
    return KueuePlan(tuple(mappings), tuple(changed), tuple(notes))
