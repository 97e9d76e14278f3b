"""Double counting across all GPU nodes (the same finding `describe node` shows)."""

from __future__ import annotations

from kubectl_gpu.inspect.cluster import build_node_reports
from kubectl_gpu.inspect.devices import SliceDevice
from kubectl_gpu.inspect.dra_nodes import GPU_DRA_DRIVERS
from kubectl_gpu.inspect.doctor.inputs import DoctorInputs
from kubectl_gpu.inspect.doctor.report import CheckResult
from kubectl_gpu.inspect.holders import holders_by_device

NAME = "double-counting"
TITLE = "GPUs offered by both the device plugin and a DRA driver"


def check_double_counting(inputs: DoctorInputs, devices: list[SliceDevice]) -> CheckResult:
    reports, _ = build_node_reports(inputs.nodes, devices, holders_by_device(inputs.resource_claims), inputs.pods,
                                    inputs.dra_node_labels)
    dra_nodes = sum(1 for r in reports if r.is_dra_node)
    labels = ", ".join(str(label) for label in inputs.dra_node_labels)
    summary = (f"{len(reports)} GPU node(s), {dra_nodes} DRA node(s) (labelled {labels}, or publishing "
               f"{' or '.join(GPU_DRA_DRIVERS)} ResourceSlices)")
    return CheckResult(NAME, TITLE, summary, tuple(f for r in reports for f in r.findings))
