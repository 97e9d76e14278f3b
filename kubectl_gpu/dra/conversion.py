"""A resource.k8s.io object written in a version the target cluster no longer serves (v1beta1 from
Kubernetes 1.38), rewritten as the API server converts it to a version it serves.

What changes is upstream's conversion (kubernetes/kubernetes pkg/apis/resource/v1beta1/conversion.go
at 2e0908106e4420a601e50d6edfd41475de87a3e1, ``Convert_v1beta1_DeviceRequest_To_resource_DeviceRequest``):
a v1beta1 request keeps its fields flat; in v1beta2 and v1 the fields of a request for exactly the
devices it names (:data:`EXACT_REQUEST_FIELDS`) move under ``exactly`` when any of them is set, and
``name`` and ``firstAvailable`` (whose subrequests have one shape in every version) stay where they
are.  A DeviceClass, a claim's constraints and configs, and a claim's status have one shape in these
versions: only ``apiVersion`` changes.  (ResourceSlices, whose devices v1beta1 wraps in ``basic``,
are the driver's to write and are not rewritten.)

The rewrite is a JSON Patch (paths relative to the object) that moves the nodes it does not change,
so what a manifest's author wrote under them stays as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .facts import DRA_GROUP, READ_FLAT_VERSIONS, READ_WRAPPED_VERSIONS

# The kinds of a manifest whose apiVersion is resource.k8s.io's and that a person writes; where each
# keeps its requests (None: no requests).
CONVERTED_KINDS: Mapping[str, tuple[str, ...] | None] = {
    "ResourceClaim": ("spec", "devices", "requests"),
    "ResourceClaimTemplate": ("spec", "spec", "devices", "requests"),
    "DeviceClass": None,
}
# hasAnyMainRequestFieldsSet (conversion.go): the v1beta1 request fields that v1beta2/v1 keep under `exactly`.
EXACT_REQUEST_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations",
                        "capacity")


@dataclass(frozen=True)
class Conversion:
    """The patch that rewrites one object to ``target`` (``resource.k8s.io/v1``)."""

    source: str  # "resource.k8s.io/v1beta1"
    target: str
    operations: tuple[dict[str, Any], ...]
    requests_wrapped: int  # requests whose fields moved under `exactly`


def dra_version_of(obj: Mapping[str, Any]) -> str | None:
    """The version part of a resource.k8s.io object's apiVersion, for a kind kubectl-gpu rewrites, else None."""
    if obj.get("kind") not in CONVERTED_KINDS:
        return None
    group, slash, version = str(obj.get("apiVersion", "")).partition("/")
    return version if slash and group == DRA_GROUP else None


def conversion_patch(obj: Mapping[str, Any], target_version: str) -> Conversion | None:
    """The patch that rewrites ``obj`` (a ResourceClaim, ResourceClaimTemplate or DeviceClass of
    resource.k8s.io) to ``target_version``; None when it is no such object, is written in that
    version already, or is in a version whose shape kubectl-gpu does not know."""
    version = dra_version_of(obj)
    known = READ_FLAT_VERSIONS | READ_WRAPPED_VERSIONS
    if version is None or version == target_version or version not in known or target_version not in known:
        return None
    if version in READ_WRAPPED_VERSIONS and target_version in READ_FLAT_VERSIONS:
        return None  # to an older shape: never needed (every release serves a wrapped version from 1.33)
    source, target = f"{DRA_GROUP}/{version}", f"{DRA_GROUP}/{target_version}"
    operations: list[dict[str, Any]] = [{"op": "replace", "path": "/apiVersion", "value": target}]
    wrapped = 0
    where = CONVERTED_KINDS[str(obj["kind"])]
    if where is not None and version in READ_FLAT_VERSIONS and target_version in READ_WRAPPED_VERSIONS:
        requests = _at(obj, where)
        for index, request in enumerate(requests if isinstance(requests, list) else ()):
            moved = [f for f in EXACT_REQUEST_FIELDS if isinstance(request, Mapping) and f in request]
            if not moved or "exactly" in request:
                # No v1beta1 request has `exactly`: one that does was written half by hand, and adding
                # an empty one would replace it; left as written, the API server names the mix.
                continue
            base = "/" + "/".join([*where, str(index)])
            operations.append({"op": "add", "path": f"{base}/exactly", "value": {}})
            operations.extend({"op": "move", "from": f"{base}/{f}", "path": f"{base}/exactly/{f}"} for f in moved)
            wrapped += 1
    return Conversion(source, target, tuple(operations), wrapped)


def _at(obj: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = obj
    for key in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node
