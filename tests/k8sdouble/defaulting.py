"""The API server's defaulting of what the double stores, for the kinds where tests notice it.

resource.k8s.io claim specs, as kube-apiserver defaults them on every write (kubernetes
pkg/apis/resource/v1/defaults.go SetDefaults_ExactDeviceRequest and SetDefaults_DeviceSubRequest at
16913111deb1a4c4ff76f4ba7ffd9ebef397a303; the generated `tolerations[].operator` "Equal" in
pkg/apis/resource/v1beta2/zz_generated.defaults.go at 1f2f433f76dbc28d1fd6602f96e6dd871893601b;
v1beta1/defaults.go SetDefaults_DeviceRequest at 060ff21ecb445ef760239b390fb279fd88d3554e is the
same on its flat request, which the hub holds under `exactly`).  A client that compares what it wrote with what it reads back must allow for these.
"""
from __future__ import annotations

from typing import Any

from .kinds import ResourceKind


def _default_request(request: Any) -> None:
    if not isinstance(request, dict):
        return
    if not request.get("allocationMode"):
        request["allocationMode"] = "ExactCount"
    if request["allocationMode"] == "ExactCount" and not request.get("count"):
        request["count"] = 1
    for toleration in request.get("tolerations") or ():
        if isinstance(toleration, dict) and not toleration.get("operator"):
            toleration["operator"] = "Equal"


def _default_claim_spec(spec: Any) -> None:
    devices = spec.get("devices") if isinstance(spec, dict) else None
    for request in (devices.get("requests") if isinstance(devices, dict) else None) or ():
        if not isinstance(request, dict):
            continue
        if isinstance(request.get("exactly"), dict):
            _default_request(request["exactly"])
        for sub in request.get("firstAvailable") or ():
            _default_request(sub)


def apply_defaults(kind: ResourceKind, hub: dict) -> None:
    """Default ``hub`` (the storage version's shape) in place."""
    if kind.group != "resource.k8s.io":
        return
    spec = hub.get("spec")
    if kind.kind == "ResourceClaim":
        _default_claim_spec(spec)
    elif kind.kind == "ResourceClaimTemplate" and isinstance(spec, dict):
        _default_claim_spec(spec.get("spec"))
