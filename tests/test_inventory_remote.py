"""`kubectl gpu inventory --node NODE` against the API double: a short-lived pod bound to the node
runs the inventory with the project's image, its output is printed as a local run prints it, and
the pod is deleted.  The double runs no containers: a thread plays the kubelet, running the real
inventory over a recorded NVML node and writing the pod's log and final status."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pynvml
from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from tests import builders as b

RECORDING = Path(__file__).parent / "data" / "nvml" / "h100-80gb-hbm3.json"


def play_kubelet(double, seen: list[dict]) -> threading.Thread:
    def kubelet() -> None:
        for _ in range(600):  # waiting for the pod, not timing anything
            pods = [p for p in double.list("pods") if p["metadata"]["name"].startswith("kubectl-gpu-inventory-")]
            if pods:
                break
            time.sleep(0.05)
        else:
            return
        pod = pods[0]
        seen.append(pod)
        container = pod["spec"]["containers"][0]
        args = container["command"][1:]  # the image's kubectl-gpu, run here over a recorded node
        saved = {name: getattr(pynvml, name) for name in dir(pynvml) if name.startswith("nvml")}
        try:
            result = CliRunner().invoke(main, [*args, "--nvml-recording", str(RECORDING)])
        finally:  # --nvml-recording replaced pynvml's functions for this process
            for name, value in saved.items():
                setattr(pynvml, name, value)
        double.set_pod_log(pod["metadata"]["name"], result.output, pod["metadata"]["namespace"])
        finished = dict(pod, status={"phase": "Succeeded" if result.exit_code == 0 else "Failed",
                                     "containerStatuses": [{"name": "inventory", "ready": False, "restartCount": 0,
                                                            "image": container["image"], "imageID": "",
                                                            "state": {"terminated": {"exitCode": result.exit_code}}}]})
        double.seed(finished, replace=True)

    thread = threading.Thread(target=kubelet, daemon=True)
    thread.start()
    return thread


def test_inventory_of_a_remote_node_through_a_short_lived_pod(k8s_double):
    k8s_double.seed(b.dra_node("gpu-node-7"))
    seen: list[dict] = []
    kubelet = play_kubelet(k8s_double, seen)
    result = CliRunner().invoke(main, ["inventory", "--node", "gpu-node-7", "-o", "json", "--image", "example/kgpu:1",
                                       "--kubeconfig", k8s_double.kubeconfig_path()], catch_exceptions=False)
    kubelet.join(10)
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["kind"] == "ResourceSlice" and document["spec"]["nodeName"] == "gpu-node-7"
    assert document["spec"]["devices"]
    (pod,) = seen
    spec = pod["spec"]
    assert spec["nodeName"] == "gpu-node-7" and spec["restartPolicy"] == "Never"
    assert spec["tolerations"] == [{"operator": "Exists"}]
    container = spec["containers"][0]
    assert container["image"] == "example/kgpu:1"
    assert {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"} in container["env"]
    assert "nvidia.com/gpu" not in json.dumps(container.get("resources"))  # takes no GPU from workloads
    assert k8s_double.get("pods", pod["metadata"]["name"]) is None  # deleted afterwards
    assert k8s_double.count(verb="delete", resource="pods") == 1


def test_a_pod_that_never_runs_is_deleted_and_says_why(k8s_double):
    k8s_double.seed(b.dra_node("gpu-node-7"))
    result = CliRunner().invoke(main, ["inventory", "--node", "gpu-node-7", "--wait", "1",
                                       "--kubeconfig", k8s_double.kubeconfig_path()])
    assert result.exit_code == 4
    assert "did not finish in 1s" in result.output and "raise --wait" in result.output
    assert k8s_double.count(verb="delete", resource="pods") == 1 and not k8s_double.list("pods")


def test_a_remote_node_is_recorded_and_its_slices_are_owned_by_the_node(k8s_double, tmp_path):
    """The pod prints the node's recording (--record -); the slices are built here, owned by the Node as
    the kubelet plugin's ResourceSlice controller owns them (resourceslicecontroller.go: a controller
    ownerReference with the Node's UID)."""
    k8s_double.seed(b.dra_node("gpu-node-7"))
    uid = k8s_double.get("nodes", "gpu-node-7")["metadata"]["uid"]
    record = tmp_path / "gpu-node-7.json"
    kubelet = play_kubelet(k8s_double, [])
    result = CliRunner().invoke(main, ["inventory", "--node", "gpu-node-7", "-o", "json", "--record", str(record),
                                       "--image", "example/kgpu:1", "--kubeconfig", k8s_double.kubeconfig_path()],
                                catch_exceptions=False)
    kubelet.join(10)

    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "gpu-node-7", "uid": uid, "controller": True}]
    replayed = CliRunner().invoke(main, ["inventory", "--nvml-recording", str(record), "--node-name", "gpu-node-7",
                                         "-o", "json"])
    document.pop("metadata")
    assert {k: v for k, v in json.loads(replayed.stdout).items() if k != "metadata"} == document
