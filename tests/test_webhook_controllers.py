"""Admission that is safe with real controllers: each test sends the AdmissionReview the API
server really sends (``oldObject`` on UPDATE, ownerReferences as controllers set them).

Upstream references:
* AdmissionReview request fields (``object``, ``oldObject`` on UPDATE):
  https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/#request
* ownerReferences of controller-made objects: ``metav1.NewControllerRef`` (apiVersion, kind,
  name, uid, controller: true, blockOwnerDeletion: true), used by
  kubernetes/pkg/controller/deployment/sync.go (ReplicaSets), replicaset/replica_set.go and
  job/job_controller.go (pods), cronjob/utils.go (Jobs).
* A rewritten ReplicaSet template makes the Deployment controller create new ReplicaSets in a
  loop: kubernetes/kubernetes#57167.
* A Job's pod template is immutable: kubernetes/pkg/apis/batch/validation/validation.go
  (ValidateJobSpecUpdate, "field is immutable").
"""

from __future__ import annotations

import copy
import json

import jsonpatch
import pytest

from tests.conftest import admission_review, fenced, patch_of

DRA_NODE_LABELS = {"ack.node.gpu.schedule": "disabled"}


def controller_ref(api_version: str, kind: str, name: str, uid: str) -> dict:
    """An ownerReference as metav1.NewControllerRef writes it."""
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid,
            "controller": True, "blockOwnerDeletion": True}


def pod_template(amount: str = "1", image: str = "nvidia/cuda:12.4", labels: dict | None = None) -> dict:
    return {
        "metadata": {"labels": labels or {"app": "infer"}},
        "spec": {"containers": [{"name": "cuda", "image": image,
                                 "resources": {"limits": {"nvidia.com/gpu": amount}}}]},
    }


def deployment(amount: str = "1", labels: dict | None = None, image: str = "nvidia/cuda:12.4") -> dict:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "infer", "namespace": "default", "uid": "d-1", "generation": 3,
                     "labels": labels or {}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "infer"}},
                 "template": pod_template(amount, image)},
    }


def replica_set(amount: str = "1") -> dict:
    """The ReplicaSet the Deployment controller creates: the template plus pod-template-hash,
    owned by the Deployment."""
    template = pod_template(amount)
    template["metadata"]["labels"]["pod-template-hash"] = "7c9f8d"
    return {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "infer-7c9f8d", "namespace": "default", "uid": "rs-1",
                     "labels": dict(template["metadata"]["labels"]),
                     "ownerReferences": [controller_ref("apps/v1", "Deployment", "infer", "d-1")]},
        "spec": {"replicas": 2, "selector": {"matchLabels": dict(template["metadata"]["labels"])},
                 "template": template},
    }


def controller_pod(owner_kind: str = "ReplicaSet", owner_name: str = "infer-7c9f8d", owner_uid: str = "rs-1",
                   amount: str = "1", **spec_extra) -> dict:
    template = pod_template(amount)
    api_version = "batch/v1" if owner_kind == "Job" else "apps/v1"
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"generateName": owner_name + "-", "namespace": "default",
                     "labels": template["metadata"]["labels"],
                     "ownerReferences": [controller_ref(api_version, owner_kind, owner_name, owner_uid)]},
        "spec": {**template["spec"], **spec_extra},
    }


def job(amount: str = "1", suspend: bool = False) -> dict:
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "train", "namespace": "default", "uid": "j-1"},
        "spec": {"suspend": suspend, "template": {**pod_template(amount), "spec": {
            **pod_template(amount)["spec"], "restartPolicy": "Never"}}},
    }


# --- controller-owned workloads -------------------------------------------------------------


@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"])
def test_a_replicaset_owned_by_a_deployment_is_never_rewritten(start_webhook, k8s_double, operation):
    """The Deployment controller finds its ReplicaSet by comparing templates; a rewritten one is
    not recognised and a new one is created in a loop (kubernetes#57167)."""
    hook = start_webhook()
    rs = replica_set("1")
    scaled = copy.deepcopy(rs)
    scaled["spec"]["replicas"] = 3
    review = admission_review(scaled, operation=operation, old=rs if operation == "UPDATE" else None)
    response = hook.review("/mutate", review)
    assert response["allowed"] is True and "patch" not in response
    assert k8s_double.list("ResourceClaimTemplate") == []


def test_a_job_made_by_a_cronjob_is_left_to_its_cronjob(start_webhook):
    hook = start_webhook()
    made = job("1")
    made["metadata"]["ownerReferences"] = [controller_ref("batch/v1", "CronJob", "nightly", "cj-1")]
    assert "patch" not in hook.review("/mutate", admission_review(made))


def test_a_replicaset_a_person_created_is_rewritten(start_webhook):
    rs = replica_set("1")
    del rs["metadata"]["ownerReferences"]
    assert patch_of(start_webhook().review("/mutate", admission_review(rs)))


def test_the_pods_of_a_legacy_replicaset_are_still_rewritten_one_by_one(start_webhook, k8s_double):
    """The ReplicaSet keeps its legacy template; each of its pods becomes a DRA pod at CREATE."""
    hook = start_webhook()
    pod = controller_pod()
    patched = jsonpatch.apply_patch(pod, patch_of(hook.review("/mutate", admission_review(pod))))
    assert "limits" not in patched["spec"]["containers"][0]["resources"]
    assert patched["spec"]["resourceClaims"]


# --- UPDATEs: immutable Job templates, updates that do not touch the template ------------------


def test_a_job_update_is_never_patched_because_its_template_is_immutable(start_webhook):
    """Kueue unsuspending a Job that existed before the webhook: a template patch would make the
    API server reject the update every time.  Kueue also writes the admitted flavor's nodeSelector
    into the template as it unsuspends (kueue pkg/controller/jobs/job/job_controller.go
    RunWithPodSetsInfo), which validation allows for a suspended Job that never started
    (kubernetes pkg/apis/batch/validation/validation.go ValidateJobSpecUpdate,
    AllowMutableSchedulingDirectives): the template changes, the resources still may not."""
    hook = start_webhook()
    old = job("1", suspend=True)
    new = job("1", suspend=False)
    new["spec"]["template"]["spec"]["nodeSelector"] = {"cloud.google.com/gke-accelerator": "nvidia-l4"}
    response = hook.review("/mutate", admission_review(new, operation="UPDATE", old=old))
    assert response["allowed"] is True and "patch" not in response


def test_a_new_job_is_rewritten_at_create(start_webhook):
    assert patch_of(start_webhook().review("/mutate", admission_review(job("1"))))


def test_a_deployment_update_that_leaves_the_template_alone_is_not_patched(start_webhook, k8s_double):
    """A legacy Deployment created before the webhook: labelling or scaling it must not start a
    rollout."""
    hook = start_webhook()
    old = deployment("1")
    new = deployment("1", labels={"team": "vision"})
    new["spec"]["replicas"] = 5
    response = hook.review("/mutate", admission_review(new, operation="UPDATE", old=old))
    assert response["allowed"] is True and "patch" not in response
    assert k8s_double.list("ResourceClaimTemplate") == []


def test_a_deployment_update_that_changes_the_template_is_rewritten(start_webhook):
    hook = start_webhook()
    old = deployment("1")
    new = deployment("1", image="nvidia/cuda:12.6")
    patched = jsonpatch.apply_patch(new, patch_of(hook.review("/mutate", admission_review(new, operation="UPDATE", old=old))))
    assert patched["spec"]["template"]["spec"]["resourceClaims"]


def test_a_fractional_deployment_update_is_rewritten_because_only_that_saves_it(start_webhook):
    """0.5 cannot be stored: an update carrying it changes the template and must be rewritten."""
    hook = start_webhook()
    response = hook.review("/mutate", admission_review(deployment("0.5"), operation="UPDATE", old=deployment("1")))
    assert patch_of(response)


# --- pods bound to a node -------------------------------------------------------------------


def test_a_pod_with_node_name_is_not_turned_into_a_claim(start_webhook, k8s_double):
    """spec.nodeName skips the scheduler, and only the scheduler allocates claims (NVIDIA's own
    operator validators create such pods)."""
    hook = start_webhook()
    pod = controller_pod("DaemonSet", "validator", "ds-1", nodeName="gpu-3")
    response = hook.review("/mutate", admission_review(pod))
    assert response["allowed"] is True and "patch" not in response
    assert any("spec.nodeName" in w for w in response["warnings"])
    assert k8s_double.list("ResourceClaimTemplate") == []


def test_a_legacy_pod_bound_to_a_dra_node_is_denied_saying_why(start_webhook, k8s_double):
    k8s_double.seed({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-3", "labels": DRA_NODE_LABELS}})
    hook = start_webhook()
    pod = controller_pod("DaemonSet", "validator", "ds-1", nodeName="gpu-3")
    response = hook.review("/validate", admission_review(pod))
    assert response["allowed"] is False and response["status"]["code"] == 403
    message = response["status"]["message"]
    assert "gpu-3" in message and "ack.node.gpu.schedule=disabled" in message
    assert "scheduler" in message  # why a claim is no way out for a pod bound by name


# --- opt-out on the workload object -----------------------------------------------------------


def test_opt_out_on_a_deployment_holds_for_its_pods(start_webhook, k8s_double):
    """docs/webhook.md: "Label a pod, its workload, or a namespace kubectl-gpu.io/opt-out=true".
    The Deployment's labels are not copied to its ReplicaSet or pods: the owner chain is read."""
    k8s_double.seed(deployment("1", labels={"kubectl-gpu.io/opt-out": "true"}), replica_set("1"))
    hook = start_webhook()
    pod = controller_pod()
    patched = jsonpatch.apply_patch(pod, patch_of(hook.review("/mutate", admission_review(pod))))
    assert patched["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert "affinity" in patched["spec"]  # still fenced off DRA nodes
    assert k8s_double.list("ResourceClaimTemplate") == []


def test_opt_out_with_a_configured_label_on_a_job_holds_for_its_pods(start_webhook, k8s_double):
    opted = job("1")
    opted["metadata"]["labels"] = {"example.com/no-dra": "true"}
    k8s_double.seed(opted)
    hook = start_webhook(optOutLabel="example.com/no-dra")
    pod = controller_pod("Job", "train", "j-1")
    patched = jsonpatch.apply_patch(pod, patch_of(hook.review("/mutate", admission_review(pod))))
    assert patched["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}


def test_pods_of_a_deployment_without_opt_out_are_rewritten_and_owners_read_once(start_webhook, k8s_double):
    k8s_double.seed(deployment("1"), replica_set("1"))
    hook = start_webhook()
    k8s_double.reset_requests()
    for uid in ("11111111-0000-0000-0000-000000000001", "11111111-0000-0000-0000-000000000002"):
        patched = jsonpatch.apply_patch(controller_pod(), patch_of(hook.review("/mutate", admission_review(controller_pod(), uid=uid))))
        assert patched["spec"]["resourceClaims"]
    assert k8s_double.count(verb="get", resource="replicasets") == 1
    assert k8s_double.count(verb="get", resource="deployments") == 1


def test_an_unreadable_owner_denies_with_a_retryable_message(start_webhook, k8s_double):
    k8s_double.fail("get", "replicasets", status=503, times=None)
    response = start_webhook().review("/mutate", admission_review(controller_pod()))
    assert response["allowed"] is False and response["status"]["code"] == 503


# --- invalid GPU requests: the same verdict as migrate ------------------------------------------


@pytest.mark.parametrize("limits, reason", [
    ({"nvidia.com/vcuda-core": "150"}, "multiple of 100"),
    ({"nvidia.com/gpu": "1", "nvidia.com/gpucores": "150"}, "from 1 to 100"),
    ({"nvidia.com/gpu": "1", "aliyun.com/gpu-mem": "4"}, "different GPU device plugins"),
])
def test_an_invalid_gpu_request_is_denied_with_the_whole_reason(start_webhook, k8s_double, limits, reason):
    """Controller-made pods never show warnings: a denial (an event on the ReplicaSet) is where
    the reason is read, and `kubectl gpu migrate` exits 3 on the same input."""
    pod = controller_pod()
    pod["spec"]["containers"][0]["resources"]["limits"] = limits
    response = start_webhook().review("/mutate", admission_review(pod))
    assert response["allowed"] is False and response["status"]["code"] == 422
    message = response["status"]["message"]
    assert reason in message and "container 'cuda'" in message and len(message) > 120
    assert k8s_double.list("ResourceClaimTemplate") == []


def test_an_invalid_gpu_request_only_warns_in_audit_mode(start_webhook):
    pod = controller_pod()
    pod["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/vcuda-core": "150"}
    response = start_webhook(audit=True).review("/mutate", admission_review(pod))
    assert response["allowed"] is True and response["warnings"]


def test_an_opted_out_pod_with_an_odd_request_is_left_to_its_device_plugin(start_webhook):
    pod = controller_pod()
    pod["metadata"]["labels"]["kubectl-gpu.io/opt-out"] = "true"
    pod["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/vcuda-core": "150"}
    assert start_webhook().review("/mutate", admission_review(pod))["allowed"] is True


def test_the_denial_and_migrate_agree(start_webhook, tmp_path):
    from click.testing import CliRunner

    from kubectl_gpu.cli.main import main

    pod = controller_pod()
    pod["metadata"]["name"] = "odd"
    pod["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/vcuda-core": "150"}
    denied = start_webhook().review("/mutate", admission_review(pod))
    source = tmp_path / "pod.json"
    source.write_text(json.dumps(pod))
    result = CliRunner().invoke(main, ["migrate", str(source)])
    assert result.exit_code == 3
    assert "100 is one GPU" in denied["status"]["message"] and "100 is one GPU" in result.output


# --- pins to a DRA node ---------------------------------------------------------------------


def daemonset_pin(node: str) -> dict:
    """The affinity the DaemonSet controller gives each of its pods: required, one term, matchFields
    metadata.name In [node] (kubernetes pkg/controller/daemon/util/daemonset_util.go,
    ReplaceDaemonSetPodNodeNameNodeAffinity)."""
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}


@pytest.mark.parametrize("pin", [
    {"affinity": daemonset_pin("gpu-3")},
    {"nodeSelector": {"kubernetes.io/hostname": "gpu-3"}},
    {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["gpu-3"]}]}]}}}},
])
def test_a_legacy_pod_pinned_to_a_dra_node_by_name_is_denied_however_it_names_it(start_webhook, k8s_double, pin):
    k8s_double.seed({"apiVersion": "v1", "kind": "Node",
                     "metadata": {"name": "gpu-3", "labels": {**DRA_NODE_LABELS, "kubernetes.io/hostname": "gpu-3"}}},
                    {"apiVersion": "v1", "kind": "Node",
                     "metadata": {"name": "cpu-1", "labels": {"kubernetes.io/hostname": "cpu-1"}}})
    hook = start_webhook()
    pod = controller_pod("DaemonSet", "exporter", "ds-1", **pin)
    response = hook.review("/validate", admission_review(pod))
    assert response["allowed"] is False and "gpu-3" in response["status"]["message"]
    elsewhere = fenced(json.loads(json.dumps(pod).replace("gpu-3", "cpu-1")))  # as /mutate leaves it
    assert hook.review("/validate", admission_review(elsewhere))["allowed"] is True


# --- a legacy GPU and a GPU claim in one container ------------------------------------------


def gpu_claim_template(name: str, device_class: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": device_class}}]}}}}


def test_a_container_asking_for_a_legacy_gpu_and_a_gpu_claim_is_denied_not_given_two_claims(start_webhook, k8s_double):
    """Rewriting the legacy request would add a second GPU claim to the container; /validate
    denies the same container when it arrives unrewritten (opted out), so /mutate says the same."""
    k8s_double.seed(gpu_claim_template("one-gpu", "gpu.nvidia.com"))
    pod = controller_pod(resourceClaims=[{"name": "g", "resourceClaimTemplateName": "one-gpu"}])
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "g"}]
    hook = start_webhook()
    mutated = hook.review("/mutate", admission_review(pod))
    assert mutated["allowed"] is False and mutated["status"]["code"] == 403
    validated = hook.review("/validate", admission_review(pod))  # unrewritten: also unfenced, said last
    assert validated["status"]["message"].startswith(mutated["status"]["message"])
    assert "asks for GPUs twice" in mutated["status"]["message"]


def test_a_legacy_gpu_beside_an_imex_channel_claim_is_still_rewritten(start_webhook, k8s_double):
    k8s_double.seed(gpu_claim_template("imex", "compute-domain-default-channel.nvidia.com"))
    pod = controller_pod(resourceClaims=[{"name": "ch", "resourceClaimTemplateName": "imex"}])
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "ch"}]
    patched = jsonpatch.apply_patch(pod, patch_of(start_webhook().review("/mutate", admission_review(pod))))
    assert len(patched["spec"]["resourceClaims"]) == 2


def test_the_opt_out_hint_names_the_configured_label(start_webhook, k8s_double):
    from kubectl_gpu.core import TranslateOptions, translate_pod_template

    [claim] = translate_pod_template(controller_pod(), TranslateOptions()).claims
    foreign = claim.manifest("default")
    foreign["metadata"].pop("labels", None)
    k8s_double.seed(foreign)
    response = start_webhook(optOutLabel="example.com/no-dra").review("/mutate", admission_review(controller_pod()))
    assert response["allowed"] is False
    assert "example.com/no-dra=true" in response["status"]["message"]
    assert "kubectl-gpu.io/opt-out" not in response["status"]["message"]


def test_the_answer_is_one_diff_of_the_original_and_the_changed_pod(start_webhook):
    """controller-runtime's PatchResponseFromRaw: change a copy, diff once.  A fenced pod that is
    also rewritten gets one patch with each path once, which applied gives both changes."""
    pod = controller_pod()
    pod["spec"]["containers"][0]["resources"]["limits"]["google.com/tpu"] = "4"
    pod["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]}]}}}
    hook = start_webhook(passThroughFamilies=["nvidia-gpu"])
    ops = patch_of(hook.review("/mutate", admission_review(pod)))
    paths = [op["path"] for op in ops]
    assert len(paths) == len(set(paths))
    patched = jsonpatch.apply_patch(pod, ops)
    assert patched["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"  # passed through
    expressions = patched["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"][0]["matchExpressions"]
    assert {"key": "ack.node.gpu.schedule", "operator": "NotIn", "values": ["disabled"]} in expressions
