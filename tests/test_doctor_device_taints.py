"""`kubectl gpu doctor` reports GPUs their DRA driver has tainted as unhealthy (KEP-5055).

NVIDIA's driver (kubernetes-sigs/dra-driver-nvidia-gpu cmd/gpu-kubelet-plugin/device_health.go)
taints a lost GPU `gpu.nvidia.com/gpu-lost:NoSchedule`, an XID `gpu.nvidia.com/xid=<code>` with
NoSchedule (None when non-fatal), and a GPU it cannot watch `gpu.nvidia.com/unmonitored:None`.
"""

from __future__ import annotations

import json

import kubernetes_validate
from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from tests import builders as b


def doctor_json(double) -> tuple[int, dict]:
    result = CliRunner().invoke(main, ["doctor", "--kubeconfig", double.kubeconfig_path(), "-o", "json"],
                                catch_exceptions=False)
    return result.exit_code, json.loads(result.output)


def tainted_slice() -> dict:
    gpu_slice = b.gpu_slice("dra-a", gpus=3)
    devices = gpu_slice["spec"]["devices"]
    devices[0]["taints"] = [{"key": "gpu.nvidia.com/gpu-lost", "effect": "NoSchedule"}]
    devices[1]["taints"] = [{"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoExecute"}]
    return gpu_slice


def test_the_published_taint_shape_is_valid_for_kubernetes() -> None:
    kubernetes_validate.validate(tainted_slice(), "1.35", strict=True)


def test_tainted_gpus_are_findings_naming_node_taint_and_what_it_does(k8s_double) -> None:
    k8s_double.seed(*b.nvidia_device_classes(), b.dra_node("dra-a"), tainted_slice())
    status, data = doctor_json(k8s_double)
    [check] = [c for c in data["checks"] if c["name"] == "device-taints"]
    assert check["status"] == "failed" and check["summary"] == "3 device(s), 2 tainted"
    by_severity = {f["severity"]: f for f in check["findings"]}
    assert "gpu.nvidia.com/gpu-lost:NoSchedule" in by_severity["warning"]["message"]
    assert "node dra-a" in by_severity["warning"]["message"] and "no new claim gets it" in by_severity["warning"]["message"]
    assert "gpu.nvidia.com/xid=79:NoExecute" in by_severity["error"]["message"]
    assert "evicted" in by_severity["error"]["message"] and "XID" in by_severity["error"]["fix"]
    assert status == 1


def test_an_untainted_cluster_passes_the_check(k8s_double) -> None:
    k8s_double.seed(*b.nvidia_device_classes(), b.dra_node("dra-a"), b.gpu_slice("dra-a", gpus=2))
    _, data = doctor_json(k8s_double)
    [check] = [c for c in data["checks"] if c["name"] == "device-taints"]
    assert check["status"] == "ok" and check["findings"] == [] and check["summary"] == "2 device(s), 0 tainted"
