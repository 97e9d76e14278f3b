"""`kubectl gpu plan`: what each workload becomes, what cannot move and why, and checked node waves.

Rules taken from upstream behaviour:
- a Job's pod template is immutable (batch/v1 validation: "field is immutable"), pod containers
  too: such objects are recreated, never patched;
- controllers own their children (ownerReferences controller=true): patching a ReplicaSet a
  Deployment owns is reverted by the Deployment controller;
- the scheduler sums extended resources per node (NodeResourcesFit): a drained pod needs a node
  with that much free;
- an eviction that would break a PodDisruptionBudget is refused with 429, so a drain through the
  eviction API never finishes while a budget allows no disruption;
- a drain deletes a bare pod for good (kubectl drain refuses without --force for that reason).
"""
from __future__ import annotations

import json

import yaml
from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from kubectl_gpu.fleet import snapshot_from_objects
from kubectl_gpu.fleet.migration_plan import plan_migration
from tests.fleet_cluster import (container, device_class, mixed_cluster, node, owned_by, pdb, pod, resource_slice,
                                 template, workload)


def statuses(plan):
    return {w.ref: w.status for w in plan.workloads}


def test_every_gpu_workload_gets_a_verdict_that_says_why():
    plan = plan_migration(snapshot_from_objects(mixed_cluster()), wave_size=2)
    assert statuses(plan) == {
        "CronJob/ml/nightly": "migrate", "DaemonSet/ml/probe": "migrate", "Deployment/ml/broken": "blocked",
        "Deployment/ml/h100": "blocked", "Deployment/ml/notebook": "migrate", "Job/ml/nightly-2891": "owned",
        "Job/ml/train": "recreate", "PyTorchJob/ml/bert": "migrate", "Deployment/serving/infer": "migrate",
        "Deployment/serving/web": "migrate", "ReplicaSet/serving/infer-7d9f": "owned",
        "ReplicaSet/serving/web-7d9f": "owned", "StatefulSet/serving/store": "migrate"}
    by_ref = {w.ref: w for w in plan.workloads}
    assert "vcuda-core: 150 is not valid" in by_ref["Deployment/ml/broken"].reasons[0]
    assert by_ref["Deployment/ml/h100"].reasons[0].startswith("no DRA device in the cluster satisfies")
    assert "owned by CronJob/ml/nightly" in by_ref["Job/ml/nightly-2891"].reasons[0]
    assert "immutable" in by_ref["Job/ml/train"].reasons[0]
    assert by_ref["Deployment/serving/web"].pods == 2
    assert [c["kind"] for c in by_ref["Deployment/serving/web"].claims] == ["ResourceClaimTemplate"]


def test_cpu_only_workloads_are_not_in_the_plan():
    plan = plan_migration(snapshot_from_objects(mixed_cluster()))
    assert "Deployment/serving/cpu-only" not in statuses(plan)


def test_waves_move_legacy_pods_only_where_there_is_room_and_refuse_with_the_numbers():
    plan = plan_migration(snapshot_from_objects(mixed_cluster()), wave_size=2)
    assert [w.nodes for w in plan.waves] == [[], ["legacy-4", "legacy-3"], ["legacy-1"], ["legacy-2"]]
    assert plan.waves[1].moved_pods == ["serving/store-1"]
    assert [p.to_dict() for p in plan.waves[1].pdbs] == [
        {"pdb": "serving/store", "evicts": 1, "disruptionsAllowed": 1, "currentHealthy": 2, "desiredHealthy": 1}]
    last = plan.waves[-1]
    assert last.refused == ["1 legacy pod(s) would be stranded: they need nvidia.com/gpu=2 more than the 0 legacy "
                            "node(s) left have free (free: nothing): ml/train-0; use a smaller wave or migrate "
                            "their workloads first"]
    assert plan.refused


def test_a_wave_that_fails_is_halved_before_it_is_refused():
    nodes = [node(f"n{i}", gpus=2) for i in range(4)]
    tmpl = template("a")
    dep = workload("Deployment", "a", "ml", tmpl, 3)
    pods = [pod(f"a-{i}", "ml", tmpl, f"n{i}", dep) for i in range(3)]
    plan = plan_migration(snapshot_from_objects([*nodes, dep, *pods]), wave_size=4)
    # 4 nodes at once strand 3 pods (no room left); halved, n3 (empty) and n0 go: a-0 moves.
    assert plan.waves[0].nodes == ["n3", "n0"] and not plan.waves[0].refused
    assert plan.waves[0].moved_pods == ["ml/a-0"]


def test_a_budget_that_allows_no_disruption_refuses_the_wave():
    # An H100 selector no device here satisfies: the workload stays on the device plugin, so
    # switching its node needs the eviction its budget refuses.
    tmpl = template("db", node_selector={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"})
    sts = workload("StatefulSet", "db", "ml", tmpl, 1)
    objects = [node("n1"), node("n2"), sts, pod("db-0", "ml", tmpl, "n1", sts), pdb("db", "ml", "db", 1)]
    plan = plan_migration(snapshot_from_objects(objects), wave_size=1)
    refused = [w for w in plan.waves if w.refused]
    assert refused and any("PodDisruptionBudget ml/db allows no disruption (needs 1 healthy pods, has 1)" in r
                           for r in refused[0].refused)
    assert refused[0].nodes == ["n1"]


def test_a_bare_gpu_pod_blocks_its_node():
    tmpl = template("debug")
    objects = [node("n1"), node("n2"), pod("debug", "ml", tmpl, "n2")]
    plan = plan_migration(snapshot_from_objects(objects), wave_size=1)
    assert statuses(plan) == {"Pod/ml/debug": "recreate"}
    refusal = next(w for w in plan.waves if w.refused)
    assert refusal.nodes == ["n2"] and "1 bare pod(s) would be deleted by the drain" in refusal.refused[0]


def test_migrated_pods_must_fit_on_dra_devices():
    """Four single-GPU pods, one DRA node with two GPUs: two pods' workloads move now, the rest
    after the next wave adds devices."""
    tmpls = [template(f"w{i}") for i in range(4)]
    deps = [workload("Deployment", f"w{i}", "ml", t, 1) for i, t in enumerate(tmpls)]
    pods = [pod(f"w{i}-0", "ml", t, "legacy-1", d) for i, (t, d) in enumerate(zip(tmpls, deps))]
    objects = [node("dra-1", dra=True), resource_slice("dra-1", gpus=2), device_class(), node("legacy-1", gpus=4),
               node("legacy-2", gpus=4), *deps, *pods]
    plan = plan_migration(snapshot_from_objects(objects), wave_size=1)
    assert plan.waves[0].index == 0 and plan.waves[0].workloads == ["Deployment/ml/w0", "Deployment/ml/w1"]
    assert plan.waves[0].dra_devices_used == 2
    assert plan.waves[1].nodes == ["legacy-2"]
    assert plan.waves[1].workloads == ["Deployment/ml/w2", "Deployment/ml/w3"]


def test_a_workload_that_half_fits_takes_nothing_and_leaves_room_for_the_next():
    """All-or-nothing placement: a three-replica, 2-GPU workload fits only one pod on each of two
    3-GPU DRA nodes, so it takes nothing; the single-GPU workloads after it still land on those
    nodes (every GPU: 3 + 3 = 6 single-GPU pods)."""
    big = template("big", container("2"))
    smalls = [template(f"s{i}") for i in range(6)]
    objects = [node("dra-1", dra=True), resource_slice("dra-1", gpus=3), node("dra-2", dra=True),
               resource_slice("dra-2", gpus=3), device_class(),
               workload("Deployment", "a-big", "ml", big, 3),
               *(workload("Deployment", f"s{i}", "ml", t, 1) for i, t in enumerate(smalls))]
    plan = plan_migration(snapshot_from_objects(objects))
    assert plan.waves[0].workloads == [f"Deployment/ml/s{i}" for i in range(6)]
    assert plan.waves[0].dra_devices_used == 6
    assert plan.unplaced == ["Deployment/ml/a-big"]


def allocated_claim(name: str, namespace: str, node_name: str, *devices: str) -> dict:
    """A ResourceClaim the scheduler has allocated: status.allocation.devices.results name each
    device by driver, pool and device (resource.k8s.io/v1 DeviceRequestAllocationResult)."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}},
            "status": {"allocation": {"devices": {"results": [
                {"request": "gpu", "driver": "gpu.nvidia.com", "pool": node_name, "device": d} for d in devices]}}}}


def test_devices_allocated_to_existing_claims_are_not_offered_to_migrated_workloads():
    """A DRA-native workload already holds one of the DRA node's two GPUs (its claim's
    status.allocation): only one of two single-GPU workloads fits now, the other waits for the
    next wave, and the numbers count the allocated device."""
    tmpls = [template(f"w{i}") for i in range(2)]
    deps = [workload("Deployment", f"w{i}", "ml", t, 1) for i, t in enumerate(tmpls)]
    objects = [node("dra-1", dra=True), resource_slice("dra-1", gpus=2), device_class(), node("legacy-1", gpus=4),
               node("legacy-2", gpus=4), allocated_claim("native-gpu", "research", "dra-1", "gpu-1"), *deps,
               *(pod(f"w{i}-0", "ml", t, "legacy-1", d) for i, (t, d) in enumerate(zip(tmpls, deps)))]
    plan = plan_migration(snapshot_from_objects(objects), wave_size=1)
    wave0 = plan.waves[0]
    assert wave0.index == 0 and wave0.workloads == ["Deployment/ml/w0"]
    assert (wave0.dra_devices, wave0.dra_devices_used, wave0.dra_devices_allocated) == (2, 2, 1)
    assert wave0.to_dict()["dra"] == {"nodes": 1, "devices": 2, "devicesUsed": 2, "allocatedBefore": 1}
    assert plan.waves[1].nodes == ["legacy-2"] and plan.waves[1].workloads == ["Deployment/ml/w1"]


def test_a_device_held_only_with_admin_access_is_still_offered():
    """KEP-5018 admin access: "devices allocated with admin access ... are not considered in use"
    by the allocator (k8s.io/dynamic-resource-allocation/structured allocator.go skips
    adminAccess results when it counts allocated devices), so a monitoring claim's device
    still takes a migrated workload: both workloads fit the two GPUs in the first wave."""
    tmpls = [template(f"w{i}") for i in range(2)]
    deps = [workload("Deployment", f"w{i}", "ml", t, 1) for i, t in enumerate(tmpls)]
    monitor = allocated_claim("dcgm-monitor", "monitoring", "dra-1", "gpu-1")
    monitor["status"]["allocation"]["devices"]["results"][0]["adminAccess"] = True
    objects = [node("dra-1", dra=True), resource_slice("dra-1", gpus=2), device_class(), node("legacy-1", gpus=4),
               node("legacy-2", gpus=4), monitor, *deps,
               *(pod(f"w{i}-0", "ml", t, "legacy-1", d) for i, (t, d) in enumerate(zip(tmpls, deps)))]
    plan = plan_migration(snapshot_from_objects(objects), wave_size=1)
    assert plan.waves[0].dra_devices_allocated == 0
    assert plan.waves[0].workloads == ["Deployment/ml/w0", "Deployment/ml/w1"]
    assert plan.waves[0].dra_devices_used == 2


def test_a_running_pod_whose_claim_is_allocated_is_counted_once():
    """A migrated pod running on a DRA node holds its devices through its ResourceClaim (the
    claim made from its template, named in status.resourceClaimStatuses): counted from the
    allocation, not a second time from the template."""
    claim_template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                      "metadata": {"name": "one-gpu", "namespace": "ml"},
                      "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                          "deviceClassName": "gpu.nvidia.com"}}]}}}}
    running = pod("dra-0", "ml", template("dra"), "dra-1")
    running["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    running["spec"]["containers"][0].pop("resources")
    running["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "dra-0-gpu-x7k2p"}]
    dep = workload("Deployment", "w0", "ml", template("w0"), 1)
    objects = [node("dra-1", dra=True), resource_slice("dra-1", gpus=2), device_class(), claim_template, running,
               allocated_claim("dra-0-gpu-x7k2p", "ml", "dra-1", "gpu-0"), dep]
    plan = plan_migration(snapshot_from_objects(objects))
    assert plan.waves[0].workloads == ["Deployment/ml/w0"] and plan.waves[0].dra_devices_used == 2


def test_devices_of_nodes_not_yet_on_dra_are_predicted_from_gfd_labels():
    plan = plan_migration(snapshot_from_objects([node("legacy-1", gpus=4)]))
    (gpu_node,) = plan.nodes
    assert gpu_node.predicted and len(gpu_node.devices) == 4
    device = gpu_node.devices[0]
    assert device.attribute("productName") == "NVIDIA A100-SXM4-80GB"
    assert device.attribute("architecture") == "Ampere"


def test_plan_cli_reads_files_and_prints_a_table_and_yaml(tmp_path):
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all(mixed_cluster()))
    runner = CliRunner()
    table = runner.invoke(main, ["plan", "-f", str(cluster), "--wave-size", "2"])
    assert table.exit_code == 1  # the answer is no: the last wave is refused while the Job runs
    assert "WAVE 1: switch 2 node(s): legacy-4, legacy-3" in table.output
    assert "REFUSED" in table.output and "ml/train-0" in table.output
    as_yaml = runner.invoke(main, ["plan", "-f", str(cluster), "-o", "yaml"])
    doc = yaml.safe_load(as_yaml.output)
    assert doc["kind"] == "MigrationPlan" and {w["name"] for w in doc["workloads"]} >= {"web", "train", "bert"}
    as_json = json.loads(runner.invoke(main, ["plan", "-f", str(cluster), "-o", "json"]).output)
    assert as_json["waves"][0]["workloads"]


def test_plan_cli_leaves_out_a_document_that_is_not_yaml_and_says_where(tmp_path):
    broken = tmp_path / "cluster.yaml"
    broken.write_text(yaml.safe_dump(node("n1")) + "---\nkind: [unclosed\n")
    result = CliRunner().invoke(main, ["plan", "-f", str(broken), "-o", "json"])
    assert result.exit_code == 0, result.output
    assert f"{broken}:" in result.stderr and "left out of the plan" in result.stderr
    assert [n["name"] for n in json.loads(result.stdout)["nodes"]] == ["n1"]
    assert "Traceback" not in result.stderr


def test_plan_cli_names_a_missing_file(tmp_path):
    result = CliRunner().invoke(main, ["plan", "-f", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2 and "nope.yaml" in result.output


def test_owned_children_are_never_planned_for_a_patch():
    tmpl = template("x", container("1"))
    dep = workload("Deployment", "x", "ml", tmpl, 1)
    rs = owned_by(workload("ReplicaSet", "x-1", "ml", tmpl, 1), dep)
    plan = plan_migration(snapshot_from_objects([node("n1"), dep, rs]))
    by_ref = {w.ref: w for w in plan.workloads}
    assert by_ref["ReplicaSet/ml/x-1"].status == "owned" and not by_ref["ReplicaSet/ml/x-1"].patch


def test_the_translation_input_projection_translates_exactly_like_the_whole_template():
    """plan translates each distinct projection once; that is only sound while the core reads
    nothing else of a pod template. Every example manifest and fleet fixture must agree."""
    from pathlib import Path

    from kubectl_gpu.core import Sharing, TranslateOptions, translate_pod_template
    from kubectl_gpu.fleet.workloads import Translations, pod_demand, translation_input
    from kubectl_gpu.manifests.locate import find_pod_sites
    from kubectl_gpu.manifests.tree_patch import resolve

    objects = mixed_cluster()
    for path in sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.yaml")):
        objects.extend(d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict))
    checked = 0
    for obj in objects:
        for site in find_pod_sites(obj):
            template = resolve(obj, site.pointer)
            assert Translations().demand(template) == pod_demand(template)
            for sharing in (Sharing.CONSUMABLE, Sharing.MPS):
                options = TranslateOptions(sharing=sharing, sharing_group="Deployment/x", gpu_memory="80Gi")
                assert translate_pod_template(translation_input(template), options) == \
                    translate_pod_template(template, options), (obj.get("kind"), obj.get("metadata"))
                checked += 1
    assert checked > 20


def _paths(node, path=()):
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, path + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, path + (index,))


def test_no_malformed_object_crashes_the_plan():
    """Any field of any object replaced by a value of the wrong shape: plan still answers (the
    object is left out or blocked), it never raises."""
    import copy
    import random

    rng = random.Random(13)
    garbage = [None, "x", 7, -1, [], {}, [None], {"a": None}, "1.5", True]
    base = mixed_cluster()
    for _ in range(300):
        objects = copy.deepcopy(base)
        target = rng.choice(objects)
        path = rng.choice([p for p in _paths(target) if p])
        parent = target
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = rng.choice(garbage)
        plan = plan_migration(snapshot_from_objects(objects), wave_size=2)
        plan.to_dict()


def test_a_malformed_object_is_left_out_with_what_is_wrong(tmp_path):
    bad = node("n2")
    bad["status"]["allocatable"] = ["nvidia.com/gpu"]
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all([node("n1"), bad]))
    result = CliRunner().invoke(main, ["plan", "-f", str(cluster), "-o", "json"])
    assert "warning: Node/n2: status.allocatable must be an object, not list: left out of the plan" in result.stderr
    assert [n["name"] for n in json.loads(result.stdout)["nodes"]] == ["n1"]


def test_a_slice_the_profile_cannot_read_is_a_warning_not_a_crash(tmp_path):
    """A ResourceSlice whose capacity is not a quantity (the scheduler could not use it either)
    leaves the plan without a cluster profile, saying so; the rest is planned."""
    broken = resource_slice("dra-1")
    broken["spec"]["devices"][0]["capacity"]["memory"]["value"] = "lots"
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all([node("dra-1", dra=True), broken, node("legacy-1")]))
    result = CliRunner().invoke(main, ["plan", "-f", str(cluster), "-o", "json"])
    assert result.exit_code == 0, result.output
    assert "warning: the cluster profile (" in result.stderr and "left out of the plan" in result.stderr
    assert [n["name"] for n in json.loads(result.stdout)["nodes"]] == ["dra-1", "legacy-1"]


def _beside_claim(app: str, claim_template: str) -> dict:
    """A pod template whose container asks for a device-plugin GPU and uses a claim of the pod."""
    tmpl = template(app)
    tmpl["spec"]["resourceClaims"] = [{"name": "extra", "resourceClaimTemplateName": claim_template}]
    tmpl["spec"]["containers"][0]["resources"]["claims"] = [{"name": "extra"}]
    return tmpl


def _claim_template(name: str, namespace: str, device_class: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"spec": {"devices": {"requests": [{"name": "d", "exactly": {"deviceClassName": device_class}}]}}}}


def test_plan_checks_a_legacy_gpu_beside_a_claim_against_the_claims_of_its_namespace(tmp_path):
    """The rule `migrate` applies (tests/test_core_existing_claims.py), with the claims the cluster
    holds: NVIDIA's DRA driver makes a ComputeDomain's channel template with the IMEX class
    compute-domain-default-channel.nvidia.com (cmd/compute-domain-controller/resourceclaimtemplate.go),
    no GPU, so a device-plugin GPU beside it is fine; a gpu.nvidia.com claim beside one is a GPU asked
    for twice (the device plugin and the driver can hand out the same GPU), refused with migrate's words.
    Claims are namespaced: the same template where that claim template does not exist is only warned."""
    compute_domain = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
                      "metadata": {"name": "imex", "namespace": "ml", "uid": "uid-cd-imex"},
                      "spec": {"numNodes": 2, "channel": {"resourceClaimTemplate": {"name": "imex-channel"}}}}
    gpu_template = _claim_template("one-gpu", "serving", "gpu.nvidia.com")
    twice = workload("Deployment", "twice", "serving", _beside_claim("twice", "one-gpu"))
    objects = [*mixed_cluster(), compute_domain, gpu_template, twice,
               workload("Deployment", "nccl", "ml", _beside_claim("nccl", "imex-channel")),
               workload("Deployment", "elsewhere", "ml", _beside_claim("elsewhere", "one-gpu"))]
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all(objects))
    result = CliRunner().invoke(main, ["plan", "-f", str(cluster), "-o", "json"])
    by_name = {w["name"]: w for w in json.loads(result.stdout)["workloads"]}

    nccl = by_name["nccl"]
    assert nccl["status"] == "migrate", nccl
    assert not any("not checked" in n or "twice" in n for n in nccl.get("notes", ())), nccl

    assert by_name["twice"]["status"] == "blocked"
    [reason] = by_name["twice"]["reasons"]
    migrated = CliRunner().invoke(main, ["migrate", "-"], input=yaml.safe_dump_all([gpu_template, twice]))
    assert migrated.exit_code == 3 and "asks for GPUs twice, by nvidia.com/gpu and by ResourceClaim 'extra'" in reason
    assert reason in migrated.stderr, "the same words as migrate"

    elsewhere = by_name["elsewhere"]
    assert elsewhere["status"] == "migrate"
    assert any("claim 'extra' (ResourceClaimTemplate one-gpu), which is not in the input, so it was not checked" in n
               for n in elsewhere["notes"]), elsewhere


def test_gfd_labels_written_as_numbers_are_read_as_their_text(tmp_path):
    """plan -f reads hand-edited node dumps, where a label value may be written unquoted (the API
    server stores only strings); the product is then the number's text, as for the other GFD
    labels, instead of an AttributeError (found by a plan -f mutation fuzz)."""
    odd = node("legacy-1", labels={"nvidia.com/gpu.product": 1.5, "nvidia.com/gpu.count": 4})
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all([odd]))
    result = CliRunner().invoke(main, ["plan", "-f", str(cluster), "-o", "json"], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    assert [n["name"] for n in json.loads(result.stdout)["nodes"]] == ["legacy-1"]


def test_an_object_given_twice_is_planned_once(tmp_path):
    """Two overlapping dumps (`kubectl get nodes -o yaml` and `kubectl get all,nodes -o yaml`) hold
    the same objects twice; a cluster holds one object per kind, namespace and name, so the plan
    counts each once (the last copy, as applying the files in order would leave it) instead of
    failing with a KeyError (found by a plan -f mutation fuzz)."""
    objects = mixed_cluster()
    once = CliRunner().invoke(main, ["plan", "-f", _dump(tmp_path / "once.yaml", objects), "-o", "json"],
                              catch_exceptions=False)
    twice = CliRunner().invoke(main, ["plan", "-f", _dump(tmp_path / "twice.yaml", objects + objects), "-o", "json"],
                               catch_exceptions=False)
    assert twice.exit_code == once.exit_code, twice.output
    assert json.loads(twice.stdout.replace("twice.yaml", "once.yaml")) == json.loads(once.stdout)


def _dump(path, objects) -> str:
    path.write_text(yaml.safe_dump_all(objects))
    return str(path)


def test_plan_workload_table_fits_80_columns_with_reasons_below_and_wide_and_no_headers(tmp_path):
    """kubectl's tables fit 80 columns: what each workload becomes, or why it cannot, is a line of
    its own under the table (a sentence, not a cell); -o wide puts it in a column instead."""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all(mixed_cluster()))
    runner = CliRunner()
    table = runner.invoke(main, ["plan", "-f", str(cluster), "--wave-size", "2"]).output.splitlines()
    start = table.index(next(line for line in table if line.startswith("NAMESPACE")))
    rows = table[start:table.index("", start)]
    assert rows[0].split() == ["NAMESPACE", "WORKLOAD", "STATUS", "PODS", "LEGACY/POD"]
    assert rows[1].split()[:2] == ["ml", "cronjob/nightly"]
    assert max(len(line) for line in rows) <= 80, rows
    end = table.index("", start)
    becomes = table[end + 1:table.index("", end + 1)]
    assert [line.split(":")[0].strip() for line in becomes] == [
        "/".join(row.split()[:2]) for row in rows[1:]]  # one line per workload: what it becomes or why not
    wide = runner.invoke(main, ["plan", "-f", str(cluster), "--wave-size", "2", "-o", "wide"]).output
    assert "BECOMES / WHY NOT" in wide
    bare = runner.invoke(main, ["plan", "-f", str(cluster), "--wave-size", "2", "--no-headers"]).output
    assert not any(line.startswith("NAMESPACE") for line in bare.splitlines())
    assert rows[1] in bare.splitlines()
