"""Which resource.k8s.io versions the cluster serves, and whether kubectl-gpu can work with them."""

from __future__ import annotations

from kubectl_gpu.dra.facts import DRA_VERSIONS
from kubectl_gpu.inspect.doctor.inputs import DoctorInputs
from kubectl_gpu.inspect.doctor.report import CheckResult
from kubectl_gpu.inspect.findings import Finding, Severity

NAME = "api-versions"
TITLE = "DRA API versions the cluster serves"
KNOWN = DRA_VERSIONS


def check_api_versions(inputs: DoctorInputs, webhook_installed: bool) -> CheckResult:
    served = inputs.served_dra_versions
    summary = "resource.k8s.io: " + (", ".join(served) if served else "not served")
    usable = [v for v in KNOWN if v in served]
    if not usable:
        return CheckResult(NAME, TITLE, summary, (Finding(
            "dra-not-served", Severity.ERROR, "apigroup/resource.k8s.io",
            "the cluster serves no resource.k8s.io version kubectl-gpu reads "
            f"({', '.join(KNOWN)}); DRA claims cannot be created or allocated",
            "use Kubernetes 1.32 or newer with the DynamicResourceAllocation feature and the "
            "resource.k8s.io API enabled (1.34+ serves v1 by default)"),))
    if "v1" in served:
        return CheckResult(NAME, TITLE, summary)
    newest = usable[0]
    severity = Severity.WARNING if webhook_installed else Severity.INFO
    return CheckResult(NAME, TITLE, summary, (Finding(
        "dra-v1-not-served", severity, "apigroup/resource.k8s.io",
        f"the cluster does not serve resource.k8s.io/v1 (Kubernetes < 1.34); its newest DRA "
        f"version is {newest}, and claims written as v1 are rejected",
        f"generate {newest} objects: `kubectl gpu migrate --api-version {newest}`, and set "
        f"translation.apiVersion: {newest} in the webhook's configuration"),))
