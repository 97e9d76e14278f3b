"""`describe pod` on a Pending pod that asks for device-plugin GPUs: the next step comes from the
scheduler's own reason (the PodScheduled condition it writes, the same text as its
FailedScheduling event) and from the nodes' capacity and labels, never a canned guess that
blames DRA."""
from __future__ import annotations

from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from kubectl_gpu.inspect.pending import legacy_pending_step
from tests import builders as b

A100 = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}
H100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}


def pending(selector=None, message="0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.",
            gpus="1"):
    pod = b.pod("old", phase="Pending", limits={"nvidia.com/gpu": gpus}, unschedulable=message)
    if selector:
        pod["spec"]["nodeSelector"] = dict(selector)
    return pod


def test_a_product_selector_no_gpu_node_matches_is_named_not_blamed_on_dra():
    nodes = [b.node("gpu-1", labels=A100, legacy={"nvidia.com/gpu": "4"}),
             b.node("gpu-2", labels=A100, legacy={"nvidia.com/gpu": "4"})]
    step = legacy_pending_step(pending(H100), nodes, pods=[])
    assert "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3" in step
    assert "2 node(s) offer nvidia.com/gpu" in step and "NVIDIA-A100-SXM4-80GB" in step
    assert "DRA" not in step


def test_no_node_offering_the_resource_points_at_dra_nodes_only_when_there_are_some():
    nodes = [b.dra_node("dra-1"), b.node("cpu-1")]
    step = legacy_pending_step(pending(message="0/2 nodes are available: 2 Insufficient nvidia.com/gpu."), nodes,
                               pods=[])
    assert "no node offers nvidia.com/gpu" in step
    assert "1 node(s) serve GPUs through the DRA driver (dra-1)" in step
    assert "kubectl gpu migrate" in step
    step = legacy_pending_step(pending(message="0/1 nodes are available: 1 Insufficient nvidia.com/gpu."),
                               [b.node("cpu-1")], pods=[])
    assert "no node offers nvidia.com/gpu" in step and "DRA" not in step


def test_matching_nodes_that_are_full_are_named_with_what_holds_their_gpus():
    nodes = [b.node("gpu-1", labels=A100, legacy={"nvidia.com/gpu": "2"})]
    holders = [b.pod("a", node_name="gpu-1", limits={"nvidia.com/gpu": 2})]
    step = legacy_pending_step(pending(A100, message="0/1 nodes are available: 1 Insufficient nvidia.com/gpu."),
                               nodes, pods=holders)
    assert "gpu-1 (0 of 2 free; held by default/a)" in step


def test_cordoned_and_tainted_nodes_are_said_to_be_so():
    cordoned = b.node("gpu-1", legacy={"nvidia.com/gpu": "4"})
    cordoned["spec"] = {"unschedulable": True}
    tainted = b.node("gpu-2", legacy={"nvidia.com/gpu": "4"})
    tainted["spec"] = {"taints": [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]}
    step = legacy_pending_step(pending(message="0/2 nodes are available: ..."), [cordoned, tainted], pods=[])
    assert "gpu-1 is cordoned" in step and "gpu-2 has the taint dedicated=ml:NoSchedule" in step


def test_describe_pod_reads_the_nodes_and_quotes_the_scheduler(k8s_double):
    k8s_double.seed(b.node("gpu-1", labels=A100, legacy={"nvidia.com/gpu": "4"}), pending(H100))
    result = CliRunner().invoke(main, ["describe", "pod", "old", "--kubeconfig", k8s_double.kubeconfig_path()])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "didn't match Pod's node affinity/selector" in text
    assert "Next step:" in text and "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3" in text
    assert "no longer offer device-plugin GPUs" not in text


def test_a_toleration_without_a_key_tolerates_a_taint_of_that_value_as_kubernetes_does():
    """v1 ToleratesTaint: an empty key matches any key; Equal then compares the values."""
    node = b.node("gpu-1", legacy={"nvidia.com/gpu": "4"})
    node["spec"] = {"taints": [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]}
    pod = pending(message="0/1 nodes are available: ...")
    pod["spec"]["tolerations"] = [{"operator": "Equal", "value": "ml", "effect": "NoSchedule"}]
    assert "taint" not in legacy_pending_step(pod, [node], pods=[])


def _failed_scheduling(pod: dict, message: str, when: str, name: str) -> dict:
    """The event kube-scheduler records beside the condition (pkg/scheduler/schedule_one.go
    handleSchedulingFailure: Eventf(pod, nil, Warning, "FailedScheduling", "Scheduling", msg))."""
    meta = pod["metadata"]
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": meta.get("namespace", "default")},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"],
                               "namespace": meta.get("namespace", "default"), "uid": meta["uid"]},
            "reason": "FailedScheduling", "type": "Warning", "message": message, "lastTimestamp": when,
            "source": {"component": "default-scheduler"}}


def test_describe_pod_quotes_the_schedulers_event_when_the_pod_carries_no_condition(k8s_double):
    """The scheduler writes its reason twice, as an event and as the PodScheduled condition; where
    the condition is missing (its update failed, or a scheduler that only records events), the
    newest FailedScheduling event is the scheduler's word, as `kubectl describe pod` shows it."""
    pod = b.pod("old", phase="Pending", limits={"nvidia.com/gpu": "1"})
    pod["spec"]["nodeSelector"] = dict(H100)
    stored, = [o for o in k8s_double.seed(b.node("gpu-1", labels=A100, legacy={"nvidia.com/gpu": "4"}), pod)
               if o["kind"] == "Pod"]
    k8s_double.seed(
        _failed_scheduling(stored, "0/1 nodes are available: 1 Insufficient cpu.", "2026-01-01T10:00:00Z", "old.1"),
        _failed_scheduling(stored, "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.",
                           "2026-01-01T10:05:00Z", "old.2"))
    result = CliRunner().invoke(main, ["describe", "pod", "old", "--kubeconfig", k8s_double.kubeconfig_path()])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "Scheduling: FailedScheduling: 0/1 nodes are available: 1 node(s) didn't match Pod's node " \
           "affinity/selector." in text
    assert "Insufficient cpu" not in text
    assert "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3" in text
