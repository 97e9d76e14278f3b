"""Consumable capacity (KEP-5075) as the allocator checks it (upstream consumable_capacity.go,
CmpRequestOverCapacity and GetConsumedCapacityFromRequest).

A request consumes every capacity of the device: what it asks for, rounded up by the capacity's
requestPolicy, or the policy's default, or the whole capacity when it names none.  The sum over
what is allocated, what this search is allocating and the new request must stay within the value.
"""

from __future__ import annotations

from fractions import Fraction
from math import ceil
from typing import Any, Mapping

from kubectl_gpu.dra.devices import Device
from kubectl_gpu.dra.values import Quantity

Consumed = dict[str, Fraction]  # qualified capacity name ("driver/name" for the driver's own) -> amount


def _qualified(domain: str, name: str) -> str:
    return f"{domain}/{name}"


def normalize(name: str, driver: str) -> str:
    """A capacity name as the device's domain map holds it: unqualified names are the driver's."""
    return name if "/" in name else f"{driver}/{name}"


def _policy(device: Device, domain: str, name: str) -> Mapping[str, Any] | None:
    policies = device.request_policies
    if not policies:
        return None
    if domain == device.driver:
        found = policies.get(name) or policies.get(f"{domain}/{name}")
    else:
        found = policies.get(f"{domain}/{name}")
    return found


def _read(value: Any) -> Fraction:
    return Quantity.read(value).value


def _consumed(requested: Fraction | None, value: Fraction, policy: Mapping[str, Any] | None) -> Fraction:
    """calculateConsumedCapacity."""
    if requested is None:
        if policy and policy.get("default") is not None:
            return _read(policy["default"])
        return value
    if not policy:
        return requested
    valid_range = policy.get("validRange")
    if valid_range and valid_range.get("min") is not None:
        minimum = _read(valid_range["min"])
        if requested < minimum:
            return minimum
        if valid_range.get("step") is None:
            return requested
        step = _read(valid_range["step"])
        # resource.Quantity.Value(): rounded up to an integer, as upstream computes the steps
        added = ceil(requested) - ceil(minimum)
        steps = -(-added // ceil(step))
        return ceil(minimum) + ceil(step) * steps
    valid_values = policy.get("validValues")
    if valid_values is not None:
        for option in valid_values:
            if requested <= _read(option):
                return _read(option)
    return requested


def _violates(consumed: Fraction, policy: Mapping[str, Any] | None) -> bool:
    if not policy:
        return False
    if policy.get("default") is not None and consumed == _read(policy["default"]):
        return False
    valid_range = policy.get("validRange")
    if valid_range:
        if valid_range.get("max") is not None and consumed > _read(valid_range["max"]):
            return True
        if valid_range.get("step") is not None:
            return (ceil(consumed) - ceil(_read(valid_range.get("min") or 0))) % ceil(_read(valid_range["step"])) != 0
        return False
    valid_values = policy.get("validValues")
    if valid_values:
        return all(consumed != _read(v) for v in valid_values)
    return False


def fits(device: Device, requests: Mapping[str, Fraction] | None, allocated: Mapping[str, Fraction] | None,
         allocating: Mapping[str, Fraction] | None) -> bool | None:
    """CmpRequestOverCapacity: True when the request fits the device's remaining capacity, False
    when it does not, None when it names a capacity the device does not have (upstream's error,
    which skips the device)."""
    wanted = {normalize(k, device.driver): v for k, v in (requests or {}).items()}
    capacities = {_qualified(domain, name): (domain, name, q.value)
                  for domain, names in device.capacity.items() for name, q in names.items()}
    if any(name not in capacities for name in wanted):
        return None
    for key, (domain, name, value) in capacities.items():
        policy = _policy(device, domain, name)
        consumed = _consumed(wanted.get(key), value, policy)
        if _violates(consumed, policy):
            return False
        total = consumed + (allocated or {}).get(key, 0) + (allocating or {}).get(key, 0)
        if total > value:
            return False
    return True


def consumed_by(device: Device, requests: Mapping[str, Fraction] | None) -> Consumed:
    """GetConsumedCapacityFromRequest: what the request consumes of each of the device's capacities."""
    wanted = {normalize(k, device.driver): v for k, v in (requests or {}).items()}
    return {
        _qualified(domain, name): _consumed(wanted.get(_qualified(domain, name)), q.value, _policy(device, domain, name))
        for domain, names in device.capacity.items() for name, q in names.items()
    }
