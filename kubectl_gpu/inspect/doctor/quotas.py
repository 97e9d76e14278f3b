"""Namespaces whose GPU use is capped only by legacy quota entries while their pods hold DRA claims.

``requests.nvidia.com/gpu`` counts device-plugin requests; a claim is counted only under
``<class>.deviceclass.resource.k8s.io/devices`` (and, with DRAExtendedResource on, under the
``requests.`` entry of the extended resource its class names; kubectl_gpu.core.quota cites the
evaluators).  A namespace whose quota lacks the DRA entry while its claims hold devices of that
class is not capped for them: the finding gives the cap and the devices held.

Whether a class's claims count toward its extended resource is read from the DeviceClasses: the
API server drops ``extendedResourceName`` while DRAExtendedResource is off, so a live class that
carries it proves the gate on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubectl_gpu.core import QuotaTarget, plan_quota
from kubectl_gpu.inspect.doctor.inputs import DoctorInputs
from kubectl_gpu.inspect.doctor.report import CheckResult
from kubectl_gpu.inspect.findings import Finding, Severity

NAME = "quotas"
TITLE = "ResourceQuotas that cap legacy GPUs but not the DRA devices pods hold"


def _target(inputs: DoctorInputs) -> QuotaTarget:
    pairs = tuple(sorted((str(c["metadata"]["name"]), str(c["spec"]["extendedResourceName"]))
                         for c in inputs.device_classes
                         if (c.get("spec") or {}).get("extendedResourceName") and (c.get("metadata") or {}).get("name")))
    return QuotaTarget(extended_resource=bool(pairs), class_extended_resources=pairs)


def _request_classes(claim: Mapping[str, Any]) -> dict[str, str]:
    """Request (and ``request/subrequest``) name -> DeviceClass, for v1, v1beta2 and v1beta1 claims."""
    found: dict[str, str] = {}
    for request in (((claim.get("spec") or {}).get("devices") or {}).get("requests")) or ():
        name = str(request.get("name", ""))
        exactly = request.get("exactly") if isinstance(request.get("exactly"), Mapping) else request
        if exactly.get("deviceClassName"):
            found[name] = str(exactly["deviceClassName"])
        for sub in request.get("firstAvailable") or ():
            if sub.get("deviceClassName"):
                found[f"{name}/{sub.get('name', '')}"] = str(sub["deviceClassName"])
    return found


def held_devices(claims: tuple[Mapping[str, Any], ...]) -> dict[tuple[str, str], int]:
    """(namespace, DeviceClass) -> devices allocated to the namespace's claims."""
    held: dict[tuple[str, str], int] = {}
    for claim in claims:
        namespace = str((claim.get("metadata") or {}).get("namespace") or "")
        classes = _request_classes(claim)
        results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or ()
        for result in results:
            device_class = classes.get(str(result.get("request", "")))
            if device_class:
                held[(namespace, device_class)] = held.get((namespace, device_class), 0) + 1
    return held


def check_quotas(inputs: DoctorInputs) -> CheckResult:
    target = _target(inputs)
    held = held_devices(inputs.resource_claims)
    findings = []
    capped = 0
    for quota in inputs.resource_quotas:
        plan = plan_quota(quota, target=target)
        capped += plan.caps_gpus
        for entry in plan.entries:
            device_class = entry.device_class
            devices = held.get((plan.namespace, device_class), 0)
            counted = target.counted_as(device_class)
            if not devices or all(key == f"requests.{counted}" for key in entry.carries):
                continue  # nothing held, or the legacy entry counts these claims too (KEP-5004)
            hard = (quota.get("spec") or {}).get("hard") or {}
            caps = ", ".join(f"{key} at {hard[key]}" for key in entry.carries)
            findings.append(Finding(
                "quota-legacy-only", Severity.WARNING, f"resourcequota/{plan.namespace}/{plan.name}",
                f"ResourceQuota {plan.namespace}/{plan.name} caps {caps}, but the namespace's claims hold {devices} "
                f"device(s) of DeviceClass {device_class}, which it does not count",
                f"add {entry.key}: \"{entry.value}\" to its spec.hard (kubectl gpu migrate rewrites quota files; "
                "migrate --from-cluster --apply adds it)"))
    summary = f"{len(inputs.resource_quotas)} ResourceQuota(s), {capped} capping legacy GPUs"
    return CheckResult(NAME, TITLE, summary, tuple(findings))
