"""KEP-5055: DRA drivers taint devices that are not healthy.

NVIDIA's DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu, cmd/gpu-kubelet-plugin/device_health.go)
taints a GPU `gpu.nvidia.com/gpu-lost` (NoSchedule) when it falls off the bus,
`gpu.nvidia.com/xid` = the XID code (NoSchedule, or None for XIDs it deems non-fatal) and
`gpu.nvidia.com/unmonitored` (None) when it cannot watch the GPU's health.  The scheduler keeps
pods off a NoSchedule device and evicts pods from a NoExecute one (with DRADeviceTaints on: beta,
on by default from 1.36); effect None only informs.
"""

from __future__ import annotations

from typing import Any, Mapping

from kubectl_gpu.inspect.devices import current_slices
from kubectl_gpu.inspect.doctor.inputs import DoctorInputs
from kubectl_gpu.inspect.doctor.report import CheckResult
from kubectl_gpu.inspect.findings import Finding, Severity

NAME = "device-taints"
TITLE = "DRA device taints (KEP-5055): GPUs their driver reports unhealthy"
_SEVERITY = {"NoExecute": Severity.ERROR, "NoSchedule": Severity.WARNING}
_MEANING = {
    "NoExecute": "pods using it are evicted and no new claim gets it",
    "NoSchedule": "no new claim gets it (pods already using it keep running)",
}


def check_device_taints(inputs: DoctorInputs) -> CheckResult:
    findings: list[Finding] = []
    devices = 0
    for slice_obj in current_slices(inputs.resource_slices):
        spec = slice_obj.get("spec") or {}
        node = spec.get("nodeName")
        for raw in spec.get("devices") or ():
            if not isinstance(raw, Mapping):
                continue
            devices += 1
            body = raw.get("basic") if isinstance(raw.get("basic"), Mapping) else raw  # v1beta1
            for taint in body.get("taints") or raw.get("taints") or ():
                if isinstance(taint, Mapping):
                    findings.append(_finding(spec, node, str(raw.get("name", "")), taint))
    tainted = len({f.subject for f in findings})
    summary = f"{devices} device(s), {tainted} tainted" if devices else "no device published"
    return CheckResult(NAME, TITLE, summary, tuple(findings))


def _finding(spec: Mapping[str, Any], node: Any, device: str, taint: Mapping[str, Any]) -> Finding:
    driver = str(spec.get("driver", ""))
    pool = str((spec.get("pool") or {}).get("name", ""))
    key, value, effect = str(taint.get("key", "")), taint.get("value"), str(taint.get("effect", ""))
    where = f" on node {node}" if node else ""
    shown = f"{key}={value}" if value not in (None, "") else key
    severity = _SEVERITY.get(effect, Severity.INFO)
    meaning = _MEANING.get(effect, "informational: the scheduler still hands it out")
    return Finding(
        "device-tainted", severity, f"device/{driver}/{pool}/{device}",
        f"{driver} device {device}{where} is tainted {shown}:{effect}: {meaning}",
        "check the GPU (nvidia-smi, kernel log for the XID) and the driver's kubelet plugin log; the driver "
        "removes the taint when the device is healthy again (Kubernetes' DRADeviceTaints gate makes taints "
        "take effect: beta, on by default from 1.36)")
