"""Conversion between the served versions of one kind, through the storage (hub) version.

Only resource.k8s.io has more than one version. v1beta2 has the v1 shape; v1beta1 puts the
``exactly`` fields flat on each request and wraps ResourceSlice device fields in ``basic``.
Like the API server, the double stores one object and answers at whatever version is asked.
"""
from __future__ import annotations

from typing import Any, Callable

from .kinds import ResourceKind

# The ExactDeviceRequest fields that v1beta1 keeps directly on the DeviceRequest.
EXACT_REQUEST_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess",
                        "tolerations", "capacity")

Converter = Callable[[dict], None]  # mutates a deep copy in place


def _requests(claim_spec: Any) -> list:
    if not isinstance(claim_spec, dict):
        return []
    devices = claim_spec.get("devices")
    requests = devices.get("requests") if isinstance(devices, dict) else None
    return [r for r in requests if isinstance(r, dict)] if isinstance(requests, list) else []


def _nest_exactly(claim_spec: Any) -> None:
    for request in _requests(claim_spec):
        exact = {f: request.pop(f) for f in EXACT_REQUEST_FIELDS if f in request}
        if exact:
            request["exactly"] = exact


def _lift(item: dict, key: str) -> None:
    """Move the fields of the mapping under ``key`` up into ``item`` (v1 -> v1beta1 shapes)."""
    nested = item.pop(key, None)
    if isinstance(nested, dict):
        item.update(nested)


def _flatten_exactly(claim_spec: Any) -> None:
    for request in _requests(claim_spec):
        _lift(request, "exactly")


def _claim_spec_of_template(obj: dict) -> Any:
    spec = obj.get("spec")
    return spec.get("spec") if isinstance(spec, dict) else None


def _slice_devices(obj: dict) -> list:
    spec = obj.get("spec")
    devices = spec.get("devices") if isinstance(spec, dict) else None
    return [d for d in devices if isinstance(d, dict)] if isinstance(devices, list) else []


def _wrap_basic(obj: dict) -> None:
    for device in _slice_devices(obj):
        rest = {k: device.pop(k) for k in list(device) if k != "name"}
        device["basic"] = rest


def _unwrap_basic(obj: dict) -> None:
    for device in _slice_devices(obj):
        _lift(device, "basic")


# (group, version, kind) -> (to hub, from hub). Missing entries convert by rewriting apiVersion only.
CONVERTERS: dict[tuple[str, str, str], tuple[Converter, Converter]] = {
    ("resource.k8s.io", "v1beta1", "ResourceClaim"): (
        lambda o: _nest_exactly(o.get("spec")), lambda o: _flatten_exactly(o.get("spec"))),
    ("resource.k8s.io", "v1beta1", "ResourceClaimTemplate"): (
        lambda o: _nest_exactly(_claim_spec_of_template(o)),
        lambda o: _flatten_exactly(_claim_spec_of_template(o))),
    ("resource.k8s.io", "v1beta1", "ResourceSlice"): (_unwrap_basic, _wrap_basic),
}


def clone(value: Any) -> Any:
    """Deep copy of JSON-shaped data; several times faster than copy.deepcopy (no memo, no dispatch)."""
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clone(v) for v in value]
    return value


def convert(obj: dict, kind: ResourceKind, from_version: str, to_version: str) -> dict:
    """A converted deep copy of ``obj``; never modifies it."""
    out = clone(obj)
    if from_version != to_version:
        hub = kind.storage_version
        if from_version != hub:
            CONVERTERS.get((kind.group, from_version, kind.kind), (_noop, _noop))[0](out)
        if to_version != hub:
            CONVERTERS.get((kind.group, to_version, kind.kind), (_noop, _noop))[1](out)
    out.pop("apiVersion", None)
    out.pop("kind", None)
    return {"apiVersion": kind.api_version(to_version), "kind": kind.kind, **out}


def _noop(_: dict) -> None:
    return None
