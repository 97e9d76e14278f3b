"""End to end: a mixed cluster migrated wave by wave with the real CLI against the API double.

The cluster (tests/fleet_cluster.py) is created through the API by "helm" (so helm owns every
field, as on a real cluster), then moved with `kubectl gpu plan`, `migrate --from-cluster --apply`
and `migrate nodes --apply` until no device-plugin GPU node is left. The double's controllers play
the cluster (tests/k8sdouble/workloads.py): Deployments make ReplicaSets that make pods,
StatefulSets, DaemonSets and Jobs make theirs, a rollout replaces them, an evicted pod is made
again, the scheduler binds each pod to a node that fits (legacy GPUs on device-plugin nodes, DRA
devices on DRA nodes) or leaves it Pending: a stranded pod. The test plays only what no part of
Kubernetes does: the Kubeflow operator (the PyTorchJob's pods), the node operator who turns the
device plugin off, and the DRA driver publishing the node's ResourceSlice. After every wave,
`doctor`'s double-counting check finds nothing and no pod is stranded; at the end
`kubectl gpu rollback --apply` restores every migrated object's spec byte for byte (canonical
JSON, as the API server serialises it).
"""
from __future__ import annotations

import copy
import json

import pytest
import yaml
from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from kubectl_gpu.fleet.cluster_io import send
from kubectl_gpu.k8s import Client
from kubectl_gpu.inspect.doctor import run_doctor
from kubectl_gpu.inspect.fetch import fetch_doctor_inputs
from kubectl_gpu.k8s.paths import collection_path
from tests.fleet_cluster import CR_KIND, mixed_cluster, resource_slice
from tests.k8sdouble import K8sDouble, ResourceKind

PLURALS = {"Deployment": "deployments", "StatefulSet": "statefulsets", "DaemonSet": "daemonsets",
           "ReplicaSet": "replicasets", "Job": "jobs", "CronJob": "cronjobs", "Pod": "pods",
           "PodDisruptionBudget": "poddisruptionbudgets", "ResourceSlice": "resourceslices",
           "DeviceClass": "deviceclasses", "PyTorchJob": "pytorchjobs", "Node": "nodes", "Namespace": "namespaces"}
TOP_LEVEL = ("Deployment", "StatefulSet", "DaemonSet", "CronJob", "PyTorchJob", "Job")


def path_of(obj: dict, name: str | None = None) -> str:
    group, _, version = obj["apiVersion"].rpartition("/")
    namespace = obj["metadata"].get("namespace") if obj["kind"] not in ("Node", "Namespace", "ResourceSlice",
                                                                         "DeviceClass") else None
    base = collection_path(group, version, PLURALS[obj["kind"]], namespace)
    return f"{base}/{name}" if name else base


class Cluster:
    """The double plus the parts of a cluster the test simulates."""

    def __init__(self, double: K8sDouble):
        self.double = double
        self.api = Client(double.api_client().configuration)
        self.runner = CliRunner()

    def create(self, obj: dict, manager: str = "helm") -> dict:
        obj = copy.deepcopy(obj)
        status = obj.pop("status", None)
        created = send(self.api, "POST", path_of(obj), obj, query=[("fieldManager", manager)])
        if status is not None and obj["kind"] in ("Pod", "Node"):
            created["status"] = status
            created = send(self.api, "PUT", path_of(obj, obj["metadata"]["name"]) + "/status", created)
        return created

    def kubectl_gpu(self, *args: str, expect: int | None = 0) -> str:
        result = self.runner.invoke(main, list(args), env=self.double.kubectl_env(), catch_exceptions=False)
        if expect is not None:
            assert result.exit_code == expect, f"kubectl gpu {' '.join(args)}: {result.output}"
        return result.output

    # ----------------------------------------------------------- simulation

    def pods(self) -> list[dict]:
        return self.double.list("pods")

    def nodes(self) -> list[dict]:
        return self.double.list("nodes")

    def dra_nodes(self) -> list[str]:
        return [n["metadata"]["name"] for n in self.nodes()
                if n["metadata"].get("labels", {}).get("ack.node.gpu.schedule") == "disabled"
                and not n.get("spec", {}).get("unschedulable")]

    def stranded(self) -> list[str]:
        """Pods the scheduler could place nowhere (Pending), except those of workloads that never
        had a node (an H100 nobody has, a value no device plugin serves): not the migration's doing."""
        return sorted(f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in self.pods()
                      if p["status"].get("phase") == "Pending"
                      and p["metadata"].get("labels", {}).get("app") not in NEVER_SCHEDULABLE)

    def operator_pods(self, job: dict, count: int) -> None:
        """The Kubeflow operator's part: the PyTorchJob's worker pods (no nodeName: the double's
        scheduler binds them)."""
        template = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]
        for i in range(count):
            self.create({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"generateName": f"{job['metadata']['name']}-worker-{i}-",
                                      "namespace": job["metadata"]["namespace"],
                                      "labels": dict(template["metadata"].get("labels") or {}),
                                      "ownerReferences": [{"apiVersion": job["apiVersion"], "kind": job["kind"],
                                                           "name": job["metadata"]["name"],
                                                           "uid": job["metadata"]["uid"], "controller": True}]},
                         "spec": copy.deepcopy(template["spec"])}, manager="training-operator")

    def operator_reconciles(self) -> None:
        """A migrated PyTorchJob's old pods go and new ones come; evicted workers come back."""
        for job in self.double.list("pytorchjobs"):
            uid = job["metadata"]["uid"]
            pods = [p for p in self.pods() if any(o["uid"] == uid for o in p["metadata"].get("ownerReferences") or ())
                    and p["status"].get("phase") not in ("Succeeded", "Failed")]
            template = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]
            stale = [p for p in pods if bool(p["spec"].get("resourceClaims")) != bool(template["spec"].get(
                "resourceClaims"))]
            for p in stale:
                self.double.delete("pods", p["metadata"]["name"], p["metadata"]["namespace"])
            self.operator_pods(job, job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] - len(pods) + len(stale))

    def switch_driver(self, node_name: str) -> None:
        """The operator's part: device plugin off, DRA driver on (it publishes a slice), uncordon."""
        node = self.double.get("nodes", node_name, namespace="")
        node["status"]["allocatable"].pop("nvidia.com/gpu", None)
        node["status"]["capacity"].pop("nvidia.com/gpu", None)
        send(self.api, "PUT", f"/api/v1/nodes/{node_name}/status", node)
        self.create(resource_slice(node_name), manager="gpu.nvidia.com")
        send(self.api, "PATCH", f"/api/v1/nodes/{node_name}", {"spec": {"unschedulable": False}},
             content_type="application/merge-patch+json")

    def double_counting(self) -> list[str]:
        report = run_doctor(fetch_doctor_inputs(self.api))
        return [f.message for f in report.findings if f.code == "double-counting"]


NEVER_SCHEDULABLE = ("broken", "h100")


def top_level(objects: list[dict]) -> list[dict]:
    """The objects someone creates: not what the built-in controllers make (ReplicaSets, and the
    pods of Deployments, StatefulSets, DaemonSets and Jobs), nor the PyTorchJob's pods (its
    operator makes them). DaemonSets first: their pod stays on its node (as when it was there
    before the other workloads). The CronJob's Job is suspended: its run is over."""
    owner_kind = {o["metadata"].get("uid"): o["kind"] for o in objects}
    kept = []
    for obj in objects:
        owners = [owner_kind.get(r["uid"]) for r in obj["metadata"].get("ownerReferences") or ()]
        if obj["kind"] == "ReplicaSet" or (obj["kind"] == "Pod" and owners):
            continue
        if obj["kind"] == "Job" and "CronJob" in owners:
            obj = copy.deepcopy(obj)
            obj["spec"]["suspend"] = True
        kept.append(obj)
    return sorted(kept, key=lambda o: o["kind"] != "DaemonSet")


@pytest.fixture
def cluster():
    group, version, plural, kind = CR_KIND
    with K8sDouble(controllers=True, extra_kinds=[ResourceKind(group, (version,), plural, kind, True)]) as double:
        c = Cluster(double)
        uids: dict[str, str] = {}
        for obj in top_level(mixed_cluster()):
            obj = copy.deepcopy(obj)
            for owner in obj["metadata"].get("ownerReferences") or ():
                owner["uid"] = uids[owner["uid"]]
            fixture_uid = obj["metadata"].pop("uid", None)
            created = c.create(obj)
            if fixture_uid:
                uids[fixture_uid] = created["metadata"]["uid"]
        c.operator_reconciles()
        assert c.stranded() == []
        yield c


def test_a_mixed_cluster_moves_wave_by_wave_and_rolls_back_exactly(cluster):
    originals = {(o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]): copy.deepcopy(o["spec"])
                 for kind in ("deployments", "statefulsets", "daemonsets", "cronjobs", "pytorchjobs", "jobs")
                 for o in cluster.double.list(kind)}
    assert cluster.double_counting() == []
    waves = 0
    for _ in range(8):
        cluster.kubectl_gpu("migrate", "--from-cluster", "-A", "--apply", "--timeout", "5s")
        cluster.operator_reconciles()
        assert cluster.double_counting() == [], f"after wave {waves}"
        assert cluster.stranded() == [], f"after wave {waves}"
        plan = json.loads(cluster.kubectl_gpu("plan", "--wave-size", "2", "-o", "json", expect=None))
        switching = next((w for w in plan["waves"] if w["nodes"]), None)
        if switching is None:
            break
        if switching.get("refused"):
            # The only refusal this cluster earns: the running Job holds 2 device-plugin GPUs on
            # the last legacy node. A Job's template is immutable, so it must finish first.
            assert any("ml/train-" in r for r in switching["refused"]), switching["refused"]
            (pod,) = [p for p in cluster.pods() if p["metadata"]["labels"].get("job-name") == "train"]
            pod["status"]["phase"] = "Succeeded"
            send(cluster.api, "PUT", f"/api/v1/namespaces/ml/pods/{pod['metadata']['name']}/status", pod)
            continue
        output = cluster.kubectl_gpu("migrate", "nodes", *switching["nodes"], "--apply", "--timeout", "5s")
        assert "switched" in output
        cluster.operator_reconciles()
        assert cluster.stranded() == [], f"evicted pods of wave {waves} found no node"
        for node in switching["nodes"]:
            assert cluster.double.get("nodes", node, namespace="")["spec"]["unschedulable"] is True
            cluster.switch_driver(node)
        waves += 1
    assert waves >= 3
    assert sorted(cluster.dra_nodes()) == ["dra-1", "legacy-1", "legacy-2", "legacy-3", "legacy-4"]
    assert cluster.stranded() == []
    # Running it again changes nothing.
    rv = cluster.double.resource_version
    cluster.kubectl_gpu("migrate", "--from-cluster", "-A", "--apply", "--timeout", "5s")
    assert cluster.double.resource_version == rv
    migrated = {k for k in originals if k[0] in TOP_LEVEL and cluster.double.get(
        PLURALS[k[0]], k[2], k[1])["metadata"].get("managedFields") and any(
        e["manager"] == "kubectl-gpu" for e in cluster.double.get(PLURALS[k[0]], k[2], k[1])["metadata"]["managedFields"])}
    assert {k[2] for k in migrated} == {"web", "infer", "store", "probe", "nightly", "bert", "notebook"}

    # Rolling back needs device-plugin GPUs again: the node operator puts the device plugin back
    # on the former legacy nodes first (else the restored pods would wait Pending, as rollback says).
    for name in ("legacy-1", "legacy-2", "legacy-3", "legacy-4"):
        node = cluster.double.get("nodes", name, namespace="")
        node["status"]["allocatable"]["nvidia.com/gpu"] = node["status"]["capacity"]["nvidia.com/gpu"] = "4"
        send(cluster.api, "PUT", f"/api/v1/nodes/{name}/status", node)
    # The node-pinned DaemonSet first, while its node has room, then everything else.
    cluster.kubectl_gpu("rollback", "daemonset/probe", "-n", "ml", "--apply", "--timeout", "5s")
    cluster.kubectl_gpu("rollback", "-A", "--apply", "--timeout", "5s")
    cluster.operator_reconciles()
    assert cluster.stranded() == []
    for key in migrated:
        restored = cluster.double.get(PLURALS[key[0]], key[2], key[1])["spec"]
        assert json.dumps(restored, sort_keys=True) == json.dumps(originals[key], sort_keys=True), key


# ------------------------------------------------------- the live commands, one by one

def test_migrate_from_cluster_is_a_server_dry_run_by_default(cluster):
    cluster.double.reset_requests()
    rv = cluster.double.resource_version
    output = cluster.kubectl_gpu("migrate", "--from-cluster", "-A")
    assert "Deployment/serving/infer: would apply (server dry run)" in output
    assert "nothing was written" in output
    writes = [r for r in cluster.double.requests if r.verb in ("create", "update", "patch", "delete")]
    assert writes and all(r.dry_run for r in writes)
    assert cluster.double.resource_version == rv


def test_the_server_dry_run_shows_the_legacy_limit_go(cluster):
    """A dry-run answer is the object as the server would store it (Kubernetes API concepts,
    "Dry-run": the response is as close as possible to the non-dry-run one). The dry run of a
    migration must therefore show the device-plugin limit removed, which a dry-run apply cannot
    (its fields belong to helm until the hand-over, and dry-run requests are not chained)."""
    cluster.double.reset_requests()
    rv = cluster.double.resource_version
    output = cluster.kubectl_gpu("migrate", "--from-cluster", "-n", "serving")
    line = next(line for line in output.splitlines() if line.strip().startswith("Deployment/serving/infer:"))
    assert "would apply (server dry run)" in line
    assert "removes spec.template.spec.containers[main].resources.limits.nvidia.com/gpu" in line
    assert "spec.template.spec.resourceClaims[" in line.partition("; adds ")[2]
    (put,) = [r for r in cluster.double.requests if r.verb == "update" and r.resource == "deployments"
              and r.name == "infer"]
    assert put.dry_run and cluster.double.resource_version == rv
    assert cluster.double.get("deployments", "infer", "serving")["spec"]["template"]["spec"]["containers"][0][
        "resources"]["limits"] == {"nvidia.com/gpu": "1"}


def test_claim_templates_are_applied_before_the_workloads_that_use_them(cluster):
    cluster.double.reset_requests()
    cluster.kubectl_gpu("migrate", "--from-cluster", "--apply", "-n", "serving")
    patches = [(r.resource, r.name) for r in cluster.double.requests if r.verb == "patch" and not r.dry_run]
    template = patches.index(("resourceclaimtemplates", next(n for res, n in patches if res == "resourceclaimtemplates")))
    assert template < patches.index(("deployments", "infer"))
    fields = {e["manager"]: e for e in cluster.double.get("deployments", "infer", "serving")["metadata"]["managedFields"]}
    assert fields["kubectl-gpu"]["operation"] == "Apply"
    # helm keeps its fields (the image) but no longer owns the GPU limit it no longer has
    helm = json.dumps(fields["helm"]["fieldsV1"])
    assert "f:image" in helm and "nvidia.com/gpu" not in helm


def test_an_object_changed_after_it_was_read_is_not_written(cluster):
    """The ownership hand-over moves exactly the fields the plan saw; if someone changed the object
    since, migrate stops instead of taking their fields (no force, ever)."""
    from kubectl_gpu.fleet.execute import StepFailed, Target, apply_workload
    from kubectl_gpu.fleet.cluster_io import fetch_snapshot
    from kubectl_gpu.fleet.workloads import plan_workloads

    planned = next(w for w in plan_workloads(fetch_snapshot(cluster.api)) if w.ref == "Deployment/serving/infer")
    send(cluster.api, "PATCH", "/apis/apps/v1/namespaces/serving/deployments/infer",
         {"spec": {"template": {"spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"}}}}},
         content_type="application/merge-patch+json", query=[("fieldManager", "kubectl-edit")])
    rv = cluster.double.resource_version
    with pytest.raises(StepFailed, match="changed since it was read"):
        apply_workload(cluster.api, Target("apps/v1", "Deployment", "deployments", "serving", "infer"),
                       planned.migrated, "kubectl-gpu", dry_run=False)
    assert cluster.double.resource_version == rv


def test_a_rollout_that_does_not_become_ready_stops_the_wave(cluster):
    cluster.double.stall("deployments", "infer", "serving")
    output = cluster.kubectl_gpu("migrate", "--from-cluster", "--apply", "-n", "serving", "--timeout", "1ms",
                                 expect=3)
    assert "Deployment/serving/infer did not become ready within 0.001s" in output


def test_output_dir_writes_migrated_manifests_for_git_and_changes_nothing(cluster, tmp_path):
    rv = cluster.double.resource_version
    cluster.kubectl_gpu("migrate", "--from-cluster", "-A", "--output-dir", str(tmp_path))
    assert cluster.double.resource_version == rv
    infer = yaml.safe_load((tmp_path / "serving" / "deployment-infer.yaml").read_text())
    assert infer["spec"]["template"]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"].startswith("kgpu-")
    assert "status" not in infer and "managedFields" not in infer["metadata"]
    job = yaml.safe_load((tmp_path / "ml" / "job-train.yaml").read_text())  # resubmit it from Git
    assert "resourceClaims" in job["spec"]["template"]["spec"]
    assert any(p.name.startswith("resourceclaimtemplate-") for p in (tmp_path / "serving").iterdir())


def test_a_bare_pod_gets_a_migrated_manifest_to_recreate_it(cluster, tmp_path):
    """A pod no controller owns cannot be patched (a pod's containers are immutable: core/v1
    validation, "pod updates may not change fields other than ...") and nothing recreates it after
    a drain: plan says it must be recreated, and --output-dir writes the migrated Pod to create
    instead, marked as a replacement, without the node binding the scheduler gave the old one."""
    from tests.fleet_cluster import container, template

    bare = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "debug", "namespace": "ml",
                                                             "labels": {"app": "debug"}},
            "spec": template("debug", container("1"))["spec"]}
    cluster.create(bare)
    assert cluster.double.get("pods", "debug", "ml")["spec"]["nodeName"]  # the scheduler bound it
    plan = json.loads(cluster.kubectl_gpu("plan", "-o", "json", expect=None))
    (entry,) = [w for w in plan["workloads"] if w["kind"] == "Pod" and w["name"] == "debug"]
    assert entry["status"] == "recreate"
    assert "--output-dir" in entry["reasons"][0] and entry["claims"]

    cluster.kubectl_gpu("migrate", "--from-cluster", "-A", "--output-dir", str(tmp_path))
    text = (tmp_path / "ml" / "pod-debug.yaml").read_text()
    assert text.startswith("# kubectl-gpu: ")
    pod = yaml.safe_load(text)
    assert pod["metadata"]["annotations"]["kubectl-gpu.io/recreates"] == "Pod/ml/debug"
    assert "nodeName" not in pod["spec"] and "status" not in pod and "uid" not in pod["metadata"]
    assert "nvidia.com/gpu" not in json.dumps(pod["spec"]["containers"][0]["resources"].get("limits", {}))
    (claim,) = pod["spec"]["resourceClaims"]
    assert (tmp_path / "ml" / f"resourceclaimtemplate-{claim['resourceClaimTemplateName']}.yaml").exists()


def test_migrate_nodes_never_touches_a_node_whose_pods_cannot_move(cluster):
    rv = cluster.double.resource_version
    output = cluster.kubectl_gpu("migrate", "nodes", "legacy-1", "legacy-2", "legacy-3", "legacy-4", "--apply",
                                 expect=1)
    assert "refused:" in output and "would be stranded" in output and "nothing was changed on legacy-1" in output
    assert cluster.double.resource_version == rv


def test_migrate_nodes_dry_run_checks_evictions_with_the_server(cluster):
    worker = next(p for p in cluster.pods() if p["metadata"]["labels"].get("app") == "bert")
    name, node = worker["metadata"]["name"], worker["spec"]["nodeName"]
    cluster.double.reset_requests()
    output = cluster.kubectl_gpu("migrate", "nodes", node)
    assert f"pod/ml/{name}: would be evicted (server dry run)" in output
    evictions = [r for r in cluster.double.requests if r.resource == "pods" and r.subresource == "eviction"]
    assert evictions and all(r.dry_run for r in evictions)
    assert cluster.double.get("pods", name, "ml") is not None


def test_rollback_without_a_record_says_there_is_nothing_to_do(cluster):
    output = cluster.kubectl_gpu("rollback", "-A", "--apply")
    assert "nothing to roll back" in output


def test_migrate_with_file_inputs_and_from_cluster_stays_the_file_migration():
    """`migrate FILE --from-cluster` translates files against the cluster; only `migrate
    --from-cluster` without inputs rewrites the live workloads."""
    from kubectl_gpu.cli.main import _has_inputs

    assert _has_inputs(["deploy.yaml", "--from-cluster"])
    assert _has_inputs(["--from-cluster", "-"])
    assert _has_inputs(["--from-cluster", "--context", "prod", "k8s/"])
    assert not _has_inputs(["--from-cluster", "--context", "prod", "-n", "ml", "--apply"])
    assert not _has_inputs(["--from-cluster", "--output-dir=gitops", "--timeout", "30s"])


def test_an_eviction_a_budget_refuses_is_reported_not_forced(cluster):
    """eviction.go answers 429 while a PodDisruptionBudget allows no disruption: migrate nodes
    waits and retries (until --timeout) instead of deleting the pod."""
    from kubectl_gpu.fleet.execute import evict

    cluster.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                    "metadata": {"name": "infer", "namespace": "serving"},
                    "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "infer"}}}})
    infer, web = (next(p["metadata"]["name"] for p in cluster.pods() if p["metadata"]["labels"].get("app") == app)
                  for app in ("infer", "web"))
    ok, message = evict(cluster.api, "serving", infer, dry_run=False)
    assert not ok and "needs 1 healthy pods and has 1 currently" in message
    assert cluster.double.get("pods", infer, "serving") is not None
    ok, message = evict(cluster.api, "serving", web, dry_run=False)  # web's budget allows one
    assert ok and cluster.double.get("pods", web, "serving") is None


def test_claim_templates_use_the_version_an_older_cluster_serves():
    """A 1.33 API server serves resource.k8s.io/v1beta2, not v1: a v1 template would be refused."""
    group, version, plural, kind = CR_KIND
    with K8sDouble(controllers=True, disabled_group_versions=["resource.k8s.io/v1"],
                   extra_kinds=[ResourceKind(group, (version,), plural, kind, True)]) as double:
        c = Cluster(double)
        for obj in top_level(mixed_cluster()):
            if obj["kind"] in ("Deployment", "Node", "Namespace") and \
                    obj["metadata"].get("name", "").startswith(("infer", "legacy", "dra", "serving", "ml")):
                obj = copy.deepcopy(obj)
                obj["metadata"].pop("uid", None)
                c.create(obj)
        c.create({"apiVersion": "resource.k8s.io/v1beta2", **{k: v for k, v in resource_slice("dra-1").items()
                                                             if k != "apiVersion"}})
        c.kubectl_gpu("migrate", "--from-cluster", "--apply", "-n", "serving", "--timeout", "5s")
        (template,) = double.list("resourceclaimtemplates", "serving", version="v1beta2")
        assert double.get("deployments", "infer", "serving")["spec"]["template"]["spec"]["resourceClaims"][0][
            "resourceClaimTemplateName"] == template["metadata"]["name"]
        assert any(r.resource == "resourceclaimtemplates" and r.version == "v1beta2" and not r.dry_run
                   for r in double.requests)


@pytest.mark.parametrize("obj, ready", [
    ({"kind": "Deployment", "metadata": {"generation": 2}, "spec": {"replicas": 2},
      "status": {"observedGeneration": 1, "updatedReplicas": 2, "replicas": 2, "availableReplicas": 2}}, False),
    ({"kind": "Deployment", "metadata": {"generation": 2}, "spec": {"replicas": 2},
      "status": {"observedGeneration": 2, "updatedReplicas": 2, "replicas": 3, "availableReplicas": 2}}, False),
    ({"kind": "Deployment", "metadata": {"generation": 2}, "spec": {"replicas": 2},
      "status": {"observedGeneration": 2, "updatedReplicas": 2, "replicas": 2, "availableReplicas": 2}}, True),
    ({"kind": "StatefulSet", "metadata": {"generation": 3}, "spec": {"replicas": 3},
      "status": {"observedGeneration": 3, "readyReplicas": 2, "updatedReplicas": 3}}, False),
    ({"kind": "DaemonSet", "metadata": {"generation": 1},
      "status": {"observedGeneration": 1, "desiredNumberScheduled": 4, "updatedNumberScheduled": 4,
                 "numberAvailable": 3}}, False),
    ({"kind": "DaemonSet", "metadata": {"generation": 1},
      "status": {"observedGeneration": 1, "desiredNumberScheduled": 4, "updatedNumberScheduled": 4,
                 "numberAvailable": 4}}, True),
    ({"kind": "CronJob", "metadata": {"generation": 5}, "status": {}}, True),
])
def test_rollout_readiness_follows_kubectl_rollout_status(obj, ready):
    """kubectl/pkg/polymorphichelpers/rollout_status.go: observed generation first, then
    updated/available (Deployment), ready/updated (StatefulSet), updated/available scheduled
    (DaemonSet); kinds without a rollout are done at once."""
    from kubectl_gpu.fleet.execute import rollout_ready

    assert rollout_ready(obj)[0] is ready


def test_live_plan_narrows_to_a_node_pool_and_names_workloads(cluster):
    doc = json.loads(cluster.kubectl_gpu("plan", "-l", "kubernetes.io/hostname=legacy-1", "-o", "json", expect=None))
    assert [n["name"] for n in doc["nodes"]] == ["legacy-1"]
    names = cluster.kubectl_gpu("plan", "-o", "name", expect=None).split()
    # as kubectl -o name spells them: kind.group/name (tests/test_output_contract.py)
    assert "deployment.apps/web" in names and "pytorchjob.kubeflow.org/bert" in names


@pytest.mark.parametrize("shareable", [False, True])
def test_from_cluster_fits_claims_to_the_cluster_exactly_as_migrate_cluster_does(tmp_path, shareable):
    """`migrate --from-cluster` and `plan` read the same cluster profile as `migrate --cluster`
    (kubectl_gpu/cluster: served version, gates, classes, published devices) and fit claims to it
    the same way. A half GPU becomes a consumable share only where the GPUs advertise
    allowMultipleAllocations (KEP-5075; NVIDIA's driver with ConsumableShares), else a whole GPU
    (a share claim on a GPU that cannot be shared never allocates)."""
    from tests.fleet_cluster import container, device_class, node, template, workload

    gpu_slice = resource_slice("dra-1", gpus=2)
    if shareable:
        for device in gpu_slice["spec"]["devices"]:
            device["allowMultipleAllocations"] = True
    deployment = workload("Deployment", "half", "serving", template("half", container("500m")), 1)
    with K8sDouble(controllers=True) as double:
        c = Cluster(double)
        for obj in (node("dra-1", dra=True), gpu_slice, device_class(),
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "serving"}}, deployment):
            c.create(obj)
        c.kubectl_gpu("migrate", "--from-cluster", "-A", "--output-dir", str(tmp_path / "live"))
        (from_cluster,) = [yaml.safe_load(p.read_text()) for p in (tmp_path / "live" / "serving").iterdir()
                           if p.name.startswith("resourceclaimtemplate-")]
        profile = tmp_path / "profile.yaml"
        profile.write_text(yaml.safe_dump_all([gpu_slice, device_class()]))
        manifest = tmp_path / "half.yaml"
        manifest.write_text(yaml.safe_dump(deployment))
        result = c.runner.invoke(main, ["migrate", "--cluster", str(profile), str(manifest)])
        assert result.exit_code == 0, result.output
        (from_files,) = [d for d in yaml.safe_load_all(result.stdout) if d and d["kind"] == "ResourceClaimTemplate"]
    assert from_cluster["apiVersion"] == from_files["apiVersion"]
    assert from_cluster["spec"] == from_files["spec"]
    request = from_files["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert ("capacity" in request) is shareable


def test_migrate_nodes_and_rollback_do_not_read_the_cluster_profile(cluster):
    """They fit no claim to the cluster, so they skip what the profile costs: /version and the
    API server's /metrics (a large text, and a non-resource URL RBAC often denies:
    docs/translation.md). `plan` reads both, which shows the request log sees them."""
    def profile_reads() -> list[str]:
        return sorted({r.path for r in cluster.double.requests if r.path in ("/metrics", "/version")})

    cluster.double.reset_requests()
    cluster.kubectl_gpu("plan", "-o", "name", expect=None)
    assert profile_reads() == ["/metrics", "/version"]
    node = next(p for p in cluster.pods() if p["metadata"]["labels"].get("app") == "bert")["spec"]["nodeName"]
    for command in (["migrate", "nodes", node], ["rollback", "-A"]):
        cluster.double.reset_requests()
        cluster.kubectl_gpu(*command)
        assert cluster.double.count(verb="list", resource="nodes") >= 1, "it read the cluster"
        assert profile_reads() == [], f"kubectl gpu {' '.join(command)} read the cluster profile"


def test_live_plan_and_migrate_check_a_legacy_gpu_beside_the_claims_the_cluster_holds():
    """As `migrate` does with its input (tests/test_core_existing_claims.py), live: the channel
    template a ComputeDomain makes holds an IMEX channel, no GPU (NVIDIA's DRA driver,
    cmd/compute-domain-controller/resourceclaimtemplate.go), so a device-plugin GPU beside it moves
    without doubt; a gpu.nvidia.com template beside one is a GPU asked for twice: refused."""
    from tests.fleet_cluster import container, device_class, node, template, workload

    def beside(app: str, claim_template: str) -> dict:
        tmpl = template(app, container("1"))
        tmpl["spec"]["resourceClaims"] = [{"name": "extra", "resourceClaimTemplateName": claim_template}]
        tmpl["spec"]["containers"][0]["resources"]["claims"] = [{"name": "extra"}]
        return tmpl

    with K8sDouble(controllers=True, extra_kinds=[
            ResourceKind("resource.nvidia.com", ("v1beta1",), "computedomains", "ComputeDomain", True)]) as double:
        c = Cluster(double)
        for obj in (node("dra-1", dra=True), resource_slice("dra-1"), device_class(),
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
                    {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
                     "metadata": {"name": "imex", "namespace": "ml"},
                     "spec": {"numNodes": 1, "channel": {"resourceClaimTemplate": {"name": "imex-channel"}}}},
                    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                     "metadata": {"name": "one-gpu", "namespace": "ml"},
                     "spec": {"spec": {"devices": {"requests": [
                         {"name": "d", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}},
                    workload("Deployment", "nccl", "ml", beside("nccl", "imex-channel"), 0),
                    workload("Deployment", "twice", "ml", beside("twice", "one-gpu"), 0)):
            obj = copy.deepcopy(obj)
            obj["metadata"].pop("uid", None)
            if obj["kind"] in PLURALS:
                c.create(obj)
            else:
                group, _, version = obj["apiVersion"].rpartition("/")
                plural = {"ComputeDomain": "computedomains", "ResourceClaimTemplate": "resourceclaimtemplates"}
                send(c.api, "POST", collection_path(group, version, plural[obj["kind"]], "ml"), obj)
        planned = {w["name"]: w for w in json.loads(c.kubectl_gpu("plan", "-o", "json", expect=None))["workloads"]}
        assert planned["nccl"]["status"] == "migrate"
        assert not any("not checked" in n for n in planned["nccl"].get("notes", ())), planned["nccl"]
        assert planned["twice"]["status"] == "blocked"
        output = c.kubectl_gpu("migrate", "--from-cluster", "-n", "ml")
        assert "Deployment/ml/nccl: " in output and "Deployment/ml/twice: blocked: container 'main': asks for GPUs " \
            "twice, by nvidia.com/gpu and by ResourceClaim 'extra' (ResourceClaimTemplate one-gpu" in output


def test_migrate_from_cluster_tells_what_each_moved_workload_becomes_with_its_warnings():
    """As `migrate` reports each rewritten template (info: what a request became, warning: what the
    person should know), `migrate --from-cluster` reports it under each workload it moves, in the
    words `plan -o json` gives in the workload's notes.  Here a half GPU becomes a whole one: no GPU
    of this cluster advertises shares (KEP-5075's allowMultipleAllocations), so --sharing auto falls
    back to whole GPUs, which a person must be told before the pods take twice what they asked."""
    from tests.fleet_cluster import container, device_class, node, template, workload

    with K8sDouble(controllers=True) as double:
        c = Cluster(double)
        for obj in (node("dra-1", dra=True), resource_slice("dra-1"), device_class(),
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
                    workload("Deployment", "half", "ml", template("half", container("500m")), 0),
                    workload("Deployment", "whole", "ml", template("whole", container("1")), 0)):
            obj = copy.deepcopy(obj)
            obj["metadata"].pop("uid", None)
            c.create(obj)
        planned = {w["name"]: w for w in json.loads(c.kubectl_gpu("plan", "-o", "json", expect=None))["workloads"]}
        output = c.kubectl_gpu("migrate", "--from-cluster", "-n", "ml")
    [half_warning] = [n for n in planned["half"]["notes"] if n.startswith("warning: ")]
    assert "nvidia.com/gpu: 500m" in half_warning and "1 whole GPU" in half_warning
    assert [n for n in planned["whole"]["notes"] if n.startswith("info: ")], planned["whole"]
    lines = output.splitlines()
    for name in ("half", "whole"):
        at = next(i for i, line in enumerate(lines) if line.startswith(f"  Deployment/ml/{name}: would apply"))
        reported = []
        for line in lines[at + 1:]:
            if not line.startswith("    "):
                break
            reported.append(line.strip())
        assert reported == planned[name]["notes"], (name, output)
