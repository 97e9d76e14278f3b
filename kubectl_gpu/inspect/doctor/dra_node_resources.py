"""Every extended resource a DRA node advertises.  A GPU device plugin can advertise GPUs under a
name of its own (the NVIDIA plugin's resources.gpus[].name `nvidia.com/a100`, a time-slicing or
MPS `rename`, another RESOURCE_PREFIX; k8s-device-plugin api/config/v1/resources.go), which the
double-counting check, going by the known legacy names, cannot see.  Listing what the DRA nodes
offer lets a person tell; names declared as the webhook's extraLegacyResources are GPUs for sure."""

from __future__ import annotations

from typing import Any, Mapping

from kubectl_gpu.core import family_of
from kubectl_gpu.inspect.devices import SliceDevice
from kubectl_gpu.inspect.doctor.inputs import DoctorInputs
from kubectl_gpu.inspect.doctor.report import CheckResult
from kubectl_gpu.inspect.dra_nodes import is_dra_node
from kubectl_gpu.inspect.findings import Finding, Severity
from kubectl_gpu.inspect.legacy import positive_quantity

NAME = "dra-node-resources"
TITLE = "Extended resources advertised by DRA nodes"
_NODE_LIST_LIMIT = 5


def check_dra_node_resources(inputs: DoctorInputs, devices: list[SliceDevice]) -> CheckResult:
    publishing = {d.node for d in devices if d.node}
    offered: dict[str, list[str]] = {}  # resource -> DRA nodes advertising it
    for node in inputs.nodes:
        metadata = node.get("metadata") or {}
        name = str(metadata.get("name") or "")
        if not (is_dra_node(metadata.get("labels") or {}, inputs.dra_node_labels) or name in publishing):
            continue
        for resource in extended_resources(node):
            offered.setdefault(resource, []).append(name)
    if not offered:
        return CheckResult(NAME, TITLE, "no extended resource advertised by a DRA node")
    summary = "DRA nodes advertise " + ", ".join(
        f"{resource} ({len(nodes)} node{'s' if len(nodes) > 1 else ''})" for resource, nodes in sorted(offered.items()))
    findings = []
    for resource, nodes in sorted(offered.items()):
        if family_of(resource) is not None:
            continue  # a known legacy name: the double-counting check judges it
        shown = ", ".join(sorted(nodes)[:_NODE_LIST_LIMIT])
        more = f" and {len(nodes) - _NODE_LIST_LIMIT} more" if len(nodes) > _NODE_LIST_LIMIT else ""
        where = f"{len(nodes)} DRA node(s) ({shown}{more})"
        if resource in inputs.extra_legacy_resources:
            findings.append(Finding(
                "renamed-gpu-on-dra-node", Severity.ERROR, f"resource/{resource}",
                f"{where} advertise {resource}, a device-plugin GPU resource (declared in extraLegacyResources), "
                "while the DRA driver owns the same GPUs: one GPU can be given to two pods",
                "stop the GPU device plugin on nodes running the DRA driver (GPU Operator: label them "
                "nvidia.com/gpu.deploy.device-plugin=false)"))
        else:
            findings.append(Finding(
                "unknown-extended-resource-on-dra-node", Severity.INFO, f"resource/{resource}",
                f"{where} advertise {resource}, which kubectl-gpu does not know as a GPU resource",
                f"if a GPU device plugin advertises it (a renamed resource), stop that plugin on DRA nodes and "
                f"add {resource} to the webhook's config.extraLegacyResources (and to doctor's "
                "--extra-legacy-resource) so legacy pods asking for it are kept off DRA nodes; otherwise "
                "nothing to do"))
    return CheckResult(NAME, TITLE, summary, tuple(findings))


def extended_resources(node: Mapping[str, Any]) -> list[str]:
    """The extended resources (a domain outside kubernetes.io) the node offers, sorted."""
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    found = []
    for resource, amount in allocatable.items():
        domain, slash, _ = str(resource).partition("/")
        if slash and not domain.endswith("kubernetes.io") and positive_quantity(str(amount)):
            found.append(str(resource))
    return sorted(found)
