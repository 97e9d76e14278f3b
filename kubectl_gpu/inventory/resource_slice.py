"""An :class:`InventoryPlan` as the ResourceSlices its DRA driver (NVIDIA's or HAMi's) would publish (pure).

Shape of ``resource.k8s.io/v1`` (Kubernetes 1.34+): devices carry ``attributes``
(``{name: {string|int|ints|bool|version: value}}``) and ``capacity`` (``{name: {value: quantity,
requestPolicy?}}``) directly, with no ``basic:`` wrapper.  The driver publishes one pool named after
the node, through the kubelet plugin's ResourceSlice controller (k8s.io/dynamic-resource-allocation
v0.36.0 resourceslice/resourceslicecontroller.go, vendored by the driver at main 95932046): slice
``i`` of ``n`` is created with ``generateName`` ``<i in hex, at least 5 digits>-gpu.nvidia.com-<node>-``
(the API server appends a random suffix a preview cannot know), owned by the Node (controller
reference, the Node's UID), the pool's ``generation`` 1 on first publication and
``resourceSliceCount`` n.  HAMi's driver (Project-HAMi/k8s-dra-driver at ebeaad97) vendors v0.34.1
(34355f9d), whose controller names its slices ``<node>-<driver>-`` (resourceslicecontroller.go,
the owner's name before the driver's).
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from kubectl_gpu.core.constants import NVIDIA_DRIVER as DRIVER_NAME
from kubectl_gpu.dra import hami
from kubectl_gpu.dra.facts import NEWEST_DRA_API_VERSION
from kubectl_gpu.inventory.consumable_shares import DECIMAL_SI_CAPACITIES, RequestPolicy
from kubectl_gpu.inventory.device_model import CounterSet, InventoryPlan, PlannedSlice, PublishedDevice
from kubectl_gpu.inventory.quantity import binary_si, decimal_si

API_VERSION = NEWEST_DRA_API_VERSION
# Lists the devices NVML could not describe, so a reader of the preview knows it is partial.
UNREADABLE_DEVICES_ANNOTATION = "kubectl-gpu.io/unreadable-devices"
_INDEX_MIN_DIGITS = 5  # resourceSliceIndexMinLength
FIRST_GENERATION = 1  # a pool's first publication bumps generation 0 -> 1


def resource_slices(plan: InventoryPlan, node_name: str, node_uid: str | None = None) -> list[dict[str, Any]]:
    """Every slice of the node's pool, in the driver's order; owned by the Node when its UID is known."""
    count = len(plan.slices)
    return [_slice(plan, planned, index, count, node_name, node_uid) for index, planned in enumerate(plan.slices)]


def resource_slice(plan: InventoryPlan, node_name: str, node_uid: str | None = None) -> dict[str, Any]:
    """The pool's one slice (the driver's default announcement); ValueError when it has several."""
    slices = resource_slices(plan, node_name, node_uid)
    if len(slices) != 1:
        raise ValueError(f"the driver publishes {len(slices)} slices for this node: use resource_slices")
    return slices[0]


# Capacities a driver builds as resource.DecimalSI; all others are BinarySI.
_DECIMAL_CAPACITIES = DECIMAL_SI_CAPACITIES | {c.name for c in hami.CAPACITIES if not c.binary}


def generate_name(index: int, count: int, node_name: str, driver: str = DRIVER_NAME) -> str:
    if driver == hami.HAMI_DRIVER:
        return f"{node_name}-{driver}-"
    digits = max(_INDEX_MIN_DIGITS, len(f"{max(count - 1, 0):x}"))
    return f"{index:0{digits}x}-{driver}-{node_name}-"


def _slice(plan: InventoryPlan, planned: PlannedSlice, index: int, count: int, node_name: str,
           node_uid: str | None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"generateName": generate_name(index, count, node_name, plan.driver)}
    if node_uid:
        metadata["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": node_name,
                                        "uid": node_uid, "controller": True}]
    if plan.failures:
        metadata["annotations"] = {
            UNREADABLE_DEVICES_ANNOTATION: json.dumps(
                [{"device": failure.where, "uuid": failure.uuid, "error": failure.message}
                 for failure in plan.failures]
            )
        }
    spec: dict[str, Any] = {
        "driver": plan.driver,
        "nodeName": node_name,
        "pool": {"name": node_name, "generation": FIRST_GENERATION, "resourceSliceCount": count},
    }
    if planned.devices or not planned.shared_counters:
        spec["devices"] = [_device(device) for device in planned.devices]
    if planned.shared_counters:
        spec["sharedCounters"] = [_counter_set(c) for c in planned.shared_counters]
    return {"apiVersion": API_VERSION, "kind": "ResourceSlice", "metadata": metadata, "spec": spec}


def _quantity(name: str, amount: int) -> str:
    return decimal_si(amount) if name in _DECIMAL_CAPACITIES else binary_si(amount)


def _counter_set(counter_set: CounterSet, key: str = "name") -> dict[str, Any]:
    return {key: counter_set.name,
            "counters": {name: {"value": _quantity(name, value)} for name, value in counter_set.counters.items()}}


def _device(device: PublishedDevice) -> dict[str, Any]:
    published: dict[str, Any] = {
        "name": device.name,
        "attributes": {name: {kind: list(value) if isinstance(value, tuple) else value}
                       for name, (kind, value) in device.attributes.items()},
    }
    if device.capacity:
        published["capacity"] = published_capacity(device.capacity, device.request_policies)
    if device.consumes_counters:
        published["consumesCounters"] = [_counter_set(c, "counterSet") for c in device.consumes_counters]
    if device.allow_multiple_allocations:
        published["allowMultipleAllocations"] = True
    return published


def published_capacity(capacity: Mapping[str, int], policies: Mapping[str, RequestPolicy]) -> dict[str, Any]:
    """A device's ``capacity`` as the driver writes it: quantities, with a requestPolicy where set."""
    return {name: _capacity(name, amount, policies.get(name)) for name, amount in capacity.items()}


def _capacity(name: str, amount: int, policy: RequestPolicy | None) -> dict[str, Any]:
    capacity: dict[str, Any] = {"value": _quantity(name, amount)}
    if policy is not None:
        capacity["requestPolicy"] = {
            "default": _quantity(name, policy.default),
            "validRange": {"min": _quantity(name, policy.min), "max": _quantity(name, policy.max),
                           "step": _quantity(name, policy.step)},
        }
    return capacity
