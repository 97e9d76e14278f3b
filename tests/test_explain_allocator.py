"""explain answers as Kubernetes' structured allocator does (issue 24): each case below was
answered wrongly by the greedy fit explain had before, in one direction or the other.  The
expected answers follow k8s.io/dynamic-resource-allocation structured (the cases of its
allocatortesting table named in each test, transcribed in full in tests/test_allocator_upstream.py)."""

from __future__ import annotations

from typing import Any

from click.testing import CliRunner

from kubectl_gpu.cli.exits import FINDINGS, INTERNAL_ERROR, OK
from kubectl_gpu.cli.main import main
from kubectl_gpu.explain import explain_objects
from tests.builders import NVIDIA, claim, dynamic_mig_slices, exact_request, gpu_device, gpu_slice

ALL_ON = frozenset({"DRAAdminAccess", "DRAPrioritizedList", "DRADeviceTaints", "DRAPartitionableDevices",
                    "DRAConsumableCapacity", "DRAListTypeAttributes", "DRAResourceClaimDeviceStatus",
                    "DRADeviceBindingConditions", "DRADeviceTaintRules"})
BIG = "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) >= 0"


def explained(claims: list[dict], slices: list[dict], gates: frozenset[str] = ALL_ON, **extra: Any) -> Any:
    (item,) = explain_objects(claims=claims, slices=slices, gates=gates, **extra).items
    return item


def two_gpus() -> dict:
    # The large GPU first: a greedy first fit gives it to the small request.
    return gpu_slice("node-1", devices=[gpu_device("node-1", 0, memory="80Gi"), gpu_device("node-1", 1, memory="40Gi")])


def test_backtracking_over_requests_finds_the_allocation_a_first_fit_misses() -> None:
    # upstream: small-and-large-backtrack-requests
    result = explained([claim("c", requests=[exact_request("small"), exact_request("large", selectors=[BIG])])],
                       [two_gpus()])
    assert result.allocatable, result.verdict
    assert result.node == "node-1"
    assert {(d.request, d.device) for d in result.allocation} == {("small", "gpu-1"), ("large", "gpu-0")}


def test_first_available_falls_back_when_the_claims_other_requests_need_the_first_choice() -> None:
    # upstream: prioritized-list-*: alternatives are tried in order until everything fits together
    first_available = {"name": "flexible", "firstAvailable": [
        {"name": "big", "deviceClassName": NVIDIA, "selectors": [{"cel": {"expression": BIG}}]},
        {"name": "any", "deviceClassName": NVIDIA}]}
    result = explained([claim("c", requests=[first_available, exact_request("large", selectors=[BIG])])],
                       [two_gpus()])
    assert result.allocatable, result.verdict
    (flexible, _) = result.requests
    assert flexible.chosen == "flexible/any"
    assert {(d.request, d.device) for d in result.allocation} == {("flexible/any", "gpu-1"), ("large", "gpu-0")}


def test_a_tainted_device_is_not_allocated_unless_the_request_tolerates_the_taint() -> None:
    # upstream: tainted-device, tolerated-tainted-device (device taints, KEP-5055)
    device = gpu_device("node-1", 0)
    device["taints"] = [{"key": "maintenance", "effect": "NoSchedule"}]
    slices = [gpu_slice("node-1", devices=[device])]
    assert not explained([claim("c")], slices).allocatable
    tolerating = exact_request()
    tolerating["exactly"]["tolerations"] = [{"key": "maintenance", "operator": "Exists", "effect": "NoSchedule"}]
    assert explained([claim("c", requests=[tolerating])], slices).allocatable
    # Before DRADeviceTaints the scheduler ignores taints.
    assert explained([claim("c")], slices, gates=ALL_ON - {"DRADeviceTaints"}).allocatable


def test_a_gpu_and_a_mig_slice_of_it_are_not_allocated_together() -> None:
    # upstream: partitionable-devices-* (KEP-4815): a counter set is shared by all its devices
    gpu = exact_request("gpu")
    mig = exact_request("mig", "mig.nvidia.com")
    assert explained([claim("c", requests=[gpu])], dynamic_mig_slices()).allocatable
    assert explained([claim("c", requests=[exact_request("mig", "mig.nvidia.com", count=2)])],
                     dynamic_mig_slices()).allocatable
    together = explained([claim("c", requests=[gpu, mig])], dynamic_mig_slices())
    assert not together.allocatable, together.verdict


def test_an_incomplete_pool_gives_no_devices() -> None:
    # upstream: incomplete pools (resourceSliceCount larger than the slices published)
    incomplete = gpu_slice("node-1")
    incomplete["spec"]["pool"]["resourceSliceCount"] = 2
    result = explained([claim("c")], [incomplete])
    assert not result.allocatable


def test_a_pool_with_a_device_name_twice_is_invalid() -> None:
    # upstream: duplicate-slice ("invalid resource pools were encountered")
    first = gpu_slice("node-1", gpus=1)
    second = gpu_slice("node-1", gpus=1)
    second["metadata"]["name"] += "-copy"
    first["spec"]["pool"]["resourceSliceCount"] = second["spec"]["pool"]["resourceSliceCount"] = 2
    result = explained([claim("c")], [first, second])
    assert not result.allocatable
    assert "invalid resource pools were encountered" in result.verdict


def test_a_device_allocated_without_a_share_is_not_shared_later() -> None:
    # upstream: consumable capacity: a dedicated allocation blocks even a device that allows multiple ones
    slices = [gpu_slice("node-1", gpus=1, shareable=True)]
    holder = claim("holder", allocated=[("gpu", "gpu-0")], node_name="node-1")
    assert not explained([claim("c")], slices, allocated_claims=[holder]).allocatable
    shared_holder = claim("holder", allocated=[("gpu", "gpu-0")], node_name="node-1", consumed={"memory": "1Gi"},
                          share_id="aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa")
    assert explained([claim("c")], slices, allocated_claims=[shared_holder]).allocatable


def test_distinct_attribute_constraints_are_kept() -> None:
    # upstream: with-distinct-constraints
    spec = claim("c", requests=[exact_request("a"), exact_request("b")])
    spec["spec"]["devices"]["constraints"] = [{"distinctAttribute": "gpu.nvidia.com/productName"}]
    same_product = [gpu_slice("node-1", gpus=2)]
    assert not explained([spec], same_product).allocatable
    two_products = [gpu_slice("node-1", devices=[gpu_device("node-1", 0), gpu_device("node-1", 1, product="NVIDIA A100")])]
    assert explained([spec], two_products).allocatable


def test_a_claim_asks_for_at_most_32_devices() -> None:
    # upstream: max-number-devices (AllocationResultsMaxSize)
    result = explained([claim("c", requests=[exact_request(count=33)])], [gpu_slice("node-1", gpus=40)])
    assert not result.allocatable
    assert "exceeds the claim limit of 32" in result.verdict


def test_a_device_in_use_is_skipped_before_its_selectors_run() -> None:
    # upstream: allocateOne checks "in use" before isSelectable; a selector failing on an
    # allocated device is never evaluated there.
    broken = gpu_device("node-1", 0)
    del broken["attributes"]["productName"]
    slices = [gpu_slice("node-1", devices=[broken, gpu_device("node-1", 1)])]
    holder = claim("holder", allocated=[("gpu", "gpu-0")], node_name="node-1")
    selector = "device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA')"
    result = explained([claim("c", requests=[exact_request(selectors=[selector])])], slices, allocated_claims=[holder])
    assert result.allocatable, result.verdict
    assert [d.device for d in result.allocation] == ["gpu-1"]


def test_match_attribute_on_a_list_attribute_answers_instead_of_crashing(tmp_path) -> None:
    # It raised TypeError (unhashable type: 'list') and exited 1, which says "the answer is no".
    device = gpu_device("node-1", 0)
    device["attributes"]["features"] = {"strings": ["mig", "nvlink"]}
    other = gpu_device("node-1", 1)
    other["attributes"]["features"] = {"strings": ["nvlink"]}
    slices = [gpu_slice("node-1", devices=[device, other])]
    spec = claim("c", requests=[exact_request("a"), exact_request("b")])
    spec["spec"]["devices"]["constraints"] = [{"matchAttribute": "gpu.nvidia.com/features"}]
    import yaml

    (tmp_path / "claim.yaml").write_text(yaml.safe_dump(spec))
    (tmp_path / "slices.yaml").write_text(yaml.safe_dump_all(slices))
    run = CliRunner().invoke(main, ["explain", "-f", str(tmp_path / "claim.yaml"), "--slices", str(tmp_path / "slices.yaml"),
                                    "--kubernetes-version", "1.36", "--feature-gates", "DRAListTypeAttributes=true"])
    # With list-type attributes the two devices share "nvlink": allocatable.
    assert run.exit_code == OK, run.output
    assert run.exit_code not in (FINDINGS, INTERNAL_ERROR)


def test_a_pods_claims_are_allocated_together_on_one_node() -> None:
    # upstream: Allocate takes all of a pod's claims for one node (small-and-large-backtrack-claims)
    claims = [claim("first"), claim("second")]
    one_gpu = [gpu_slice("node-1", gpus=1)]
    apart = explain_objects(claims=claims, slices=one_gpu, gates=ALL_ON).items
    assert all(item.allocatable for item in apart)  # each alone takes the one GPU
    together = explain_objects(claims=claims, slices=one_gpu, gates=ALL_ON, one_pod=True).items
    assert not any(item.allocatable for item in together)
    assert "together with the pod's other claims" in together[0].verdict
    two_gpus = explain_objects(claims=claims, slices=[gpu_slice("node-1", gpus=2)], gates=ALL_ON, one_pod=True).items
    assert all(item.allocatable and item.node == "node-1" for item in two_gpus)
    assert {d.device for item in two_gpus for d in item.allocation} == {"gpu-0", "gpu-1"}


def test_explain_on_one_node_with_its_labels_from_a_node_object(tmp_path) -> None:
    import json

    import yaml

    labelled = gpu_slice("rack-a", gpus=1)
    del labelled["spec"]["nodeName"]
    labelled["spec"]["nodeSelector"] = {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "rack", "operator": "In", "values": ["a"]}]}]}
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": n, "labels": {"rack": r}}}
             for n, r in (("node-a", "a"), ("node-b", "b"))]
    (tmp_path / "claim.yaml").write_text(yaml.safe_dump(claim("c")))
    (tmp_path / "slices.yaml").write_text(yaml.safe_dump_all([labelled, *nodes]))

    def on(node: str) -> Any:
        run = CliRunner().invoke(main, ["explain", "-f", str(tmp_path / "claim.yaml"), "--slices",
                                        str(tmp_path / "slices.yaml"), "--node", node, "-o", "json"])
        (item,) = json.loads(run.output)["items"]
        return run.exit_code, item

    code, item = on("node-a")
    assert code == OK and item["node"] == "node-a"
    assert item["allocation"] == [{"request": "gpu", "driver": NVIDIA, "pool": "rack-a", "device": "gpu-0"}]
    code, item = on("node-b")  # its labels do not match the slice's node selector
    assert code == FINDINGS and not item["allocatable"]
