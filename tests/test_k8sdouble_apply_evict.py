"""The API double's server-side apply, dryRun, eviction and rollout status, driven by the real
``kubernetes`` client (and real kubectl where it is cheap).

Upstream behaviour these follow:
- https://kubernetes.io/docs/reference/using-api/server-side-apply/ (field management, conflicts,
  force, removal needs sole ownership, apply creates);
- PatchOptions (meta/v1): fieldManager "is required for apply requests", "Force flag must be unset
  for non-apply patch requests";
- https://kubernetes.io/docs/reference/using-api/api-concepts/#dry-run (nothing persisted);
- pkg/registry/core/pod/storage/eviction.go and
  https://kubernetes.io/docs/concepts/scheduling-eviction/api-eviction/ (429 when the budget allows
  no disruption, 500 with two budgets, non-running pods go without a check);
- kubectl/pkg/polymorphichelpers/rollout_status.go (the status fields rollout status reads).
"""
from __future__ import annotations

import json
import shutil

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.k8sdouble import K8sDouble

APPLY = "application/apply-patch+yaml"


def deployment(name="web", replicas=1, gpu="1", labels=None, claims=None):
    container = {"name": "main", "image": "cuda:12", "resources": {"limits": {"nvidia.com/gpu": gpu}}}
    spec = {"containers": [container]}
    if claims:
        spec["resourceClaims"] = claims
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default", "labels": labels or {"app": name}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


def apply(apps, body, manager, force=None, dry_run=None):
    kwargs = {"field_manager": manager, "_content_type": APPLY}
    if force is not None:
        kwargs["force"] = force
    if dry_run:
        kwargs["dry_run"] = dry_run
    return apps.patch_namespaced_deployment(body["metadata"]["name"], "default", body, **kwargs)


def managers(double, name="web"):
    obj = double.get("deployments", name)
    return {(e["manager"], e["operation"]) for e in obj["metadata"].get("managedFields", [])}


def test_apply_creates_the_object_and_records_the_applier_as_its_manager(k8s_double):
    apps = client.AppsV1Api(k8s_double.api_client())
    created = apply(apps, deployment(), "kubectl-gpu")
    assert created.spec.replicas == 1
    assert managers(k8s_double) == {("kubectl-gpu", "Apply")}
    fields = k8s_double.get("deployments", "web")["metadata"]["managedFields"][0]["fieldsV1"]
    assert "f:replicas" in fields["f:spec"]
    assert 'k:{"name":"main"}' in fields["f:spec"]["f:template"]["f:spec"]["f:containers"]


def test_apply_without_a_field_manager_is_invalid(k8s_double):
    apps = client.AppsV1Api(k8s_double.api_client())
    with pytest.raises(ApiException) as raised:
        apps.patch_namespaced_deployment("web", "default", deployment(), _content_type=APPLY)
    assert raised.value.status == 422
    assert "fieldManager" in json.loads(raised.value.body)["message"]


def test_force_on_a_non_apply_patch_is_forbidden(k8s_double):
    apps = client.AppsV1Api(k8s_double.api_client())
    apps.create_namespaced_deployment("default", deployment())
    with pytest.raises(ApiException) as raised:
        apps.patch_namespaced_deployment("web", "default", {"spec": {"replicas": 2}}, force=True,
                                         _content_type="application/merge-patch+json")
    assert raised.value.status == 422


def test_applying_a_value_another_manager_owns_conflicts_and_force_takes_it_over(k8s_double):
    apps = client.AppsV1Api(k8s_double.api_client())
    apps.create_namespaced_deployment("default", deployment(), field_manager="helm")
    assert managers(k8s_double) == {("helm", "Update")}
    with pytest.raises(ApiException) as raised:
        apply(apps, deployment(replicas=3), "kubectl-gpu")
    assert raised.value.status == 409
    status = json.loads(raised.value.body)
    assert status["reason"] == "Conflict"
    assert status["details"]["causes"] == [{"reason": "FieldManagerConflict", "field": ".spec.replicas",
                                            "message": 'conflict with "helm" using apps/v1'}]
    assert k8s_double.get("deployments", "web")["spec"]["replicas"] == 1  # nothing changed

    apply(apps, deployment(replicas=3), "kubectl-gpu", force=True)
    stored = k8s_double.get("deployments", "web")
    assert stored["spec"]["replicas"] == 3
    helm = next(e for e in stored["metadata"]["managedFields"] if e["manager"] == "helm")
    assert "f:replicas" not in helm["fieldsV1"]["f:spec"]


def test_applying_the_same_value_another_manager_owns_shares_it_without_conflict(k8s_double):
    apps = client.AppsV1Api(k8s_double.api_client())
    apps.create_namespaced_deployment("default", deployment(), field_manager="helm")
    apply(apps, deployment(), "kubectl-gpu")
    assert managers(k8s_double) == {("helm", "Update"), ("kubectl-gpu", "Apply")}


def test_a_field_left_out_of_the_next_apply_is_removed_only_when_no_other_manager_owns_it(k8s_double):
    apps = client.AppsV1Api(k8s_double.api_client())
    apply(apps, deployment(labels={"app": "web", "tier": "gpu"}), "kubectl-gpu")
    apply(apps, deployment(labels={"app": "web"}), "kubectl-gpu")
    assert k8s_double.get("deployments", "web")["metadata"]["labels"] == {"app": "web"}

    apply(apps, deployment(labels={"app": "web", "tier": "gpu"}), "kubectl-gpu")
    # An update takes only the fields it changes (structured-merge-diff's Update): rewriting
    # "app" with its value takes nothing, changing "tier" takes it away from kubectl-gpu.
    apps.patch_namespaced_deployment("web", "default", {"metadata": {"labels": {"app": "web", "tier": "cpu"}}},
                                     field_manager="someone")
    apply(apps, deployment(labels={"app": "web"}), "kubectl-gpu")
    assert k8s_double.get("deployments", "web")["metadata"]["labels"] == {"app": "web", "tier": "cpu"}
    apply(apps, deployment(labels={"app": "web", "tier": "cpu"}), "kubectl-gpu")
    apply(apps, deployment(labels={"app": "web"}), "kubectl-gpu")
    assert k8s_double.get("deployments", "web")["metadata"]["labels"] == {"app": "web", "tier": "cpu"}


def test_applying_the_same_value_shares_a_field_so_leaving_it_out_later_keeps_it(k8s_double):
    apps = client.AppsV1Api(k8s_double.api_client())
    apps.create_namespaced_deployment("default", deployment(), field_manager="helm")
    apply(apps, deployment(), "kubectl-gpu", force=True)
    drop = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 1}}
    apply(apps, drop, "kubectl-gpu")
    limits = k8s_double.get("deployments", "web")["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert limits == {"limits": {"nvidia.com/gpu": "1"}}  # helm still owns it


def test_ownership_moved_by_rewriting_managed_fields_lets_the_next_apply_remove_the_field(k8s_double):
    """kubectl's csaupgrade (client-go/util/csaupgrade) moves fields between managers by patching
    metadata.managedFields; a manager that then owns a field alone removes it by leaving it out."""
    apps = client.AppsV1Api(k8s_double.api_client())
    apps.create_namespaced_deployment("default", deployment(), field_manager="helm")
    gpu_path = ["f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"main"}', "f:resources",
                "f:limits", "f:nvidia.com/gpu"]
    managed = k8s_double.get("deployments", "web")["metadata"]["managedFields"]
    trail = [managed[0]["fieldsV1"]]
    for element in gpu_path[:-1]:
        trail.append(trail[-1][element])
    for node, element in zip(reversed(trail), reversed(gpu_path)):
        del node[element]  # the leaf, then every parent it leaves empty ({} would mean "owned")
        if node:
            break
    mine = {}
    node = mine
    for element in gpu_path:
        node = node.setdefault(element, {})
    managed.append({"manager": "kubectl-gpu", "operation": "Apply", "apiVersion": "apps/v1",
                    "fieldsType": "FieldsV1", "fieldsV1": mine})
    rv = k8s_double.get("deployments", "web")["metadata"]["resourceVersion"]
    apps.patch_namespaced_deployment("web", "default", [
        {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
        {"op": "replace", "path": "/metadata/managedFields", "value": managed}],
        _content_type="application/json-patch+json")
    assert k8s_double.get("deployments", "web")["metadata"]["generation"] == 1  # no spec change
    drop = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"template": {"spec": {"containers": [
                {"name": "main", "resources": {"claims": [{"name": "gpu"}]}}],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-1"}]}}}}
    apply(apps, drop, "kubectl-gpu")
    template = k8s_double.get("deployments", "web")["spec"]["template"]["spec"]
    assert template["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
    assert template["containers"][0]["image"] == "cuda:12"  # helm's field is untouched


def test_a_no_op_apply_keeps_the_resource_version(k8s_double):
    apps = client.AppsV1Api(k8s_double.api_client())
    first = apply(apps, deployment(), "kubectl-gpu")
    again = apply(apps, deployment(), "kubectl-gpu")
    assert again.metadata.resource_version == first.metadata.resource_version


def test_dry_run_apply_answers_the_result_and_stores_nothing(k8s_double):
    apps = client.AppsV1Api(k8s_double.api_client())
    preview = apply(apps, deployment(), "kubectl-gpu", dry_run="All")
    assert preview.spec.replicas == 1
    assert k8s_double.get("deployments", "web") is None
    apply(apps, deployment(), "kubectl-gpu")
    rv = k8s_double.get("deployments", "web")["metadata"]["resourceVersion"]
    preview = apply(apps, deployment(replicas=5), "kubectl-gpu", dry_run="All")
    assert preview.spec.replicas == 5
    stored = k8s_double.get("deployments", "web")
    assert (stored["spec"]["replicas"], stored["metadata"]["resourceVersion"]) == (1, rv)


def test_apply_with_a_stale_resource_version_conflicts(k8s_double):
    apps = client.AppsV1Api(k8s_double.api_client())
    apply(apps, deployment(), "kubectl-gpu")
    stale = deployment(replicas=2)
    stale["metadata"]["resourceVersion"] = "1"
    with pytest.raises(ApiException) as raised:
        apply(apps, stale, "kubectl-gpu")
    assert raised.value.status == 409


# ----------------------------------------------------------------- eviction

def pod(name, labels=None, ready=True, phase="Running", node="gpu-1"):
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default",
                                                             "labels": labels or {"app": "train"}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "cuda:12"}]},
            "status": {"phase": phase, "conditions": conditions}}


def pdb(name="train", min_available=1, selector=None):
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": "default"},
            "spec": {"minAvailable": min_available, "selector": selector or {"matchLabels": {"app": "train"}}}}


def eviction(name, dry_run=None):
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": "default"}}
    if dry_run:
        body["deleteOptions"] = {"dryRun": ["All"]}
    return body


@pytest.fixture
def cluster():
    """The double with its controllers, scheduler and kubelet, and one worker node for pods."""
    with K8sDouble(controllers=True) as double:
        double.seed({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1"},
                     "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "8"}}},
                    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "worker-1-gpus"},
                     "spec": {"driver": "gpu.nvidia.com", "nodeName": "worker-1",
                              "pool": {"name": "worker-1", "generation": 1, "resourceSliceCount": 1},
                              "devices": [{"name": f"gpu-{i}"} for i in range(2)]}})
        yield double


def test_eviction_that_would_break_the_budget_is_refused_with_429(cluster):
    cluster.seed(pod("a"), pdb(min_available=1))
    assert cluster.get("pdb", "train")["status"]["disruptionsAllowed"] == 0
    core = client.CoreV1Api(cluster.api_client())
    with pytest.raises(ApiException) as raised:
        core.create_namespaced_pod_eviction("a", "default", eviction("a"))
    assert raised.value.status == 429
    status = json.loads(raised.value.body)
    assert status["details"]["causes"][0]["reason"] == "DisruptionBudget"
    assert "needs 1 healthy pods and has 1 currently" in status["details"]["causes"][0]["message"]
    assert cluster.get("pods", "a") is not None


def test_eviction_within_the_budget_deletes_the_pod_and_spends_the_budget(cluster):
    cluster.seed(pod("a"), pod("b"), pdb(min_available=1))
    assert cluster.get("pdb", "train")["status"]["disruptionsAllowed"] == 1
    core = client.CoreV1Api(cluster.api_client())
    core.create_namespaced_pod_eviction("a", "default", eviction("a"))
    assert cluster.get("pods", "a") is None
    assert cluster.get("pdb", "train")["status"]["disruptionsAllowed"] == 0
    with pytest.raises(ApiException) as raised:
        core.create_namespaced_pod_eviction("b", "default", eviction("b"))
    assert raised.value.status == 429


def test_dry_run_eviction_checks_the_budget_and_deletes_nothing(cluster):
    cluster.seed(pod("a"), pod("b"), pdb(min_available=1))
    core = client.CoreV1Api(cluster.api_client())
    core.create_namespaced_pod_eviction("a", "default", eviction("a", dry_run=True))
    assert cluster.get("pods", "a") is not None
    assert cluster.get("pdb", "train")["status"]["disruptionsAllowed"] == 1


def test_pending_pods_are_evicted_without_a_budget_check(cluster):
    cluster.seed(pod("a", phase="Pending", ready=False), pdb(min_available=5))
    client.CoreV1Api(cluster.api_client()).create_namespaced_pod_eviction("a", "default", eviction("a"))
    assert cluster.get("pods", "a") is None


def test_a_pod_under_two_budgets_cannot_be_evicted(cluster):
    cluster.seed(pod("a"), pod("b"), pdb("one", 0), pdb("two", 0))
    with pytest.raises(ApiException) as raised:
        client.CoreV1Api(cluster.api_client()).create_namespaced_pod_eviction("a", "default", eviction("a"))
    assert raised.value.status == 500
    assert "more than one PodDisruptionBudget" in json.loads(raised.value.body)["message"]


def test_max_unavailable_percent_budget(cluster):
    cluster.seed(*(pod(f"p{i}") for i in range(4)),
                 {**pdb(), "spec": {"maxUnavailable": "50%", "selector": {"matchLabels": {"app": "train"}}}})
    status = cluster.get("pdb", "train")["status"]
    assert (status["expectedPods"], status["desiredHealthy"], status["disruptionsAllowed"]) == (4, 2, 2)


def test_discovery_lists_pods_eviction_as_policy_v1_create(k8s_double):
    resources = client.CoreV1Api(k8s_double.api_client()).get_api_resources().resources
    entry = next(r for r in resources if r.name == "pods/eviction")
    assert (entry.group, entry.version, entry.kind, entry.verbs) == ("policy", "v1", "Eviction", ["create"])


# ------------------------------------------------------------------ rollouts

def test_rollout_status_follows_the_spec_once_the_controller_has_observed_it(cluster):
    apps = client.AppsV1Api(cluster.api_client())
    apps.create_namespaced_deployment("default", deployment(replicas=2))
    status = apps.read_namespaced_deployment("web", "default").status
    assert (status.observed_generation, status.ready_replicas, status.updated_replicas) == (1, 2, 2)


def test_a_rollout_whose_claim_template_is_missing_never_becomes_ready(cluster):
    apps = client.AppsV1Api(cluster.api_client())
    claims = [{"name": "gpu", "resourceClaimTemplateName": "gpu-1"}]
    apps.create_namespaced_deployment("default", deployment(claims=claims))
    assert apps.read_namespaced_deployment("web", "default").status.ready_replicas in (None, 0)
    cluster.seed({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                  "metadata": {"name": "gpu-1"},
                  "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                      "deviceClassName": "gpu.nvidia.com"}}]}}}})
    assert apps.read_namespaced_deployment("web", "default").status.ready_replicas == 1


def test_a_stalled_rollout_stays_unready(cluster):
    apps = client.AppsV1Api(cluster.api_client())
    apps.create_namespaced_deployment("default", deployment())
    cluster.stall("deployments", "web")
    assert apps.read_namespaced_deployment("web", "default").status.ready_replicas == 0


# ------------------------------------------------------------- real kubectl

needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH "
                                   "(scripts/bootstrap puts it in .tools/bin)")


@needs_kubectl
def test_kubectl_server_side_apply_and_its_conflict(k8s_double, tmp_path):
    manifest = tmp_path / "web.json"
    manifest.write_text(json.dumps(deployment()))
    k8s_double.kubectl("apply", "--server-side", "--validate=false", "-f", str(manifest))
    assert managers(k8s_double) == {("kubectl", "Apply")}
    manifest.write_text(json.dumps(deployment(replicas=4)))
    conflict = k8s_double.kubectl("apply", "--server-side", "--validate=false", "--field-manager=other",
                                  "-f", str(manifest), check=False)
    assert conflict.returncode != 0 and "conflict" in conflict.stderr.lower()
    k8s_double.kubectl("apply", "--server-side", "--validate=false", "--field-manager=other",
                       "--force-conflicts", "-f", str(manifest))
    assert k8s_double.get("deployments", "web")["spec"]["replicas"] == 4


@needs_kubectl
def test_kubectl_rollout_status_reads_the_simulated_controller(cluster):
    client.AppsV1Api(cluster.api_client()).create_namespaced_deployment("default", deployment())
    done = cluster.kubectl("rollout", "status", "deployment/web", "--timeout=10s")
    assert "successfully rolled out" in done.stdout


@needs_kubectl
def test_kubectl_drain_evicts_through_the_budget(cluster):
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-1"}}
    cluster.seed(node, {**node, "metadata": {"name": "gpu-2"}}, pod("a"), pod("b", node="gpu-2"), pdb())
    drained = cluster.kubectl("drain", "gpu-1", "--force", "--timeout=20s")
    assert "evicted" in drained.stdout
    assert cluster.get("pods", "a") is None and cluster.get("pods", "b") is not None
    assert cluster.get("nodes", "gpu-1")["spec"]["unschedulable"] is True
    assert cluster.count(verb="create", resource="pods/eviction") == 1


def test_a_list_item_the_applier_leaves_out_goes_whole(k8s_double):
    apps = client.AppsV1Api(k8s_double.api_client())
    claims = [{"name": "gpu", "resourceClaimTemplateName": "gpu-1"}, {"name": "nic", "resourceClaimTemplateName": "nic"}]
    apply(apps, deployment(claims=claims), "kubectl-gpu")
    apply(apps, deployment(claims=claims[1:]), "kubectl-gpu")
    spec = k8s_double.get("deployments", "web")["spec"]["template"]["spec"]
    assert spec["resourceClaims"] == [{"name": "nic", "resourceClaimTemplateName": "nic"}]
    apply(apps, deployment(), "kubectl-gpu")
    assert "resourceClaims" not in k8s_double.get("deployments", "web")["spec"]["template"]["spec"]


# ------------------------------------------------- controllers that create pods

def test_a_deployment_makes_a_replicaset_that_makes_its_pods(cluster):
    """pkg/controller/deployment: one ReplicaSet per template, ``<name>-<pod-template-hash>``,
    owned with controller: true, the hash in its labels, selector and pod template; the
    ReplicaSet controller makes the pods (generateName ``<replicaset>-``), owned by it."""
    apps = client.AppsV1Api(cluster.api_client())
    apps.create_namespaced_deployment("default", deployment(replicas=2))
    (rs,) = cluster.list("replicasets", "default")
    pod_hash = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{pod_hash}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": pod_hash}
    (owner,) = rs["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"], owner["blockOwnerDeletion"]) == \
        ("Deployment", "web", True, True)
    pods = cluster.list("pods", "default")
    assert len(pods) == 2 and all(p["metadata"]["name"].startswith(f"web-{pod_hash}-") for p in pods)
    assert all(p["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"] for p in pods)
    assert all(p["metadata"]["labels"]["pod-template-hash"] == pod_hash for p in pods)
    assert all(p["spec"]["nodeName"] == "worker-1" and p["status"]["phase"] == "Running" for p in pods)

    # A new template rolls out: a new ReplicaSet with the pods, the old one scaled to zero.
    apps.patch_namespaced_deployment("web", "default", {"spec": {"template": {"metadata": {
        "annotations": {"rolled": "yes"}}}}})
    sets = {r["metadata"]["name"]: r for r in cluster.list("replicasets", "default")}
    assert len(sets) == 2 and sets[rs["metadata"]["name"]]["spec"]["replicas"] == 0
    pods = cluster.list("pods", "default")
    assert len(pods) == 2 and all(p["metadata"]["labels"]["pod-template-hash"] != pod_hash for p in pods)
    status = apps.read_namespaced_deployment("web", "default").status
    assert (status.observed_generation, status.replicas, status.updated_replicas, status.available_replicas) == \
        (2, 2, 2, 2)


def test_a_pod_that_fits_no_node_stays_pending_and_the_rollout_waits(cluster):
    """The scheduler's NodeResourcesFit: 10 GPUs fit on no node (8 allocatable): Pending."""
    apps = client.AppsV1Api(cluster.api_client())
    apps.create_namespaced_deployment("default", deployment(gpu="10"))
    (pod_obj,) = cluster.list("pods", "default")
    assert pod_obj["status"]["phase"] == "Pending" and "nodeName" not in pod_obj["spec"]
    assert apps.read_namespaced_deployment("web", "default").status.ready_replicas == 0


def test_a_job_runs_its_pods_until_they_succeed(cluster):
    """pkg/controller/job: ``parallelism`` pods with the job-name/controller-uid labels, owned by
    the Job; none is made again once they succeeded, and the Job is Complete."""
    batch = client.BatchV1Api(cluster.api_client())
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": "default"},
           "spec": {"parallelism": 2, "completions": 2, "template": {"metadata": {"labels": {"app": "train"}}, "spec": {
               "restartPolicy": "Never", "containers": [{"name": "main", "image": "cuda:12"}]}}}}
    batch.create_namespaced_job("default", job)
    pods = cluster.list("pods", "default")
    uid = cluster.get("jobs", "train")["metadata"]["uid"]
    assert len(pods) == 2 and all(p["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "train" and
                                  p["metadata"]["labels"]["batch.kubernetes.io/controller-uid"] == uid for p in pods)
    assert batch.read_namespaced_job("train", "default").status.active == 2
    core = client.CoreV1Api(cluster.api_client())
    for p in pods:
        p["status"]["phase"] = "Succeeded"
        core.replace_namespaced_pod_status(p["metadata"]["name"], "default", p)
    status = batch.read_namespaced_job("train", "default").status
    assert (status.active, status.succeeded) == (0, 2)
    assert any(c.type == "Complete" and c.status == "True" for c in status.conditions)
    assert len(cluster.list("pods", "default")) == 2


def test_a_daemonset_runs_one_pod_on_each_matching_node_even_when_cordoned(cluster):
    """pkg/controller/daemon: one pod per node the template's nodeSelector matches, pinned by a
    required matchFields affinity on metadata.name, tolerating node.kubernetes.io/unschedulable."""
    cluster.seed({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-2", "labels": {"probe": "yes"}},
                  "spec": {"unschedulable": True},
                  "status": {"allocatable": {"cpu": "8", "nvidia.com/gpu": "1"}}})
    body = deployment(name="probe")
    body.update(kind="DaemonSet")
    body["spec"].pop("replicas")
    body["spec"]["template"]["spec"]["nodeSelector"] = {"probe": "yes"}
    client.AppsV1Api(cluster.api_client()).create_namespaced_daemon_set("default", body)
    (pod_obj,) = cluster.list("pods", "default")
    assert pod_obj["spec"]["nodeName"] == "worker-2" and pod_obj["status"]["phase"] == "Running"
    assert pod_obj["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"
    status = cluster.get("daemonsets", "probe")["status"]
    assert (status["desiredNumberScheduled"], status["updatedNumberScheduled"], status["numberAvailable"]) == (1, 1, 1)
