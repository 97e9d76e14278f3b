"""Nodes that run the NVIDIA DRA driver without the ACK label and without GPU Feature Discovery
labels (GPU Operator 26.7 installs through its GPUCluster resource) are DRA nodes by what they
publish: a current ResourceSlice of gpu.nvidia.com naming the node.  The label stays an option."""

from __future__ import annotations

from kubectl_gpu.fleet import snapshot_from_objects
from kubectl_gpu.fleet.migration_plan import plan_migration
from kubectl_gpu.inspect.cluster import build_node_reports, cluster_report
from kubectl_gpu.inspect.devices import current_devices
from kubectl_gpu.inspect.dra_nodes import DEFAULT_DRA_NODE_LABELS, publishing_nodes
from tests import builders as b


def test_a_node_named_by_a_current_nvidia_slice_runs_the_driver():
    slices = [b.gpu_slice("operator-1"), b.gpu_slice("old-pool", generation=0),
              b.gpu_slice("old-pool", generation=1, gpus=2)]
    other = b.gpu_slice("tpu-1")
    other["spec"]["driver"] = "tpu.google.com"

    assert publishing_nodes([*slices, other]) == {"operator-1", "old-pool"}


def test_describe_counts_an_unlabelled_node_publishing_gpu_slices_as_a_dra_node():
    nodes = [b.node("operator-1"), b.node("plugin-1", legacy={"nvidia.com/gpu": "8"})]
    report = cluster_report(nodes, [b.gpu_slice("operator-1")], [], [], DEFAULT_DRA_NODE_LABELS)

    dra = {n["name"]: n["draNode"] for n in report.to_dict()["nodes"]}
    assert dra == {"operator-1": True, "plugin-1": False}


def test_doctor_flags_device_plugin_pods_on_an_unlabelled_driver_node():
    node = b.node("operator-1")
    pod = b.pod("old", node_name="operator-1", limits={"nvidia.com/gpu": "1"})
    reports, _ = build_node_reports([node], current_devices([b.gpu_slice("operator-1")]), {}, [pod],
                                    DEFAULT_DRA_NODE_LABELS)

    [finding] = reports[0].findings
    assert "publishing gpu.nvidia.com ResourceSlices (DRA driver) but runs 1 pod(s)" in finding.message


def test_plan_takes_an_unlabelled_node_publishing_gpu_slices_for_a_dra_node():
    plan = plan_migration(snapshot_from_objects([b.node("operator-1"), b.gpu_slice("operator-1")]))

    [gpu_node] = plan.nodes
    assert gpu_node.dra and not gpu_node.predicted


# --- plan predicts nodes not yet on DRA for the driver it will run ---------------------------------

def test_plan_predicts_shareable_gpus_for_a_driver_with_consumable_shares():
    from kubectl_gpu.inventory import DriverSettings
    from tests.fleet_cluster import node

    shares = DriverSettings.parse(gates="ConsumableShares=true", consumable_shares="memory")
    [default] = plan_migration(snapshot_from_objects([node("legacy-1", gpus=2)])).nodes
    [shared] = plan_migration(snapshot_from_objects([node("legacy-1", gpus=2)]), driver=shares).nodes

    assert shared.predicted and all(d.allow_multiple_allocations for d in shared.devices)
    assert not any(d.allow_multiple_allocations for d in default.devices)
    # GFD's nvidia.com/gpu.memory 81920 (MiB), shared by memory: all of it by default, in whole MiB.
    assert shared.devices[0].request_policies["memory"] == {
        "default": "80Gi", "validRange": {"max": "80Gi", "min": "1Mi", "step": "1Mi"}}


def test_plan_refuses_driver_gates_the_driver_refuses(tmp_path):
    import yaml
    from click.testing import CliRunner

    from kubectl_gpu.cli.main import main
    from tests.fleet_cluster import node

    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump(node("legacy-1")))
    result = CliRunner().invoke(main, ["plan", "-f", str(cluster), "--driver-gates", "DynamicMIG=true,MPSSupport=true"])

    assert result.exit_code == 2 and "mutually exclusive" in result.output
