"""Ray groups keep the GPU count KubeRay read from the limit that migrate turns into a claim.

KubeRay builds `ray start --num-gpus` from a group's `rayStartParams["num-gpus"]`, else from the Ray
container's (containers[0]) first GPU limit (ray-project/kuberay ray-operator/controllers/ray/common/
pod.go, addWellKnownAcceleratorResources and isGPUResourceKey), and the Ray autoscaler reads a group's
GPUs the same way (ray-project/ray python/ray/autoscaler/_private/kuberay/autoscaling_config.py,
_get_num_gpus).  A claim is neither, so a migrated group would look GPU-less: where the group does not
set `num-gpus`, the count KubeRay would have read is written there.

The webhook never needs this: KubeRay computes the start command and the autoscaler reads the RayCluster
before any pod reaches admission, and the RayCluster keeps its limits.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_gpu.core import escape_pointer
from kubectl_gpu.dra.quantity import QuantityError, parse_quantity

from .nodes import to_plain
from .tree_patch import PatchError, apply_patch, join_pointer, resolve

RAY_GROUP = "ray.io"
# Where each Ray kind keeps its RayClusterSpec (ray-project/kuberay ray-operator/apis/ray/v1).
_CLUSTER_SPECS = {"RayCluster": ("spec",), "RayService": ("spec", "rayClusterConfig"),
                  "RayJob": ("spec", "rayClusterSpec")}
NUM_GPUS = "num-gpus"
# isGPUResourceKey: a name ending in "gpu", or a device-plugin MIG name.
_MIG_NAME = re.compile(r"nvidia\.com/mig-\d+g\.\d+gb$")


@dataclass(frozen=True)
class RayGroup:
    pointer: str  # the group within the object: .../headGroupSpec or .../workerGroupSpecs/N
    name: str  # "head", or the worker group's groupName
    node: Mapping[str, Any]

    @property
    def template_pointer(self) -> str:
        return self.pointer + "/template"


def ray_groups(obj: Any) -> Iterator[RayGroup]:
    """The head and worker groups of a RayCluster, RayService or RayJob (none for anything else)."""
    if not isinstance(obj, Mapping) or not str(obj.get("apiVersion", "")).startswith(RAY_GROUP + "/"):
        return
    path = _CLUSTER_SPECS.get(str(obj.get("kind")))
    if path is None:
        return
    node: Any = obj
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    if not isinstance(node, Mapping):
        return
    head = node.get("headGroupSpec")
    if isinstance(head, Mapping):
        yield RayGroup(join_pointer([*path, "headGroupSpec"]), "head", head)
    workers = node.get("workerGroupSpecs")
    for index, worker in enumerate(workers if isinstance(workers, list) else []):
        if isinstance(worker, Mapping):
            yield RayGroup(join_pointer([*path, "workerGroupSpecs", index]),
                           str(worker.get("groupName") or f"workerGroupSpecs[{index}]"), worker)


def kuberay_gpu_count(template: Any) -> int | None:
    """The GPUs KubeRay reads from a group's pod template: the first limit of containers[0], in sorted
    key order, whose name is a GPU's and whose value is non-zero, rounded up (Quantity.Value())."""
    spec = template.get("spec") if isinstance(template, Mapping) else None
    containers = spec.get("containers") if isinstance(spec, Mapping) else None
    if not isinstance(containers, list) or not containers or not isinstance(containers[0], Mapping):
        return None
    resources = containers[0].get("resources")
    limits = resources.get("limits") if isinstance(resources, Mapping) else None
    if not isinstance(limits, Mapping):
        return None
    for key in sorted(str(k) for k in limits):
        if not (key.endswith("gpu") or _MIG_NAME.search(key)):
            continue
        try:
            amount = parse_quantity(limits[key])
        except QuantityError:
            continue
        if amount != 0:
            return math.ceil(amount)
    return None


def _sets_gpus(group: Mapping[str, Any]) -> bool:
    """The group states its GPUs itself: num-gpus in rayStartParams, or a GPU in the group's own
    `resources` (KubeRay's updateRayStartParamsResources writes num-gpus from it)."""
    params = group.get("rayStartParams")
    if isinstance(params, Mapping) and NUM_GPUS in params:
        return True
    resources = group.get("resources")
    return isinstance(resources, Mapping) and any(str(k).lower().endswith("gpu") for k in resources)


@dataclass(frozen=True)
class KeptCount:
    group: RayGroup
    count: int
    operation: dict[str, Any]  # relative to the object

    @property
    def message(self) -> str:
        return (f"Ray group {self.group.name}: rayStartParams {NUM_GPUS}: \"{self.count}\" added, the GPU count "
                "KubeRay and the Ray autoscaler read from the GPU limit this migration replaced with a claim")


def keep_gpu_count(obj: Mapping[str, Any], group: RayGroup, template_operations: list[dict[str, Any]]
                   ) -> KeptCount | str | None:
    """What keeps `group`'s GPU count once `template_operations` (relative to the object) are applied:
    the operation to add, a message when the count cannot be kept, or None when nothing is needed."""
    if _sets_gpus(group.node):
        return None
    before = kuberay_gpu_count(group.node.get("template"))
    if before is None:
        return None
    patched = {"template": to_plain(resolve(obj, group.template_pointer))}
    prefix = group.template_pointer
    try:
        apply_patch(patched, [{**op, "path": "/template" + op["path"][len(prefix):]}
                              for op in template_operations if str(op.get("path", "")).startswith(prefix + "/")])
    except PatchError:
        return None
    if kuberay_gpu_count(patched["template"]) is not None:
        return None
    params = group.node.get("rayStartParams")
    if params is None:
        operation = {"op": "add", "path": group.pointer + "/rayStartParams", "value": {NUM_GPUS: str(before)}}
    elif isinstance(params, Mapping):
        operation = {"op": "add", "path": f"{group.pointer}/rayStartParams/{escape_pointer(NUM_GPUS)}",
                     "value": str(before)}
    else:
        return (f"Ray group {group.name}: rayStartParams is not a mapping, so {NUM_GPUS}: \"{before}\" could not be "
                "added; set it, or KubeRay and the Ray autoscaler see no GPU in this group")
    return KeptCount(group, before, operation)
