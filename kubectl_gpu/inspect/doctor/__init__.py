"""`kubectl gpu doctor`: checks over a snapshot of cluster objects (pure; the CLI fetches them)."""

from __future__ import annotations

from kubectl_gpu.inspect.devices import current_devices
from kubectl_gpu.inspect.doctor import api_versions, device_taints, double_counted_nodes, dra_node_resources, \
    extended_resources, quotas, selectors, unused, webhooks
from kubectl_gpu.inspect.doctor.inputs import DoctorInputs
from kubectl_gpu.inspect.doctor.report import CheckResult, DoctorReport
from kubectl_gpu.inspect.findings import Finding, Severity

# The objects each check reads: a check whose objects could not be listed is skipped, not passed.
NEEDS: dict[str, tuple[str, ...]] = {
    double_counted_nodes.NAME: ("nodes", "resourceslices", "resourceclaims", "pods"),
    dra_node_resources.NAME: ("nodes", "resourceslices"),
    extended_resources.NAME: ("deviceclasses", "nodes"),
    webhooks.NAME: ("mutatingwebhookconfigurations", "validatingwebhookconfigurations", "services"),
    selectors.NAME: ("resourceslices", "resourceclaimtemplates", "resourceclaims", "deviceclasses"),
    unused.NAME: ("resourceclaimtemplates", "resourceclaims", "pods", "workloads"),
    api_versions.NAME: ("discovery",),
    device_taints.NAME: ("resourceslices",),
    quotas.NAME: ("resourcequotas", "resourceclaims", "deviceclasses"),
}
TITLES = {double_counted_nodes.NAME: double_counted_nodes.TITLE, dra_node_resources.NAME: dra_node_resources.TITLE,
          extended_resources.NAME: extended_resources.TITLE,
          webhooks.NAME: webhooks.TITLE, selectors.NAME: selectors.TITLE, unused.NAME: unused.TITLE,
          api_versions.NAME: api_versions.TITLE, device_taints.NAME: device_taints.TITLE, quotas.NAME: quotas.TITLE}


def run_doctor(inputs: DoctorInputs) -> DoctorReport:
    devices = current_devices(inputs.resource_slices)
    runners = {
        api_versions.NAME: lambda: api_versions.check_api_versions(inputs, webhooks.installed(inputs)),
        double_counted_nodes.NAME: lambda: double_counted_nodes.check_double_counting(inputs, devices),
        dra_node_resources.NAME: lambda: dra_node_resources.check_dra_node_resources(inputs, devices),
        extended_resources.NAME: lambda: extended_resources.check_extended_resources(inputs),
        webhooks.NAME: lambda: webhooks.check_webhooks(inputs),
        selectors.NAME: lambda: selectors.check_selectors(inputs, devices),
        unused.NAME: lambda: unused.check_unused(inputs),
        device_taints.NAME: lambda: device_taints.check_device_taints(inputs),
        quotas.NAME: lambda: quotas.check_quotas(inputs),
    }
    results = []
    for name, run in runners.items():
        missing = [r for r in NEEDS[name] if r in inputs.unavailable]
        results.append(_skipped(name, missing, inputs) if missing else run())
    return DoctorReport(tuple(results), inputs.served_dra_versions)


def _skipped(name: str, missing: list[str], inputs: DoctorInputs) -> CheckResult:
    reasons = "; ".join(f"{r}: {inputs.unavailable[r]}" for r in missing)
    return CheckResult(name, TITLES[name], "not checked", (Finding(
        "check-skipped", Severity.WARNING, f"check/{name}",
        f"could not run this check because {', '.join(missing)} could not be read ({reasons})",
        f"grant the user running doctor get/list on {', '.join(missing)} (or run it with an "
        "admin kubeconfig)"),), skipped=reasons)


__all__ = ["CheckResult", "DoctorInputs", "DoctorReport", "run_doctor"]
