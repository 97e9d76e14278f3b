"""Claims for HAMi's DRA driver judged against its published GPUs (tests/data/slices/hami-*.yaml, predicted by
`kubectl gpu inventory --target-driver hami`) as Kubernetes' structured allocator judges them: a hami-gpu allows
multiple allocations (KEP-5075), so claims share it, each consuming ``cores`` and ``memory`` within the request
policies hami_core.go GetDevice publishes (Project-HAMi/k8s-dra-driver at ebeaad97), until one runs out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_gpu.dra import hami
from kubectl_gpu.explain import explain_objects

SLICES = Path(__file__).parent / "data" / "slices"
H100, H200, A100 = (SLICES / f"hami-{gpu}-node.yaml" for gpu in ("h100", "h200", "a100"))


def slices(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def request(name: str = "gpu", selectors: tuple[str, ...] = (), **capacity: Any) -> dict:
    body: dict[str, Any] = {"deviceClassName": hami.HAMI_DEVICE_CLASS}
    if selectors:
        body["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    if capacity:
        body["capacity"] = {"requests": capacity}
    return {"name": name, "exactly": body}


def claim(name: str, *requests: dict) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"namespace": "ml", "name": name},
            "spec": {"devices": {"requests": list(requests)}}}


def explain(claim_obj: dict, path: Path, allocations: list[dict] = ()):
    [item] = explain_objects([claim_obj], slices(path), (), list(allocations)).items
    return item


def holding(claim_obj: dict, node: str) -> dict:
    """``claim_obj`` as the scheduler leaves it on hami-gpu-0 of ``node``: each request's capacity consumed as asked
    (the asks here lie on the policies' steps, so nothing is rounded up), under a share ID."""
    results = [{"request": r["name"], "driver": hami.HAMI_DRIVER, "pool": node, "device": hami.device_name(0),
                "shareID": f"{claim_obj['metadata']['name']}-{i}",
                "consumedCapacity": {k: str(v) for k, v in r["exactly"]["capacity"]["requests"].items()}}
               for i, r in enumerate(claim_obj["spec"]["devices"]["requests"])]
    return {**claim_obj, "status": {"allocation": {"devices": {"results": results}}}}


# HAMi's own demo claims (Project-HAMi/k8s-dra-driver ebeaad97, demo/yaml/setup.yaml): one request of 30 cores and
# 4Gi, and a claim of two requests (30 cores 4Gi, 60 cores 8Gi) that one GPU holds both of.
SINGLE = claim("single-gpu-0", request("single-gpu", cores=30, memory="4Gi"))
DOUBLE = claim("double-gpu-0", request("double-gpu-0-0", cores=30, memory="4Gi"),
               request("double-gpu-0-1", cores=60, memory="8Gi"))


@pytest.mark.parametrize("path", [H100, H200, A100], ids=lambda p: p.stem)
def test_hamis_demo_claims_are_allocatable_on_each_fake_hami_node(path):
    node = slices(path)[0]["spec"]["nodeName"]
    single, double = explain(SINGLE, path), explain(DOUBLE, path)
    assert single.allocatable and single.node == node
    assert double.allocatable and double.node == node
    # Both requests of the double claim on the node's one GPU: it allows multiple allocations.
    assert {d.device for d in double.allocation} == {hami.device_name(0)}


@pytest.mark.parametrize("path, capacity, says", [
    (H100, {"memory": "80Gi"}, "memory: 80Gi is above the maximum 81559Mi"),
    (A100, {"memory": "81Gi"}, "memory: 81Gi is above the maximum 80Gi"),
    (H200, {"memory": "141Gi"}, "memory: 141Gi is above the maximum 143771Mi"),
    (H100, {"cores": 101}, "cores: 101 is above the maximum 100"),
])
def test_a_claim_for_more_than_a_gpu_holds_is_never_allocatable(path, capacity, says):
    item = explain(claim("big", request(**capacity)), path)
    assert not item.allocatable
    assert says in item.verdict, item.verdict


def test_claims_share_one_gpu_until_its_cores_run_out():
    held: list[dict] = []
    verdicts = []
    for n in range(3):
        ask = claim(f"c{n}", request(cores=40, memory="1Gi"))
        item = explain(ask, H100, held)
        verdicts.append(item.allocatable)
        if item.allocatable:
            held.append(holding(ask, "hami-h100-node"))
    assert verdicts == [True, True, False]  # 40 + 40 of 100 cores; a third 40 does not fit
    assert "taken by other claims" in item.verdict, item.verdict
    [device] = item.requests[0].alternatives[0].device_results
    assert device.capacity == "cores: needs 40, 20 of 100 left"
    assert device.taken_by == ("ml/c0:gpu", "ml/c1:gpu")


def test_claims_share_one_gpu_until_its_memory_runs_out():
    held = [holding(claim(f"c{n}", request(cores=10, memory="30Gi")), "hami-h100-node") for n in range(2)]
    third = explain(claim("c2", request(cores=10, memory="30Gi")), H100, held)
    assert not third.allocatable  # 60Gi of 81559Mi held: 30Gi more is too much, with cores to spare
    [device] = third.requests[0].alternatives[0].device_results
    assert device.capacity == "memory: needs 30Gi, 20119Mi of 81559Mi left"
    assert explain(claim("c3", request(cores=10, memory="20119Mi")), H100, held).allocatable
    assert not explain(claim("c3", request(cores=10, memory="20120Mi")), H100, held).allocatable


def test_a_request_that_names_no_cores_takes_all_of_them():
    """A capacity a request does not name is consumed at its policy's default (KEP-5075; the structured allocator
    at 3d036712), and HAMi's default for cores is 100, the whole GPU: a request must name its cores to share."""
    assert explain(claim("m", request(memory="1Gi")), H100).allocatable
    # Two requests of one claim on the node's one GPU: the allocator adds up what each consumes.
    named = claim("both", request("a", cores=99, memory="1Gi"), request("b", cores=1, memory="1Gi"))
    unnamed = claim("both", request("a", memory="1Gi"), request("b", cores=1, memory="1Gi"))
    assert explain(named, H100).allocatable
    assert not explain(unnamed, H100).allocatable


def test_hamis_class_finds_no_device_in_nvidias_slices_nor_nvidias_class_in_hamis():
    nvidia = SLICES / "nvidia-consumable-memory.yaml"
    assert "no device is in class hami-core-gpu.project-hami.io" in explain(SINGLE, nvidia).verdict
    gpu = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"namespace": "ml", "name": "g"},
           "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}
    assert "no device is in class gpu.nvidia.com" in explain(gpu, H100).verdict


def test_hamis_device_class_is_known_without_being_given():
    """HAMi's chart installs its DeviceClass (chart/hami-dra-driver/templates/deviceclass-hami-gpu.yaml): explain
    uses that definition when none is given, and says so."""
    item = explain(SINGLE, H100)
    [alternative] = item.requests[0].alternatives
    assert alternative.class_source == "built-in (HAMi driver)" and alternative.in_class == 1
    assert any(hami.HAMI_DEVICE_CLASS_SELECTOR in note and "HAMi's DRA driver" in note for note in item.notes)


@pytest.mark.parametrize("selector, matches", [
    ("device.attributes['hami-core-gpu.project-hami.io'].minor == 0", True),
    ("device.attributes['hami-core-gpu.project-hami.io'].cudaComputeCapability.isGreaterThan(semver('8.9.0'))", True),
    ("device.attributes['hami-core-gpu.project-hami.io'].productName == 'NVIDIA H100 80GB HBM3'", True),
    ("device.attributes['hami-core-gpu.project-hami.io'].pcieBusID == '0000:18:00.0'", True),
    ("device.attributes['resource.kubernetes.io'].pcieRoot == 'pci0000:17'", True),
    ("device.capacity['hami-core-gpu.project-hami.io'].memory.compareTo(quantity('80Gi')) >= 0", False),
    ("device.capacity['hami-core-gpu.project-hami.io'].cores.compareTo(quantity('100')) == 0", True),
])
def test_selectors_read_hamis_attributes_and_capacities_as_the_scheduler_does(selector, matches):
    """The one slice reader (kubectl_gpu/dra/devices.py) gives CEL HAMi's values with their kinds: minor an int,
    versions semvers, capacities quantities (81559Mi is less than 80Gi)."""
    item = explain(claim("s", request(selectors=(selector,), cores=10, memory="1Gi")), H100)
    assert item.allocatable is matches, item.verdict
