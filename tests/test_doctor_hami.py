"""`kubectl gpu doctor` on nodes running HAMi: its device plugin (Project-HAMi/HAMi) and its DRA driver
(Project-HAMi/k8s-dra-driver) on one node offer the same GPUs twice, as NVIDIA's device plugin and DRA driver do.

HAMi's device plugin registers ``nvidia.com/gpu`` with the kubelet (one per GPU and split: charts/hami/values.yaml
resourceName, deviceSplitCount) and writes the node annotation ``hami.io/node-nvidia-register`` (the JSON list of
its GPUs, pkg/device/nvidia/device.go RegisterAnnos, pkg/device/devices.go MarshalNodeDevices at HAMi 4707fb02),
from which HAMi's scheduler hands out GPUs, whatever the node's status says.  HAMi's DRA driver publishes a
ResourceSlice of ``hami-core-gpu.project-hami.io`` naming the node.  Checked through the HTTP API double."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from kubectl_gpu.dra import hami
from tests import builders as b

HAMI_SLICE = Path(__file__).parent / "data" / "slices" / "hami-h100-node.yaml"
REGISTER = "hami.io/node-nvidia-register"
UUID = "GPU-4b7828e9-d6cf-1bb6-9018-02be0a309155"
# What HAMi's device plugin writes for one H100 (device.DeviceInfo's JSON names), split 10 ways.
REGISTERED = json.dumps([{"id": UUID, "count": 10, "devmem": 81559, "devcore": 100, "type": "NVIDIA-NVIDIA H100 80GB HBM3",
                          "health": True, "mode": "hami-core"}])


def hami_slice(node: str) -> dict:
    [document] = [d for d in yaml.safe_load_all(HAMI_SLICE.read_text()) if d]
    spec = {**document["spec"], "nodeName": node, "pool": {**document["spec"]["pool"], "name": node}}
    return {**document, "metadata": {"name": f"{node}-{hami.HAMI_DRIVER}-abcde"}, "spec": spec}


def hami_plugin_node(name: str, *, advertised: str | None = "10", register: str | None = REGISTERED) -> dict:
    node = b.node(name, labels={"gpu": "on"}, legacy={"nvidia.com/gpu": advertised} if advertised else None)
    if register is not None:
        node["metadata"]["annotations"] = {REGISTER: register, "hami.io/node-handshake": "Reported 2026-11-27 12:00:00"}
    return node


def doctor(double) -> tuple[int, dict]:
    result = CliRunner().invoke(main, ["doctor", "--kubeconfig", double.kubeconfig_path(), "-o", "json"],
                                catch_exceptions=False)
    return result.exit_code, json.loads(result.output)


def double_counting(data: dict) -> dict[str, dict]:
    return {f["subject"]: f for f in data["findings"] if f["code"] == "double-counting"}


def test_a_node_running_hamis_device_plugin_and_its_dra_driver_counts_its_gpus_twice(k8s_double):
    k8s_double.seed(hami_plugin_node("hami-1"), hami_slice("hami-1"))
    status, data = doctor(k8s_double)
    finding = double_counting(data)["node/hami-1"]
    assert status == 1 and finding["severity"] == "error"
    message = finding["message"]
    assert "HAMi's device plugin registered 1 GPU(s)" in message and REGISTER in message
    assert f"1 GPU device(s) through DRA ({hami.HAMI_DRIVER})" in message
    assert "nvidia.com/gpu=10" in message
    # The fix names HAMi's device plugin and the label its DaemonSet selects, not NVIDIA's GPU Operator.
    assert "HAMi's device plugin" in finding["fix"] and "gpu=on" in finding["fix"]
    assert "nvidia.com/gpu.deploy.device-plugin" not in finding["fix"]


def test_hamis_scheduler_double_counts_even_when_the_node_status_offers_nothing(k8s_double):
    """HAMi's scheduler reads the annotation, not the node's allocatable (a status guard that strips
    nvidia.com/gpu does not stop it)."""
    k8s_double.seed(hami_plugin_node("hami-2", advertised=None), hami_slice("hami-2"))
    status, data = doctor(k8s_double)
    assert status == 1
    assert "HAMi's device plugin registered 1 GPU(s)" in double_counting(data)["node/hami-2"]["message"]


def test_either_half_of_hami_alone_is_no_double_counting(k8s_double):
    k8s_double.seed(hami_plugin_node("plugin-only"), b.node("driver-only"), hami_slice("driver-only"))
    status, data = doctor(k8s_double)
    assert double_counting(data) == {}
    check = next(c for c in data["checks"] if c["name"] == "double-counting")
    assert check["status"] == "ok" and "1 DRA node(s)" in check["summary"]


def test_hamis_device_class_serving_nvidia_gpu_beside_its_device_plugin_is_an_overlap(k8s_double):
    """HAMi's chart gives its DeviceClass extendedResourceName nvidia.com/gpu on resource.k8s.io/v1
    (chart/hami-dra-driver/templates/deviceclass-hami-gpu.yaml), the name HAMi's device plugin advertises."""
    device_class = b.device_class(hami.HAMI_DEVICE_CLASS, hami.HAMI_DEVICE_CLASS_SELECTOR,
                                  extended_resource_name=hami.HAMI_EXTENDED_RESOURCE_NAME)
    k8s_double.seed(device_class, hami_plugin_node("plugin-only"))
    _, data = doctor(k8s_double)
    [overlap] = [f for f in data["findings"] if f["code"] == "extended-resource-overlap"]
    assert overlap["subject"] == f"deviceclass/{hami.HAMI_DEVICE_CLASS}" and "plugin-only" in overlap["message"]


def test_describe_counts_a_node_publishing_hamis_slices_as_a_dra_node():
    from kubectl_gpu.inspect.cluster import cluster_report
    from kubectl_gpu.inspect.dra_nodes import DEFAULT_DRA_NODE_LABELS

    report = cluster_report([b.node("driver-only")], [hami_slice("driver-only")], [], [], DEFAULT_DRA_NODE_LABELS)
    [node] = report.to_dict()["nodes"]
    assert node["draNode"] is True and node["gpus"] == 1 and node["memory"] == ["81559Mi"]


def test_doctor_help_names_hamis_double_counting():
    text = " ".join(CliRunner().invoke(main, ["doctor", "--help"]).output.split())
    assert "NVIDIA's or HAMi's (double counting)" in text


def test_describe_shows_a_hami_gpu_that_claims_share_as_shared():
    from kubectl_gpu.inspect.cluster import cluster_report
    from kubectl_gpu.inspect.dra_nodes import DEFAULT_DRA_NODE_LABELS
    from tests.test_hami_allocation import claim, holding, request

    held = [holding(claim(f"c{n}", request(cores=40, memory="1Gi")), "hami-1") for n in range(2)]
    pods = [b.pod(f"p{n}", "ml", node_name="hami-1", claims=[{"name": "gpu", "resourceClaimName": f"c{n}"}])
            for n in range(2)]
    report = cluster_report([b.node("hami-1")], [hami_slice("hami-1")], held, pods, DEFAULT_DRA_NODE_LABELS)
    [node] = report.to_dict()["nodes"]
    assert (node["gpus"], node["shared"], node["free"], node["allocated"]) == (1, 1, 0, 0)


def test_plan_takes_an_unlabelled_node_publishing_hamis_slices_for_a_dra_node():
    from kubectl_gpu.fleet import snapshot_from_objects
    from kubectl_gpu.fleet.migration_plan import plan_migration

    plan = plan_migration(snapshot_from_objects([b.node("driver-only"), hami_slice("driver-only")]))
    [gpu_node] = plan.nodes
    assert gpu_node.dra and not gpu_node.predicted


def test_describe_node_says_a_node_publishing_hamis_slices_is_a_dra_node():
    from kubectl_gpu.inspect import tables
    from kubectl_gpu.inspect.cluster import build_node_reports
    from kubectl_gpu.inspect.devices import current_devices
    from kubectl_gpu.inspect.dra_nodes import DEFAULT_DRA_NODE_LABELS

    [report], _ = build_node_reports([b.node("driver-only")], current_devices([hami_slice("driver-only")]), {}, [],
                                     DEFAULT_DRA_NODE_LABELS)
    first = tables.node(report)[0].plain
    assert first.split() == ["Node:", "driver-only", "DRA", "node:", "yes", "(publishes", hami.HAMI_DRIVER, "ResourceSlices)"]


def test_describe_node_says_an_unlabelled_node_is_a_dra_node_by_the_driver_it_publishes(k8s_double):
    """HAMi's chart labels nothing: the node is a DRA node because its slices are HAMi's driver's."""
    k8s_double.seed(b.node("hami-1", labels={}), hami_slice("hami-1"))
    result = CliRunner().invoke(main, ["describe", "node", "hami-1", "--kubeconfig", k8s_double.kubeconfig_path()],
                                catch_exceptions=False)
    assert f"DRA node: yes (publishes {hami.HAMI_DRIVER} ResourceSlices)" in " ".join(result.output.split())
