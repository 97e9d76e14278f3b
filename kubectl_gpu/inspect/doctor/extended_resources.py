"""KEP-5004: a DeviceClass with `extendedResourceName` lets the scheduler serve a plain
`nvidia.com/gpu: 1` from DRA devices.  If a device plugin still advertises the same name, the
same pods can be served twice over, from two inventories of the same GPUs."""

from __future__ import annotations

import re
from typing import Any, Mapping

from kubectl_gpu.core import family_of
from kubectl_gpu.inspect.doctor.inputs import DoctorInputs
from kubectl_gpu.inspect.doctor.report import CheckResult
from kubectl_gpu.inspect.findings import Finding, Severity
from kubectl_gpu.inspect.legacy import positive_quantity

NAME = "extended-resources"
TITLE = "DeviceClass extendedResourceName against device-plugin resources"
# Legacy resources that measure memory or compute shares rather than counting devices: an
# extended-resource class hands out one whole device per unit of them.
_MEASURE = re.compile(r"(mem|core|percentage)", re.IGNORECASE)
_NODE_LIST_LIMIT = 5


def check_extended_resources(inputs: DoctorInputs) -> CheckResult:
    mapped: dict[str, list[str]] = {}
    for device_class in inputs.device_classes:
        name = str((device_class.get("metadata") or {}).get("name") or "")
        resource = (device_class.get("spec") or {}).get("extendedResourceName")
        if resource:
            mapped.setdefault(str(resource), []).append(name)
    summary = (f"{sum(len(v) for v in mapped.values())} DeviceClass(es) map extended resources"
               if mapped else "no DeviceClass maps an extended resource")
    advertised = _advertised_by_nodes(inputs.nodes, set(mapped))
    findings: list[Finding] = []
    for resource, classes in sorted(mapped.items()):
        subject = f"deviceclass/{classes[0]}"
        nodes = advertised.get(resource, [])
        if nodes:
            shown = ", ".join(nodes[:_NODE_LIST_LIMIT])
            more = f" and {len(nodes) - _NODE_LIST_LIMIT} more" if len(nodes) > _NODE_LIST_LIMIT else ""
            findings.append(Finding(
                "extended-resource-overlap", Severity.ERROR, subject,
                f"DeviceClass {', '.join(classes)} serves {resource} through DRA, while "
                f"{len(nodes)} node(s) still advertise {resource} from a device plugin ({shown}{more}); "
                "one GPU can be given to a device-plugin pod and a DRA pod at once",
                f"stop the device plugin on nodes running the DRA driver so they stop advertising "
                f"{resource}, or remove extendedResourceName from DeviceClass {classes[0]}"))
        if len(classes) > 1:
            findings.append(Finding(
                "extended-resource-ambiguous", Severity.WARNING, subject,
                f"{len(classes)} DeviceClasses ({', '.join(sorted(classes))}) map {resource}; only "
                "one of them can take effect",
                f"keep extendedResourceName: {resource} on one DeviceClass and remove it from the others"))
        if family_of(resource) is not None and _MEASURE.search(resource.rsplit("/", 1)[-1]):
            findings.append(Finding(
                "extended-resource-not-a-count", Severity.WARNING, subject,
                f"{resource} measures memory or compute shares, but an extended-resource DeviceClass "
                f"counts devices: {resource}: 8 would ask for 8 whole devices",
                f"remove extendedResourceName from {classes[0]} and convert such pods with "
                "`kubectl gpu migrate` (consumable capacity or sharing claims)"))
    return CheckResult(NAME, TITLE, summary, tuple(findings))


def _advertised_by_nodes(nodes: tuple[Mapping[str, Any], ...], wanted: set[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for node in nodes:
        name = str((node.get("metadata") or {}).get("name") or "")
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        for resource, amount in allocatable.items():
            if resource in wanted and positive_quantity(str(amount)):
                found.setdefault(str(resource), []).append(name)
    return {k: sorted(v) for k, v in found.items()}

