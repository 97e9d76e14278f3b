"""`plan` places migrated pods as Kubernetes' structured allocator would (issue 24): all claims of
a pod together, on one node, with the devices earlier placements took counted as allocated.  Each
case below was answered wrongly by the greedy first fit fleet/capacity.py had before; the expected
answers follow k8s.io/dynamic-resource-allocation structured at 3d036712 (the allocatortesting
cases named in each test, transcribed in tests/test_allocator_upstream.py)."""

from __future__ import annotations

from kubectl_gpu.fleet import snapshot_from_objects
from kubectl_gpu.fleet.capacity import DraPool, gpu_nodes
from kubectl_gpu.fleet.migration_plan import plan_migration
from kubectl_gpu.inspect.dra_nodes import DEFAULT_DRA_NODE_LABELS
from tests import builders
from tests.builders import claim, exact_request, gpu_device, gpu_slice
from tests.fleet_cluster import container, template, workload

BIG = "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) >= 0"


def pool_of(objects: list[dict]) -> DraPool:
    """The fleet's DRA capacity over these Nodes and ResourceSlices, every node on DRA."""
    nodes = gpu_nodes([o for o in objects if o["kind"] == "Node"],
                      [o for o in objects if o["kind"] == "ResourceSlice"], DEFAULT_DRA_NODE_LABELS)
    pool = DraPool(builders.nvidia_device_classes(), nodes)
    for gpu_node in nodes:
        pool.add_node(gpu_node)
    return pool


def dynamic_mig(node: str) -> list[dict]:
    return [builders.dra_node(node), *builders.dynamic_mig_slices(node)]


def test_a_pod_greedy_refuses_is_placed_by_backtracking_over_its_requests() -> None:
    # upstream: small-and-large-backtrack-requests.  The large GPU comes first: a first fit gives
    # it to the small request and then finds nothing for the large one.
    objects = [builders.dra_node("node-1"), gpu_slice("node-1", devices=[
        gpu_device("node-1", 0, memory="80Gi"), gpu_device("node-1", 1, memory="40Gi")])]
    pool = pool_of(objects)
    pod = claim("c", requests=[exact_request("small"), exact_request("large", selectors=[BIG])])
    assert pool.place([pod]) == "node-1"
    assert pool.used == 2


def test_a_pods_claims_are_placed_together_on_one_node() -> None:
    # upstream allocates every claim of a pod in one Allocate call, on one node
    objects = [builders.dra_node("node-1"), gpu_slice("node-1", gpus=1),
               builders.dra_node("node-2"), gpu_slice("node-2", gpus=2)]
    pool = pool_of(objects)
    assert pool.place([claim("a"), claim("b")]) == "node-2"
    assert pool.place([claim("a"), claim("b")]) is None
    assert pool.place([claim("a")]) == "node-1"


def test_a_full_gpu_and_a_mig_slice_of_it_are_never_promised_at_once() -> None:
    # upstream: partitionable devices (KEP-4815): the whole GPU uses the counter set up
    pool = pool_of(dynamic_mig("node-1"))
    assert pool.place([claim("whole")]) == "node-1"
    assert pool.place([claim("slice", requests=[exact_request("mig", "mig.nvidia.com")])]) is None


def test_two_mig_slices_share_the_gpu_their_counters_allow() -> None:
    pool = pool_of(dynamic_mig("node-1"))
    mig = claim("slice", requests=[exact_request("mig", "mig.nvidia.com")])
    assert pool.place([mig]) == "node-1"
    assert pool.place([mig]) == "node-1"
    assert pool.place([claim("whole")]) is None


def test_a_placement_undone_gives_its_counters_back() -> None:
    pool = pool_of(dynamic_mig("node-1"))
    mark = pool.mark()
    assert pool.place([claim("whole")]) == "node-1"
    pool.undo(mark)
    assert pool.place([claim("slice", requests=[exact_request("mig", "mig.nvidia.com")])]) == "node-1"


def test_a_tainted_device_takes_no_migrated_pod() -> None:
    # upstream: tainted-device (KEP-5055): NoSchedule keeps a device from a request that does not
    # tolerate it
    tainted = gpu_device("node-1", 1)
    tainted["taints"] = [{"key": "maintenance", "effect": "NoSchedule"}]
    pool = pool_of([builders.dra_node("node-1"), gpu_slice("node-1", devices=[gpu_device("node-1", 0), tainted])])
    assert pool.place([claim("a")]) == "node-1"
    assert pool.place([claim("b")]) is None


def test_plan_does_not_move_a_mig_workload_onto_a_gpu_a_whole_gpu_workload_took() -> None:
    """A plan over a DynamicMIG node: the whole-GPU workload moves in wave 0, the MIG workload
    would need the same GPU's counters and waits (the greedy fit promised both)."""
    whole = template("whole", container("1"))
    sliced = template("sliced", container("1", resource="nvidia.com/mig-3g.40gb"))
    objects = [*dynamic_mig("dra-1"), *builders.nvidia_device_classes(),
               workload("Deployment", "a-whole", "ml", whole, 1), workload("Deployment", "b-sliced", "ml", sliced, 1)]
    plan = plan_migration(snapshot_from_objects(objects))
    assert plan.waves[0].workloads == ["Deployment/ml/a-whole"]
    assert plan.unplaced == ["Deployment/ml/b-sliced"]


def test_plan_does_not_move_a_workload_onto_a_tainted_gpu() -> None:
    tainted = gpu_device("dra-1", 1)
    tainted["taints"] = [{"key": "maintenance", "effect": "NoExecute"}]
    objects = [builders.dra_node("dra-1"), gpu_slice("dra-1", devices=[gpu_device("dra-1", 0), tainted]),
               *builders.nvidia_device_classes(),
               *(workload("Deployment", f"w{i}", "ml", template(f"w{i}"), 1) for i in range(2))]
    plan = plan_migration(snapshot_from_objects(objects))
    assert plan.waves[0].workloads == ["Deployment/ml/w0"]
    assert plan.unplaced == ["Deployment/ml/w1"]


def test_plan_reads_device_taint_rules_from_files_and_the_cluster(k8s_double):
    """A DeviceTaintRule (KEP-5055) taints gpu-1 of dra-1: only one of two one-GPU workloads moves."""
    rule = {"apiVersion": "resource.k8s.io/v1beta2", "kind": "DeviceTaintRule", "metadata": {"name": "gpu-1"},
            "spec": {"deviceSelector": {"pool": "dra-1", "device": "gpu-1"},
                     "taint": {"key": "maintenance", "effect": "NoSchedule"}}}
    objects = [builders.dra_node("dra-1"), gpu_slice("dra-1", gpus=2), *builders.nvidia_device_classes(),
               *(workload("Deployment", f"w{i}", "ml", template(f"w{i}"), 1) for i in range(2))]
    plan = plan_migration(snapshot_from_objects([*objects, rule]))
    assert plan.waves[0].workloads == ["Deployment/ml/w0"] and plan.unplaced == ["Deployment/ml/w1"]

    from kubectl_gpu.fleet.cluster_io import fetch_snapshot
    from kubectl_gpu.k8s import Client

    k8s_double.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}}, *objects, rule)
    snapshot = fetch_snapshot(Client(k8s_double.api_client().configuration))
    assert [r["metadata"]["name"] for r in snapshot.taint_rules] == ["gpu-1"]
