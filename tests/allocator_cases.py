"""Shared by the allocator's tests: resource.k8s.io/v1 objects read into the allocator's model."""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Mapping

from kubectl_gpu.allocator import (
    AllocatedState,
    Claim,
    ClaimConfig,
    Constraint,
    DeviceClass,
    Features,
    Node,
    Request,
    SubRequest,
    Toleration,
)
from kubectl_gpu.dra.devices import read_slice
from kubectl_gpu.dra.values import Quantity

# Upstream's Features fields -> ours.
FEATURE_NAMES = {
    "AdminAccess": "admin_access", "ConsumableCapacity": "consumable_capacity",
    "DeviceBindingAndStatus": "device_binding_and_status", "DeviceTaints": "device_taints",
    "ListTypeAttributes": "list_type_attributes", "PartitionableDevices": "partitionable_devices",
    "PrioritizedList": "prioritized_list",
}


def features(names: list[str]) -> Features:
    return Features(**{FEATURE_NAMES[n]: True for n in names})


def _sub(raw: Mapping[str, Any], name: str) -> SubRequest:
    capacity = raw.get("capacity")
    return SubRequest(
        name=name,
        device_class=raw.get("deviceClassName", ""),
        selectors=tuple((s.get("cel") or {}).get("expression") for s in raw.get("selectors") or ()),
        allocation_mode=raw.get("allocationMode") or "ExactCount",
        count=raw.get("count", 1) if (raw.get("allocationMode") or "ExactCount") == "ExactCount" else 0,
        admin_access=raw.get("adminAccess"),
        tolerations=tuple(Toleration(t.get("key", ""), t.get("operator", "Equal"), t.get("value", ""), t.get("effect", ""))
                          for t in raw.get("tolerations") or ()),
        capacity=None if capacity is None else {k: Quantity.read(v).value for k, v in (capacity.get("requests") or {}).items()},
    )


def claim(obj: Mapping[str, Any]) -> Claim:
    meta = obj["metadata"]
    devices = obj["spec"].get("devices") or {}
    requests = []
    for raw in devices.get("requests") or ():
        if raw.get("firstAvailable"):
            requests.append(Request(raw["name"], first_available=tuple(_sub(s, s["name"]) for s in raw["firstAvailable"])))
        else:
            requests.append(Request(raw["name"], exactly=_sub(raw.get("exactly") or {}, raw["name"])))
    constraints = tuple(Constraint(tuple(c.get("requests") or ()), c.get("matchAttribute"), c.get("distinctAttribute"))
                        for c in devices.get("constraints") or ())
    name = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
    config = tuple(ClaimConfig(c.get("deviceConfiguration") or {}, tuple(c.get("requests") or ()))
                   for c in devices.get("config") or ())
    return Claim(name, tuple(requests), constraints, config)


def device_class(obj: Mapping[str, Any]) -> DeviceClass:
    return DeviceClass(obj["metadata"]["name"],
                       tuple((s.get("cel") or {}).get("expression", "") for s in obj["spec"].get("selectors") or ()),
                       tuple(c.get("deviceConfiguration") or {} for c in obj["spec"].get("config") or ()))


def node(obj: Mapping[str, Any] | None) -> Node:
    if obj is None:
        return Node("node-1", {"region": "region-1", "planet": "earth"})
    return Node(obj["metadata"]["name"], obj["metadata"].get("labels") or {})


def allocated_state(case: Mapping[str, Any]) -> AllocatedState:
    shared = frozenset(i.rsplit("/", 1)[0] for i in case["allocatedSharedDeviceIDs"])
    capacity = {}
    for device_id, consumed in case["allocatedCapacityDevices"].items():
        driver = device_id.split("/", 1)[0]
        capacity[device_id] = {(k if "/" in k else f"{driver}/{k}"): Quantity.read(v).value for k, v in consumed.items()}
    return AllocatedState(frozenset(case["allocatedDevices"]), shared, capacity)


def slices(case: Mapping[str, Any]) -> list:
    return [read_slice(s) for s in case["slices"]]


def quantity_value(text: Any) -> Fraction:
    return Quantity.read(text).value
