"""Node pools where NVIDIA's device plugin shares each GPU: there `nvidia.com/gpu: 1` is one slot.

GPU Feature Discovery's labels (NVIDIA/k8s-device-plugin internal/lm/resource.go
@ aaccdfd2dc80554d3b67474d027923ccde39cb50, baseLabeler/getProductName): `nvidia.com/gpu.replicas` is the
replica count (1 unshared, 0 when sharing is not configured), `nvidia.com/gpu.sharing-strategy` is
`time-slicing` or `mps` only when replicas > 1 (else `none`), `nvidia.com/gpu.count` stays the physical GPU
count, and `nvidia.com/gpu.product` gains `-SHARED` when shared without renaming the resource.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from kubectl_gpu.cluster.shared_gpus import admits, device_plugin_sharing, shared_pools

DATA = Path(__file__).parent / "data"


def node(name, **labels):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"nvidia.com/gpu": str(int(labels.get("nvidia.com/gpu.count", "0"))
                                                              * max(1, int(labels.get("nvidia.com/gpu.replicas", "1"))))}}}


SLICED = {"nvidia.com/gpu.product": "NVIDIA-L4-SHARED", "nvidia.com/gpu.count": "2", "nvidia.com/gpu.replicas": "8",
          "nvidia.com/gpu.sharing-strategy": "time-slicing"}
WHOLE = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8",
         "nvidia.com/gpu.replicas": "1", "nvidia.com/gpu.sharing-strategy": "none"}


@pytest.mark.parametrize("labels, expected", [
    (SLICED, ("time-slicing", 8)),
    ({**SLICED, "nvidia.com/gpu.sharing-strategy": "mps"}, ("mps", 8)),
    (WHOLE, None),
    ({"nvidia.com/gpu.replicas": "0", "nvidia.com/gpu.sharing-strategy": "none"}, None),  # sharing not configured
    ({"nvidia.com/gpu.product": "Tesla-T4-SHARED"}, ("shared", None)),  # an older GFD: only the product says so
    ({}, None),
])
def test_sharing_is_read_from_gfd_labels(labels, expected):
    sharing = device_plugin_sharing(labels)
    assert (None if sharing is None else (sharing.strategy, sharing.replicas)) == expected


def test_nodes_alike_are_one_pool_with_its_gpus_and_slots():
    nodes = [node("l4-a", **SLICED), node("l4-b", **SLICED), node("h100-a", **WHOLE)]
    (pool,) = shared_pools(nodes)
    assert pool.nodes == ("l4-a", "l4-b") and pool.gpus == 4 and pool.slots == 32
    assert pool.sharing.strategy == "time-slicing"


DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "infer", "namespace": "ml"},
              "spec": {"replicas": 16, "selector": {"matchLabels": {"app": "infer"}},
                       "template": {"metadata": {"labels": {"app": "infer"}}, "spec": {"containers": [
                           {"name": "c", "image": "vllm", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}}


def migrate(*args):
    return CliRunner().invoke(main, ["migrate", *args, "-"], input=yaml.safe_dump(DEPLOYMENT))


def test_without_a_profile_a_warning_names_the_labels_to_look_for():
    result = migrate()
    assert result.exit_code == 0
    assert "nvidia.com/gpu.sharing-strategy" in result.stderr and "nvidia.com/gpu.replicas" in result.stderr


def test_a_profile_with_a_time_sliced_pool_names_it_and_what_its_pods_need(tmp_path):
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(yaml.safe_dump_all([node("l4-a", **SLICED), node("l4-b", **SLICED), node("h100-a", **WHOLE)]))
    result = migrate("--cluster", str(nodes), "--cluster", str(DATA / "cluster" / "h100-unlimited-shares.yaml"))
    assert result.exit_code == 0, result.output
    assert "l4-a, l4-b" in result.stderr and "time-slicing" in result.stderr and "h100-a" not in result.stderr
    assert "4 GPU(s) as 32 slots" in result.stderr
    assert "--sharing timeslicing" in result.stderr and "shares" in result.stderr
    assert "nvidia.com/gpu.replicas" not in result.stderr.split("l4-a")[0]  # no 'look for the label' hint: it was read
    # Only some GPU nodes share: which pool a pod lands in is unknown, so its GPUs stay whole.
    (template,) = [d for d in yaml.safe_load_all(result.stdout) if d and d["kind"] == "ResourceClaimTemplate"]
    assert "config" not in template["spec"]["spec"]["devices"]


def test_gpu_slots_read_nvidia_gpu_as_a_slot_of_a_shared_gpu():
    from kubectl_gpu.core import Sharing, TranslateOptions, translate_pod_template

    template = DEPLOYMENT["spec"]["template"]
    slots = translate_pod_template(template, TranslateOptions(gpu_slots=True, sharing=Sharing.TIMESLICING,
                                                              sharing_group="Deployment/infer"))
    (claim,) = slots.claims
    assert claim.kind == "ResourceClaim"  # one claim the workload's pods share
    (config,) = claim.claim_spec["devices"]["config"]
    assert config["opaque"]["parameters"]["sharing"]["strategy"] == "TimeSlicing"
    assert any("slot" in n.message for n in slots.notes)
    whole = translate_pod_template(template, TranslateOptions(sharing=Sharing.TIMESLICING, sharing_group="Deployment/infer"))
    assert [c.kind for c in whole.claims] == ["ResourceClaimTemplate"]


def test_a_profile_whose_gpu_nodes_all_time_slice_reads_nvidia_gpu_as_slots(tmp_path):
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(yaml.safe_dump_all([node("l4-a", **SLICED), node("l4-b", **SLICED)]))
    result = migrate("--cluster", str(nodes), "--cluster", str(DATA / "cluster" / "h100-unlimited-shares.yaml"),
                     "--sharing", "timeslicing")
    assert result.exit_code == 0, result.output
    assert "every GPU node in the profile shares its GPUs" in result.stderr
    kinds = [d["kind"] for d in yaml.safe_load_all(result.stdout) if d]
    assert kinds == ["ResourceClaim", "Deployment"]


def test_from_cluster_reads_the_nodes_and_names_the_time_sliced_pool():
    from tests import builders as b
    from tests.k8sdouble import K8sDouble

    with K8sDouble() as api:
        api.seed(b.node("l4-a", labels=SLICED, allocatable={"nvidia.com/gpu": "16"}),
                 b.node("h100-a", labels=WHOLE, allocatable={"nvidia.com/gpu": "8"}),
                 b.dra_node("dra-a"), *b.nvidia_device_classes(), b.gpu_slice("dra-a", 2))
        result = CliRunner(env={"KUBECONFIG": api.kubeconfig_path()}).invoke(
            main, ["migrate", "--from-cluster", "-"], input=yaml.safe_dump(DEPLOYMENT))
    assert result.exit_code == 0, result.output
    assert "node pool l4-a (NVIDIA-L4-SHARED) shares its GPUs by time-slicing" in result.stderr
    assert "2 GPU(s) as 16 slots" in result.stderr and "h100-a" not in result.stderr


def sliced_l4_pool() -> list[dict]:
    """3 L4 nodes x 2 GPUs x 4 time-sliced replicas, and a Deployment of 8 pods running on l4-1."""
    from tests import fleet_cluster as fc

    sliced = {"nvidia.com/gpu.product": "NVIDIA-L4-SHARED", "nvidia.com/gpu.count": "2",
              "nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "time-slicing"}
    nodes = [fc.node(f"l4-{i}", gpus=8, labels=sliced) for i in (1, 2, 3)]
    tmpl = fc.template("infer")
    deployment = fc.workload("Deployment", "infer", "ml", tmpl, replicas=8)
    pods = [fc.pod(f"infer-{i}", "ml", tmpl, "l4-1", owner=deployment) for i in range(8)]
    return [*nodes, deployment, *pods, fc.device_class()]


def test_plan_on_a_time_sliced_pool_in_the_api_double_counts_slots_not_gpus():
    """A Deployment of 8 pods on l4-1, one of 3 nodes x 2 GPUs x 4 replicas (8 slots each), every GPU node
    time-sliced: read as slots and shared (--sharing timeslicing: one ResourceClaim the workload's pods share
    on one GPU), it fits on the first node switched (2 GPUs); read as whole GPUs it would need 8."""
    from tests.k8sdouble import K8sDouble

    with K8sDouble() as api:
        api.seed(*sliced_l4_pool())
        runner = CliRunner(env={"KUBECONFIG": api.kubeconfig_path()})
        table = runner.invoke(main, ["plan", "--wave-size", "1", "--sharing", "timeslicing"])
        doc = yaml.safe_load(runner.invoke(main, ["plan", "--wave-size", "1", "--sharing", "timeslicing",
                                                  "-o", "json"]).output)
        whole = yaml.safe_load(runner.invoke(main, ["plan", "--wave-size", "1", "-o", "json"]).output)
    assert "SHARED GPUS: node pool l4-1, l4-2, l4-3 (NVIDIA-L4-SHARED) shares its GPUs by time-slicing" in table.output
    assert "6 GPU(s) as 24 slots" in table.output
    assert "every GPU node in the profile shares its GPUs" in table.output
    assert doc["sharedPools"] == [{"nodes": ["l4-1", "l4-2", "l4-3"], "product": "NVIDIA-L4-SHARED",
                                   "strategy": "time-slicing", "replicas": 4, "gpus": 6, "slots": 24}]
    (infer,) = doc["workloads"]
    assert [c.split("/")[0] for c in infer["claims"]] == ["ResourceClaim"]
    first = doc["waves"][0]
    assert first["nodes"] == ["l4-2"] and "Deployment/ml/infer" in first["workloads"]
    # Without a shared claim each pod takes a whole GPU: 8 do not fit on the 2 GPUs of one node.
    assert "Deployment/ml/infer" not in whole["waves"][0]["workloads"]


@pytest.mark.parametrize("api_version", ["v1", "v1beta2", "v1beta1"])
def test_the_shared_claim_of_a_time_sliced_workload_is_strictly_valid_for_1_32_to_1_37(api_version):
    from kubectl_gpu.core import ApiVersion, Sharing, TranslateOptions, translate_pod_template
    from tests.strict_validation import RELEASES, assert_strictly_valid

    result = translate_pod_template(DEPLOYMENT["spec"]["template"], TranslateOptions(
        api_version=ApiVersion.parse(api_version), gpu_slots=True, sharing=Sharing.TIMESLICING,
        sharing_group="Deployment/infer"))
    (claim,) = result.claims
    assert_strictly_valid(claim.manifest("ml"), RELEASES[api_version])


def test_a_node_selector_never_matches_a_label_the_node_lacks():
    """The scheduler's nodeSelector is labels.SelectorFromSet: an Equals requirement matches only a node
    that has the label (k8s.io/apimachinery pkg/labels/selector.go Requirement.Matches: `if
    !ls.Has(r.key) { return false }`), whatever the value spells, "None" included."""
    template = {"spec": {"nodeSelector": {"pool": "None"}}}
    assert not admits(template, {}, "n")
    assert admits(template, {"pool": "None"}, "n")


def test_in_a_mixed_cluster_a_workload_pinned_to_the_shared_pool_is_read_as_slots(tmp_path):
    """Pinned by nodeSelector to the time-sliced pool's product label, the pod can only get a slot there."""
    sliced_h100 = {**SLICED, "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-SHARED"}  # the profile's GPUs
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(yaml.safe_dump_all([node("h100-s1", **sliced_h100), node("h100-a", **WHOLE)]))
    pinned = yaml.safe_load(yaml.safe_dump(DEPLOYMENT))
    pinned["spec"]["template"]["spec"]["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-SHARED"}
    result = CliRunner().invoke(main, ["migrate", "--sharing", "timeslicing", "--cluster", str(nodes),
                                       "--cluster", str(DATA / "cluster" / "h100-unlimited-shares.yaml"), "-"],
                                input=yaml.safe_dump(pinned))
    assert result.exit_code == 0, result.output
    assert [d["kind"] for d in yaml.safe_load_all(result.stdout) if d] == ["ResourceClaim", "Deployment"]
    assert "slot" in result.stderr


def test_plan_reads_slots_per_workload_from_the_pool_its_node_selection_picks():
    """Two time-sliced pools of different replica counts (L4s at 4 per GPU, T4s at 8) beside a pool of
    whole H100s: plan reads each workload's nvidia.com/gpu from the pool its nodeSelector or required node
    affinity keeps it in, counted in THAT pool's replicas; a workload free to land on the H100s keeps whole
    GPUs.  8 pods of 1 slot are 2 L4s at 4 per GPU, 1 T4 at 8 per GPU."""
    from tests import fleet_cluster as fc
    from tests.k8sdouble import K8sDouble

    l4 = {"nvidia.com/gpu.product": "NVIDIA-L4-SHARED", "nvidia.com/gpu.count": "2",
          "nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "time-slicing"}
    t4 = {"nvidia.com/gpu.product": "Tesla-T4-SHARED", "nvidia.com/gpu.count": "2",
          "nvidia.com/gpu.replicas": "8", "nvidia.com/gpu.sharing-strategy": "time-slicing"}
    h100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8",
            "nvidia.com/gpu.replicas": "1", "nvidia.com/gpu.sharing-strategy": "none"}
    nodes = [fc.node("l4-1", gpus=8, labels=l4), fc.node("t4-1", gpus=16, labels=t4),
             fc.node("h100-1", gpus=8, labels=h100)]
    on_l4 = fc.template("on-l4", node_selector={"nvidia.com/gpu.product": "NVIDIA-L4-SHARED"})
    on_t4 = fc.template("on-t4")
    on_t4["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In",
                                                     "values": ["Tesla-T4-SHARED"]}]}]}}}
    anywhere = fc.template("anywhere")
    workloads = [fc.workload("Deployment", name, "ml", tmpl, replicas=8)
                 for name, tmpl in (("on-l4", on_l4), ("on-t4", on_t4), ("anywhere", anywhere))]
    pods = [fc.pod(f"on-l4-{i}", "ml", on_l4, "l4-1", owner=workloads[0]) for i in range(8)] + \
        [fc.pod(f"on-t4-{i}", "ml", on_t4, "t4-1", owner=workloads[1]) for i in range(8)]
    with K8sDouble() as api:
        api.seed(*nodes, *workloads, *pods, fc.device_class())
        runner = CliRunner(env={"KUBECONFIG": api.kubeconfig_path()})
        shared = yaml.safe_load(runner.invoke(main, ["plan", "--sharing", "timeslicing", "-o", "json"]).output)
        whole = yaml.safe_load(runner.invoke(main, ["plan", "-o", "json"]).output)
        table = runner.invoke(main, ["plan", "--sharing", "timeslicing"]).output
    assert "SLOTS: Deployment/ml/on-l4: its pods held 8 slot(s) at 4 per GPU: 2 GPU(s) of node pool l4-1" in table
    assert "8 per GPU where the pool ran at most 4" in table
    assert "SLOTS: Deployment/ml/on-t4: its pods held 8 slot(s) at 8 per GPU: 1 GPU(s)" in table
    by_name = {w["name"]: w for w in shared["workloads"]}
    assert by_name["on-l4"]["sharedPool"] == {"nodes": ["l4-1"], "replicas": 4, "slots": 8, "gpus": 2}
    assert by_name["on-t4"]["sharedPool"] == {"nodes": ["t4-1"], "replicas": 8, "slots": 8, "gpus": 1}
    assert "sharedPool" not in by_name["anywhere"]  # the H100s do not share: whole GPUs
    assert [c.split("/")[0] for c in by_name["on-l4"]["claims"]] == ["ResourceClaim"]
    assert [c.split("/")[0] for c in by_name["anywhere"]["claims"]] == ["ResourceClaimTemplate"]
    # One shared claim puts all 8 pods on one GPU: twice the L4 pool's 4 per GPU, within the T4s' 8.
    assert any(n.startswith("warning: all 8 pods share one ResourceClaim") and "at most 4" in n
               for n in by_name["on-l4"]["notes"])
    assert not any(n.startswith("warning: all 8 pods") for n in by_name["on-t4"]["notes"])
    # Per-pod claims give each pod a whole GPU: 8 where the L4 slots took 2, where the T4 slots took 1.
    whole_by_name = {w["name"]: w for w in whole["workloads"]}
    assert any("8 GPU(s) where its slots took 2" in n for n in whole_by_name["on-l4"]["notes"])
    assert any("8 GPU(s) where its slots took 1" in n for n in whole_by_name["on-t4"]["notes"])


# --- driver v0.5 consumable shares --------------------------------------------------------------------
# With ConsumableShares on and --consumable-shares N, the NVIDIA DRA driver publishes each GPU with
# allowMultipleAllocations and an integer `shares` capacity N whose requestPolicy defaults to 1 in steps
# of 1 (cmd/gpu-kubelet-plugin/consumable_shares.go applyConsumableShares, main 95932046; inventory's
# prediction, tests/test_inventory_consumable_shares.py): a slot of a time-sliced GPU is one of them.

def shares_slices(tmp_path, count: int = 8):
    """What the driver publishes for the H100 fixture with ConsumableShares and --consumable-shares COUNT."""
    from kubectl_gpu.inventory import DriverSettings
    from tests.test_inventory_dynamic_mig import slices
    from tests.test_inventory_fake_nvml import DATA as NVML

    import json

    node = json.loads((NVML / "h100-80gb-hbm3.json").read_text())
    documents = slices(node, DriverSettings.parse(gates="ConsumableShares=true", consumable_shares=str(count)),
                       name="dra-h100-1")
    for index, document in enumerate(documents):
        document["metadata"] = {"name": f"dra-h100-1-gpu-{index}"}
    path = tmp_path / "shares-slices.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    return path


def test_a_slot_with_slot_shares_is_a_per_pod_claim_for_one_share_of_a_gpu():
    from kubectl_gpu.core import Sharing, TranslateOptions, translate_pod_template
    from tests.strict_validation import RELEASES, assert_strictly_valid

    result = translate_pod_template(DEPLOYMENT["spec"]["template"], TranslateOptions(
        gpu_slots=True, slot_shares=True, sharing=Sharing.AUTO, sharing_group="Deployment/infer"))

    (claim,) = result.claims
    assert claim.kind == "ResourceClaimTemplate"  # per pod: pods spread over GPUs, one share each
    (request,) = claim.claim_spec["devices"]["requests"]
    assert request["exactly"]["capacity"] == {"requests": {"shares": "1"}} and request["exactly"]["count"] == 1
    assert "config" not in claim.claim_spec["devices"]  # no TimeSlicing config: the shares do the sharing
    assert any("shares of one GPU" in n.message for n in result.notes)
    assert_strictly_valid(claim.manifest("ml"), RELEASES["v1"])


def test_two_slots_are_two_shares_of_one_gpu():
    from kubectl_gpu.core import TranslateOptions, translate_pod_template

    template = yaml.safe_load(yaml.safe_dump(DEPLOYMENT["spec"]["template"]))
    template["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 2
    (claim,) = translate_pod_template(template, TranslateOptions(gpu_slots=True, slot_shares=True)).claims
    (request,) = claim.claim_spec["devices"]["requests"]
    assert request["exactly"]["count"] == 1 and request["exactly"]["capacity"]["requests"] == {"shares": "2"}


def test_migrate_turns_a_time_sliced_pools_slots_into_shares_where_the_clusters_gpus_publish_them(tmp_path):
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(yaml.safe_dump_all([node("l4-a", **SLICED), node("l4-b", **SLICED)]))

    result = migrate("--cluster", str(nodes), "--cluster", str(shares_slices(tmp_path)))

    assert result.exit_code == 0, result.output  # the claim allocates on the published GPU
    (template,) = [d for d in yaml.safe_load_all(result.stdout) if d and d["kind"] == "ResourceClaimTemplate"]
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["capacity"] == {"requests": {"shares": "1"}}
    assert "slots become per-pod claims for shares of a GPU (the cluster's NVIDIA GPUs publish shares (8))" \
        in result.stderr
    assert "ConsumableShares feature gate on" in result.stderr  # what it needs


def test_without_published_shares_the_pools_slots_stay_a_shared_time_slicing_claim_and_the_report_says_why(tmp_path):
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(yaml.safe_dump_all([node("l4-a", **SLICED), node("l4-b", **SLICED)]))

    result = migrate("--cluster", str(nodes), "--cluster", str(DATA / "cluster" / "h100-unlimited-shares.yaml"))

    assert result.exit_code == 0, result.output
    assert "are not claims for a GPU's shares (no NVIDIA GPU publishes shares)" in result.stderr
    assert "ConsumableShares feature gate on" in result.stderr and "--sharing timeslicing" in result.stderr
    timesliced = migrate("--cluster", str(nodes), "--cluster", str(DATA / "cluster" / "h100-unlimited-shares.yaml"),
                         "--sharing", "timeslicing")
    assert [d["kind"] for d in yaml.safe_load_all(timesliced.stdout) if d] == ["ResourceClaim", "Deployment"]


def test_plan_with_a_driver_publishing_shares_counts_a_time_sliced_pools_slots_as_shares():
    """Plan's prediction of the pool's GPUs under driver v0.5 with ConsumableShares and --consumable-shares 4:
    each of the 8 pods on l4-1 gets its own claim for one share, and 2 GPUs x 4 shares hold all 8 on the
    first node switched; as whole GPUs they would not fit."""
    from tests.k8sdouble import K8sDouble

    shares = ["--driver-gates", "ConsumableShares=true", "--consumable-shares", "4",
              "--feature-gates", "DRAConsumableCapacity=true"]  # the double serves 1.34, where it is off
    with K8sDouble() as api:
        api.seed(*sliced_l4_pool())
        runner = CliRunner(env={"KUBECONFIG": api.kubeconfig_path()})
        table = runner.invoke(main, ["plan", "--wave-size", "1", *shares])
        doc = yaml.safe_load(runner.invoke(main, ["plan", "--wave-size", "1", *shares, "-o", "json"]).output)
        whole = yaml.safe_load(runner.invoke(main, ["plan", "--wave-size", "1", "-o", "json"]).output)
        three = [*shares[:3], "3", *shares[4:]]
        fewer = yaml.safe_load(runner.invoke(main, ["plan", "--wave-size", "1", *three, "-o", "json"]).output)

    assert "slots become per-pod claims for shares of a GPU (the driver predicted for its GPU nodes publishes 4 " \
           "shares per GPU)" in table.output
    (infer,) = doc["workloads"]
    assert [c.split("/")[0] for c in infer["claims"]] == ["ResourceClaimTemplate"]
    first = doc["waves"][0]
    assert first["nodes"] == ["l4-2"] and "Deployment/ml/infer" in first["workloads"]
    assert "Deployment/ml/infer" not in whole["waves"][0]["workloads"]
    # The shares are counted: 2 GPUs x 3 shares hold 6 of the 8 pods, so one node is not enough.
    assert "Deployment/ml/infer" not in fewer["waves"][0]["workloads"]
