"""What `describe` reports, computed from API objects alone (no server)."""

from __future__ import annotations

import json

import yaml

from kubectl_gpu.inspect.claims import claim_report
from kubectl_gpu.inspect.cluster import cluster_report
from kubectl_gpu.dra.devices import devices_from_slice
from kubectl_gpu.inspect.devices import current_devices, devices_of_slice
from kubectl_gpu.inspect.dra_nodes import DEFAULT_DRA_NODE_LABELS, NodeLabel
from kubectl_gpu.inspect.pods import ALLOCATED, NOT_CREATED, pod_report
from tests import builders as b
from tests.corpus import corpus_file



def _report(nodes, slices=(), claims=(), pods=(), labels=DEFAULT_DRA_NODE_LABELS):
    return cluster_report(nodes, slices, claims, pods, labels)


def test_node_lists_each_gpu_with_product_memory_uuid_and_who_holds_it():
    slices = [b.gpu_slice("dra-1", 4)]
    claims = [b.claim("train-gpu-abc", "ml", allocated=[("gpu", "gpu-1")], node_name="dra-1",
                      reserved_for=["train-0"], owner_pod="train-0")]
    report = _report([b.dra_node("dra-1")], slices, claims)
    (node,) = report.nodes
    rows = {r.device.name: r for r in node.devices}
    assert rows["gpu-1"].state == "allocated"
    assert rows["gpu-1"].pods == ("ml/train-0",)
    assert rows["gpu-1"].holders[0].claim == "ml/train-gpu-abc"
    assert rows["gpu-0"].state == "free" and rows["gpu-0"].holders == ()
    assert rows["gpu-2"].device.product == "NVIDIA H100 80GB HBM3"
    assert rows["gpu-2"].device.memory == "80Gi"
    assert rows["gpu-2"].device.uuid == b.gpu_uuid("dra-1", 2)
    assert [r.device.name for r in node.devices] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert node.findings == ()
    assert report.totals() == {"nodes": 1, "draNodes": 1, "gpus": 4, "allocated": 1, "shared": 0,
                               "free": 3, "migDevices": 0, "migDevicesInUse": 0, "legacyGpuPods": 0}


def test_consumable_capacity_shows_as_shared_with_summed_consumption():
    slices = [b.gpu_slice("dra-1", 1, shareable=True)]
    claims = [b.claim(f"c{i}", "inference", allocated=[("gpu", "gpu-0")], node_name="dra-1",
                      reserved_for=[f"p{i}"], consumed={"memory": "20Gi"}, share_id=f"share-{i}")
              for i in range(3)]
    (node,) = _report([b.dra_node("dra-1")], slices, claims).nodes
    (row,) = node.devices
    assert row.state == "shared"
    assert row.consumed == {"memory": "60Gi/80Gi"}
    assert {h.share_id for h in row.holders} == {"share-0", "share-1", "share-2"}
    assert row.pods == ("inference/p0", "inference/p1", "inference/p2")


def test_mig_devices_show_their_profile():
    devices = [b.mig_device("a100", 0, slot, "1g.10gb") for slot in range(2)]
    (node,) = _report([b.dra_node("a100")], [b.gpu_slice("a100", devices=devices)]).nodes
    assert {r.device.mig_profile for r in node.devices} == {"1g.10gb"}
    assert all(r.device.memory == "9984Mi" for r in node.devices)


def test_mig_devices_are_slices_of_a_gpu_not_gpus():
    """The NVIDIA driver publishes a MIG-enabled GPU as its MIG devices (type mig, parentUUID the
    GPU's uuid): a node with 2 GPUs, one split into 7 MIG devices, has 2 GPUs and 7 MIG devices."""
    whole = b.gpu_device("a100", 0, product="NVIDIA A100-SXM4-80GB")
    migs = [b.mig_device("a100", 1, slot) for slot in range(7)]
    report = _report([b.dra_node("a100")], [b.gpu_slice("a100", devices=[whole, *migs])],
                     [b.claim("c", allocated=[("gpu", migs[0]["name"])], node_name="a100")])
    (node,) = report.nodes
    assert (node.gpu_count, len(node.mig_rows), node.mig_used) == (2, 7, 1)
    totals = report.totals()
    assert (totals["gpus"], totals["free"], totals["migDevices"], totals["migDevicesInUse"]) == (2, 1, 7, 1)
    assert report.by_product() == [{"product": "NVIDIA A100-SXM4-80GB", "gpus": 2, "allocated": 0, "shared": 0,
                                    "free": 1, "migDevices": 7, "migDevicesInUse": 1}]


def test_dra_labelled_node_still_advertising_device_plugin_gpus_is_double_counting():
    nodes = [b.dra_node("dra-1", legacy={"nvidia.com/gpu": "8"})]
    (node,) = _report(nodes, [b.gpu_slice("dra-1", 8)]).nodes
    (finding,) = node.findings
    assert finding.code == "double-counting" and finding.subject == "node/dra-1"
    assert "nvidia.com/gpu=8" in finding.message
    assert "ack.node.gpu.schedule=disabled" in finding.message
    assert "device plugin" in finding.fix


def test_dra_labelled_node_running_legacy_gpu_pods_names_them():
    pods = [b.pod("old-style", "ml", node_name="dra-1", limits={"nvidia.com/gpu": 1}),
            b.pod("finished", "ml", node_name="dra-1", phase="Succeeded", limits={"nvidia.com/gpu": 1}),
            b.pod("cpu-only", "ml", node_name="dra-1")]
    (node,) = _report([b.dra_node("dra-1")], [], [], pods).nodes
    assert [p.ref for p in node.legacy_pods] == ["ml/old-style"]
    (finding,) = node.findings
    assert "ml/old-style" in finding.message and "finished" not in finding.message
    assert "migrate" in finding.fix


def test_unlabelled_node_offering_the_same_gpus_through_dra_and_device_plugin():
    nodes = [b.node("mixed", legacy={"nvidia.com/gpu": "8"})]
    (node,) = _report(nodes, [b.gpu_slice("mixed", 8)]).nodes
    (finding,) = node.findings
    assert "8 GPU device(s) through DRA (gpu.nvidia.com)" in finding.message


def test_legacy_only_node_is_not_double_counting():
    nodes = [b.node("legacy-1", legacy={"nvidia.com/gpu": "8"})]
    pods = [b.pod("job", node_name="legacy-1", limits={"nvidia.com/gpu": 2})]
    (node,) = _report(nodes, [], [], pods).nodes
    assert node.findings == ()
    assert [(r.name, r.capacity, r.allocatable) for r in node.legacy_resources] == [("nvidia.com/gpu", "8", "8")]
    assert node.legacy_pods[0].requests[0].amount == "2"


def test_device_plugin_resource_with_zero_allocatable_is_not_offered():
    nodes = [b.dra_node("dra-1", legacy={"nvidia.com/gpu": "8"}, allocatable={"nvidia.com/gpu": "0"})]
    (node,) = _report(nodes, [b.gpu_slice("dra-1", 8)]).nodes
    assert node.findings == ()


def test_the_dra_node_label_is_configurable():
    nodes = [b.node("gke-1", labels={"pool": "dra"}, legacy={"nvidia.com/gpu": "1"})]
    assert _report(nodes).nodes[0].findings == ()
    custom = (NodeLabel.parse("pool=dra"),)
    (finding,) = _report(nodes, labels=custom).nodes[0].findings
    assert "pool=dra" in finding.message


def test_pod_served_through_an_extended_resource_claim_holds_dra_devices():
    served = b.pod("kep5004", node_name="dra-1", limits={"nvidia.com/gpu": 1})
    served["status"]["extendedResourceClaimStatus"] = {
        "resourceClaimName": "kep5004-extended-resources-x",
        "requestMappings": [{"containerName": "main", "requestName": "container-0-request-0",
                             "resourceName": "nvidia.com/gpu"}]}
    (node,) = _report([b.dra_node("dra-1")], [], [], [served]).nodes
    assert node.legacy_pods[0].served_by_dra
    assert node.findings == ()


def test_older_pool_generations_are_ignored():
    old = b.gpu_slice("dra-1", 8, generation=1)
    new = b.gpu_slice("dra-1", 4, generation=2)
    assert len(current_devices([old, new])) == 4


def test_v1beta1_slices_are_read_through_basic():
    devices = devices_of_slice(b.gpu_slice("dra-1", 2, api_version="resource.k8s.io/v1beta1"))
    assert [d.product for d in devices] == ["NVIDIA H100 80GB HBM3"] * 2
    assert devices[1].attribute("gpu.nvidia.com/uuid") == b.gpu_uuid("dra-1", 1)


def test_example_driver_slice_from_the_corpus():
    listing = yaml.safe_load(corpus_file("dra", "kubernetes-sigs__dra-example-driver__README.md__L189-L320.yaml").read_text())
    devices = current_devices(listing["items"])
    assert len(devices) == 8
    assert {d.node for d in devices} == {"dra-example-driver-cluster-worker"}
    assert devices[0].product == "LATEST-GPU-MODEL" and devices[0].memory == "80Gi"
    assert all(d.is_gpu for d in devices)


def test_imex_channels_in_the_corpus_are_not_counted_as_gpus():
    docs = [d for d in yaml.safe_load_all(corpus_file("dra", "kubernetes-sigs__dra-driver-nvidia-gpu__demo_clusters_kind_scripts_imex-resourceslice.yaml").read_text()) if d]
    devices = current_devices(docs)
    assert len(devices) == 20 and not any(d.is_gpu for d in devices)
    assert all(d.node is None for d in devices)  # selected by node labels: a shared pool
    report = _report([], docs)
    assert {pool for pool, _ in report.shared_pools} == {
        "gpu.nvidia.com/imex-domain-0f884867-ba2f-4294-9155-b495ff367eea-1",
        "gpu.nvidia.com/imex-domain-0f884867-ba2f-4294-9155-b495ff367eea-2"}


def test_pod_shows_legacy_requests_claims_allocation_and_conversion_annotation():
    original = {"containers": {"main": {"limits": {"nvidia.com/gpu": "1"}}}}
    pod = b.pod("web-0", "ml", node_name="dra-1",
                claims=[{"name": "gpu", "resourceClaimTemplateName": "kubectl-gpu-1x-gpu"}],
                claim_statuses={"gpu": "web-0-gpu-x7k2p"},
                annotations={"kubectl-gpu.io/original-resources": json.dumps(original)})
    claims = [b.claim("web-0-gpu-x7k2p", "ml", allocated=[("gpu", "gpu-3")], node_name="dra-1",
                      reserved_for=["web-0"], owner_pod="web-0"),
              b.claim("web-0-gpu-x7k2p", "other-namespace")]
    report = pod_report(pod, claims, current_devices([b.gpu_slice("dra-1", 4)]))
    (row,) = report.claims
    assert row.source == "ResourceClaimTemplate kubectl-gpu-1x-gpu"
    assert row.claim_name == "web-0-gpu-x7k2p" and row.generated and row.state == ALLOCATED
    assert row.containers == ("main",)
    (device,) = row.devices
    assert (device.device, device.node) == ("gpu-3", "dra-1")
    assert device.detail.uuid == b.gpu_uuid("dra-1", 3)
    assert device.to_dict()["attributes"]["gpu.nvidia.com/architecture"] == "Hopper"
    assert report.original_resources == original
    assert report.legacy_requests == ()
    assert report.to_dict()["claims"][0]["requests"][0]["deviceClassName"] == "gpu.nvidia.com"


def test_pending_pod_whose_claim_is_not_created_yet():
    pod = b.pod("waiting", phase="Pending", limits={"nvidia.com/gpu": 2},
                claims=[{"name": "gpu", "resourceClaimTemplateName": "t"}],
                unschedulable="0/3 nodes are available: 3 cannot allocate all claims.")
    report = pod_report(pod, [], [])
    assert report.pending
    assert report.claims[0].state == NOT_CREATED
    assert [(r.resource, r.amount) for r in report.legacy_requests] == [("nvidia.com/gpu", "2")]
    assert report.scheduling.startswith("Unschedulable: 0/3 nodes")


def test_claim_report_reads_v1beta1_flat_requests():
    claim = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
             "metadata": {"name": "two", "namespace": "gpu-test8"},
             "spec": {"devices": {"requests": [{"name": "gpus", "deviceClassName": "gpu.nvidia.com",
                                                "count": 2}]}}}
    report = claim_report(claim, [])
    (request,) = report.requests
    assert (request.device_class, request.count) == ("gpu.nvidia.com", 2)
    assert report.state == "waiting for allocation"
    assert request.describe() == "2 x gpu.nvidia.com"


def test_describe_reads_slices_with_the_one_parser_that_explain_uses():
    """resource.k8s.io/v1 ResourceSlice: with `spec.perDeviceNodeSelection: true` each device names
    its own node (Device.nodeName), and a version attribute is a semantic version; describe shows
    what the scheduler (and explain) sees."""
    gpus = [b.gpu_device("dra-1", 0), b.gpu_device("dra-2", 1)]
    gpus[0]["nodeName"], gpus[1]["nodeName"] = "dra-1", "dra-2"
    gpus[0]["attributes"]["driverVersion"] = {"version": "580.65.6"}
    shared = b.gpu_slice("pool-a", devices=gpus)
    del shared["spec"]["nodeName"]
    shared["spec"]["perDeviceNodeSelection"] = True
    devices = devices_of_slice(shared)
    assert [d.node for d in devices] == ["dra-1", "dra-2"]
    assert devices[0].text("driverVersion") == "580.65.6"
    assert devices[0].attributes["gpu.nvidia.com/driverVersion"] == "580.65.6"
    explained = devices_from_slice(shared)
    assert [d.node_name for d in explained] == [d.node for d in devices]


def test_a_slice_the_api_server_would_refuse_shows_no_devices():
    broken = b.gpu_slice("dra-1", 2)
    broken["spec"]["devices"][1]["capacity"]["memory"] = {"value": "80GB"}
    assert devices_of_slice(broken) == []
