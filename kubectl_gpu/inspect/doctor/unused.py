"""ResourceClaimTemplates (and shared ResourceClaims) kubectl-gpu created that nothing uses any
more: left behind when a workload was deleted or rewritten."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from kubectl_gpu.core.constants import MANAGED_BY_LABEL, MANAGED_BY_VALUE
from kubectl_gpu.inspect.doctor.inputs import DoctorInputs
from kubectl_gpu.inspect.doctor.report import CheckResult
from kubectl_gpu.inspect.findings import Finding, Severity

NAME = "unused-templates"
TITLE = "kubectl-gpu templates and claims still used by a pod or workload"


def check_unused(inputs: DoctorInputs) -> CheckResult:
    templates_used: set[tuple[str, str]] = set()
    claims_used: set[tuple[str, str]] = set()
    for obj in (*inputs.pods, *inputs.workloads):
        namespace = str((obj.get("metadata") or {}).get("namespace") or "")
        for entry in _pod_claim_entries(obj):
            if entry.get("resourceClaimTemplateName"):
                templates_used.add((namespace, str(entry["resourceClaimTemplateName"])))
            if entry.get("resourceClaimName"):
                claims_used.add((namespace, str(entry["resourceClaimName"])))
    findings = []
    managed = 0
    for kind, objects, used in (("ResourceClaimTemplate", inputs.resource_claim_templates, templates_used),
                                ("ResourceClaim", inputs.resource_claims, claims_used)):
        for obj in objects:
            metadata = obj.get("metadata") or {}
            if (metadata.get("labels") or {}).get(MANAGED_BY_LABEL) != MANAGED_BY_VALUE:
                continue
            managed += 1
            namespace, name = str(metadata.get("namespace") or ""), str(metadata.get("name") or "")
            if (namespace, name) in used or _reserved(obj):
                continue
            findings.append(Finding(
                "unused-managed-object", Severity.WARNING,
                f"{kind.lower()}/{namespace}/{name}",
                f"{kind} {namespace}/{name} was created by kubectl-gpu but no pod or workload in "
                f"{namespace} refers to it",
                f"delete it if its workload is gone: kubectl -n {namespace} delete "
                f"{kind.lower()} {name}"))
    summary = f"{managed} object(s) created by kubectl-gpu"
    return CheckResult(NAME, TITLE, summary, tuple(findings))


def _reserved(claim: Mapping[str, Any]) -> bool:
    return bool(((claim.get("status") or {}).get("reservedFor")) or ())


def _pod_claim_entries(obj: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    spec = _pod_spec(obj)
    return [e for e in (spec.get("resourceClaims") or ()) if isinstance(e, Mapping)]


def _pod_spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    # Listed items carry no reliable `kind`; the shape tells a Pod, a CronJob and other workloads apart.
    spec = obj.get("spec") or {}
    if "containers" in spec:
        return spec
    if "jobTemplate" in spec:
        spec = ((spec.get("jobTemplate") or {}).get("spec")) or {}
    return ((spec.get("template") or {}).get("spec")) or {}
