"""The webhook over real TLS on loopback, against the Kubernetes API double."""

from __future__ import annotations

import json
import time

import jsonpatch
import pytest

from tests.conftest import admission_review, captured_logs, eventually, fenced, patch_of
from webhook.templates import CREATED_BY_WEBHOOK

MANAGED = {"app.kubernetes.io/managed-by": "kubectl-gpu"}


def gpu_pod(amount: str = "1", name: str = "trainer", labels: dict | None = None, **spec_extra) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
        "spec": {
            "containers": [{"name": "cuda", "image": "nvidia/cuda", "resources": {"limits": {"nvidia.com/gpu": amount}}}],
            **spec_extra,
        },
    }


def deployment(amount: str = "0.5") -> dict:
    pod = gpu_pod(amount)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "infer", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "infer"}},
            "template": {"metadata": {"labels": {"app": "infer"}}, "spec": pod["spec"]},
        },
    }


def claim_template_names(pod: dict) -> list[str]:
    return [c["resourceClaimTemplateName"] for c in pod["spec"].get("resourceClaims", []) if "resourceClaimTemplateName" in c]


# --- endpoints ------------------------------------------------------------------------------


def test_health_ready_and_metrics_endpoints(start_webhook):
    hook = start_webhook()
    assert hook.request("GET", "/healthz") == (200, b"ok\n")
    assert hook.request("GET", "/readyz") == (200, b"ok\n")
    hook.review("/mutate", admission_review(gpu_pod()))
    metrics = hook.metrics_text()
    assert 'kubectl_gpu_webhook_reviews_total{endpoint="mutate",kind="Pod",operation="CREATE",result="patched"} 1.0' in metrics
    assert 'kubectl_gpu_webhook_rewrites_total{audit="false",family="nvidia-gpu"} 1.0' in metrics
    assert 'kubectl_gpu_webhook_templates_created_total{kind="ResourceClaimTemplate"} 1.0' in metrics
    assert "kubectl_gpu_webhook_review_duration_seconds_bucket" in metrics


def test_stays_ready_and_answers_what_needs_no_api_call_while_the_api_server_fails(start_webhook, k8s_double):
    # Every replica shares the API server: NotReady on its failure would empty the Service at once,
    # and then failurePolicy Fail rejects every GPU pod with a connection error and Ignore admits
    # every one unfenced.  Ready, the webhook answers what needs no API call and denies the rest
    # with a retryable message.
    hook = start_webhook()
    k8s_double.stop()
    eventually(lambda: b"Kubernetes API not reachable" in hook.request("GET", "/readyz")[1])
    status, body = hook.request("GET", "/readyz")
    assert status == 200 and b"retry" in body
    assert hook.request("GET", "/healthz")[0] == 200
    opted_out = gpu_pod("1", labels={"kubectl-gpu.io/opt-out": "true"})  # fenced, from its content alone
    fenced_answer = hook.review("/mutate", admission_review(opted_out))
    assert fenced_answer["allowed"] is True and patch_of(fenced_answer)
    assert hook.review("/validate", admission_review(rct()))["allowed"] is True
    needs_template = hook.review("/mutate", admission_review(gpu_pod()))
    assert needs_template["allowed"] is False and needs_template["status"]["code"] == 503


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_serves_only_tls_1_2_or_newer(start_webhook):
    import socket
    import ssl

    hook = start_webhook()
    old = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    old.load_verify_locations(hook.ca_file)
    old.minimum_version = ssl.TLSVersion.TLSv1
    old.maximum_version = ssl.TLSVersion.TLSv1_1
    with pytest.raises(ssl.SSLError):
        with socket.create_connection(("127.0.0.1", hook.port)) as raw:
            with old.wrap_socket(raw, server_hostname="127.0.0.1"):
                pass


# --- pods ---------------------------------------------------------------------------------------


def test_gpu_pod_is_rewritten_and_its_template_created_before_admission(start_webhook, k8s_double):
    hook = start_webhook()
    pod = gpu_pod("1")
    response = hook.review("/mutate", admission_review(pod, uid="abc-123"))
    assert response["uid"] == "abc-123" and response["allowed"] is True
    patched = jsonpatch.apply_patch(pod, patch_of(response))
    assert "nvidia.com/gpu" not in json.dumps(patched["spec"]["containers"])
    [template] = claim_template_names(patched)
    stored = k8s_double.get("ResourceClaimTemplate", template, "default")
    assert stored is not None and stored["metadata"]["labels"] == MANAGED | CREATED_BY_WEBHOOK
    assert any("nvidia.com/gpu" in w for w in response["warnings"])
    assert all(len(w) <= 120 for w in response["warnings"])


def test_patch_paths_escape_slashes(start_webhook):
    hook = start_webhook()
    response = hook.review("/mutate", admission_review(gpu_pod("1", labels={"a": "b"}) | {}))
    for op in patch_of(response):
        assert "nvidia.com/gpu" not in op["path"]  # a '/' inside a key is written ~1


def test_pod_without_gpus_is_allowed_untouched_without_api_calls(start_webhook, k8s_double):
    hook = start_webhook()
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    k8s_double.reset_requests()
    response = hook.review("/mutate", admission_review(pod))
    assert response == {"uid": response["uid"], "allowed": True}
    assert k8s_double.requests == []


def test_pod_update_is_never_mutated(start_webhook):
    hook = start_webhook()
    response = hook.review("/mutate", admission_review(gpu_pod(), operation="UPDATE", old=gpu_pod()))
    assert response["allowed"] and "patch" not in response


def api_calls(double) -> list[tuple[str, str]]:
    """The requests the webhook made, without its standing watches."""
    return [(r.verb, r.resource) for r in double.requests if r.verb != "watch"]


def test_a_controllers_next_pod_costs_no_api_round_trip(start_webhook, k8s_double):
    """The managed templates are watched (list + watch, as client-go's informers keep a copy of
    what a controller needs: https://kubernetes.io/docs/reference/using-api/api-concepts/
    "Efficient detection of changes"), so the steady state asks the API server nothing."""
    hook = start_webhook()
    hook.review("/mutate", admission_review(gpu_pod(name="a")))
    k8s_double.reset_requests()
    response = hook.review("/mutate", admission_review(gpu_pod(name="b")))
    assert patch_of(response)
    assert api_calls(k8s_double) == []


def test_a_template_deleted_a_moment_ago_is_created_again_before_the_next_pod(start_webhook, k8s_double):
    """Deleted by hand (or with its namespace, which is then created again): the next pod is
    admitted and the template it points at exists again, however soon the pod comes."""
    hook = start_webhook()
    first = jsonpatch.apply_patch(gpu_pod(name="a"), patch_of(hook.review("/mutate", admission_review(gpu_pod(name="a")))))
    [name] = claim_template_names(first)
    k8s_double.delete("ResourceClaimTemplate", name, "default")
    second = hook.review("/mutate", admission_review(gpu_pod(name="b")))
    assert second["allowed"] is True
    eventually(lambda: k8s_double.get("ResourceClaimTemplate", name, "default") is not None)


def test_a_template_deleted_just_after_a_pod_was_admitted_is_created_again_for_it(start_webhook, k8s_double):
    """The pod admitted against it would wait for it (the resourceclaim controller creates the
    pod's claim from the template): a template a review needed lately is re-created as soon as
    the watch reports it deleted, with nobody else asking."""
    hook = start_webhook()
    pod = jsonpatch.apply_patch(gpu_pod(name="a"), patch_of(hook.review("/mutate", admission_review(gpu_pod(name="a")))))
    [name] = claim_template_names(pod)
    k8s_double.reset_requests()
    k8s_double.delete("ResourceClaimTemplate", name, "default")
    eventually(lambda: k8s_double.get("ResourceClaimTemplate", name, "default") is not None)
    assert k8s_double.count(verb="create", resource="resourceclaimtemplates") == 1


def test_while_the_watch_fails_pods_arriving_together_share_one_check(start_webhook, k8s_double):
    import threading

    k8s_double.fail("list", "resourceclaimtemplates", status=500, times=None)
    hook = start_webhook()
    hook.review("/mutate", admission_review(gpu_pod(name="warm")))
    k8s_double.delay(0.3, "get", "resourceclaimtemplates")
    k8s_double.reset_requests()
    threads = [threading.Thread(target=hook.review, args=("/mutate", admission_review(gpu_pod(name=f"p{i}"), uid=f"00000000-0000-0000-0000-00000000000{i}")))
               for i in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert 1 <= k8s_double.count(verb="get", resource="resourceclaimtemplates") < 5


def test_existing_managed_template_is_reused_not_recreated(start_webhook, k8s_double):
    hook = start_webhook()
    first = hook.review("/mutate", admission_review(gpu_pod()))
    [name] = claim_template_names(jsonpatch.apply_patch(gpu_pod(), patch_of(first)))
    other = start_webhook()  # another replica: its watch lists the object already there
    k8s_double.reset_requests()
    response = other.review("/mutate", admission_review(gpu_pod(name="again")))
    assert response["allowed"] is True
    assert k8s_double.count(verb="create") == 0
    assert ("list", "resourceclaimtemplates") in api_calls(k8s_double)


def test_foreign_template_with_the_same_name_is_never_used(start_webhook, k8s_double):
    probe = start_webhook()
    dry = probe.review("/mutate", admission_review(gpu_pod(), dry_run=True))
    [name] = claim_template_names(jsonpatch.apply_patch(gpu_pod(), patch_of(dry)))
    k8s_double.seed({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}},
    })
    response = start_webhook().review("/mutate", admission_review(gpu_pod()))
    assert response["allowed"] is False
    assert response["status"]["code"] == 409
    assert "not managed by kubectl-gpu" in response["status"]["message"] and name in response["status"]["message"]


def test_managed_template_whose_spec_was_edited_is_not_used(start_webhook, k8s_double):
    hook = start_webhook()
    first = hook.review("/mutate", admission_review(gpu_pod()))
    [name] = claim_template_names(jsonpatch.apply_patch(gpu_pod(), patch_of(first)))
    stored = k8s_double.get("ResourceClaimTemplate", name, "default")
    stored["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 4
    k8s_double.seed(stored, replace=True)
    response = start_webhook().review("/mutate", admission_review(gpu_pod()))
    assert response["allowed"] is False
    assert "spec was changed" in response["status"]["message"]
    assert f"kubectl delete resourceclaimtemplate -n default {name}" in response["status"]["message"]


@pytest.mark.parametrize("poison", [
    {"selectors": [{"cel": {"expression": 'device.attributes["gpu.nvidia.com"].productName == "Tesla T4"'}}]},
    {"tolerations": [{"key": "maintenance", "operator": "Exists", "effect": "NoSchedule"}]},
    {"adminAccess": True},
], ids=["extra-selector", "extra-toleration", "admin-access"])
def test_managed_template_with_extra_fields_is_not_used(start_webhook, k8s_double, poison):
    # Same name, managed label and every field the webhook wants, plus one it never writes: pods
    # would get a claim narrower, wider or more privileged than the one they were rewritten for.
    hook = start_webhook()
    first = hook.review("/mutate", admission_review(gpu_pod()))
    [name] = claim_template_names(jsonpatch.apply_patch(gpu_pod(), patch_of(first)))
    stored = k8s_double.get("ResourceClaimTemplate", name, "default")
    stored["spec"]["spec"]["devices"]["requests"][0]["exactly"].update(poison)
    k8s_double.seed(stored, replace=True)
    response = start_webhook().review("/mutate", admission_review(gpu_pod()))
    assert response["allowed"] is False and response["status"]["code"] == 409
    assert "spec was changed" in response["status"]["message"]


def test_a_template_read_back_with_the_api_servers_defaults_is_used(start_webhook, k8s_double):
    # The API server defaults what the webhook wrote (allocationMode, count, a toleration's
    # operator): the stored object differs from the request only by those, and is the same claim.
    hook = start_webhook()
    first = hook.review("/mutate", admission_review(gpu_pod()))
    [name] = claim_template_names(jsonpatch.apply_patch(gpu_pod(), patch_of(first)))
    stored = k8s_double.get("ResourceClaimTemplate", name, "default")
    assert stored["spec"]["spec"]["devices"]["requests"][0]["exactly"]["allocationMode"] == "ExactCount"
    assert start_webhook().review("/mutate", admission_review(gpu_pod()))["allowed"] is True


def test_api_failure_denies_with_a_retryable_message(start_webhook, k8s_double):
    hook = start_webhook()
    k8s_double.fail("create", "resourceclaimtemplates", status=500, times=None)
    response = hook.review("/mutate", admission_review(gpu_pod()))
    assert response["allowed"] is False and response["status"]["code"] == 503
    assert "retry" in response["status"]["message"]
    assert 'kubectl_gpu_webhook_api_errors_total{operation="create"} 1.0' in hook.metrics_text()
    k8s_double.clear_faults()
    assert hook.review("/mutate", admission_review(gpu_pod()))["allowed"] is True


def test_a_review_answers_within_the_api_servers_timeout_however_many_calls_it_makes(start_webhook, k8s_double):
    # Each call stays under apiTimeoutSeconds, but together they outlast what the API server waits
    # for (admissionTimeoutSeconds, the webhook configuration's timeoutSeconds): the review must
    # answer, retryably, before the API server gives up on it.
    hook = start_webhook(apiTimeoutSeconds=1.5, admissionTimeoutSeconds=3)
    for verb, resource in (("get", "namespaces"), ("list", "resourceclaimtemplates"),
                           ("create", "resourceclaimtemplates"), ("list", "resourceslices"),
                           ("list", "deviceclasses")):
        k8s_double.delay(1.2, verb, resource)
    started = time.monotonic()
    response = hook.review("/mutate", admission_review(gpu_pod()))
    elapsed = time.monotonic() - started
    assert response["allowed"] is False and response["status"]["code"] == 503
    assert "retry" in response["status"]["message"] and "3s" in response["status"]["message"]
    assert elapsed < 3, elapsed
    k8s_double.clear_faults()
    eventually(lambda: hook.review("/mutate", admission_review(gpu_pod()))["allowed"], 10)


def test_api_timeout_denies_instead_of_hanging(start_webhook, k8s_double):
    hook = start_webhook(apiTimeoutSeconds=0.5)
    for verb in ("list", "get", "create"):
        k8s_double.fail(verb, "resourceclaimtemplates", status="timeout", seconds=2, times=None)
    response = hook.review("/mutate", admission_review(gpu_pod()))
    assert response["allowed"] is False and response["status"]["code"] == 503


def test_lost_create_race_reuses_the_winners_template(start_webhook, k8s_double):
    """Without a current watch (its list fails here) the webhook GETs, then creates."""
    k8s_double.fail("list", "resourceclaimtemplates", status=500, times=None)
    hook = start_webhook()
    dry = hook.review("/mutate", admission_review(gpu_pod(), dry_run=True))
    [name] = claim_template_names(jsonpatch.apply_patch(gpu_pod(), patch_of(dry)))
    # The GET says "missing", then someone else creates it before our POST: 409 AlreadyExists.
    k8s_double.fail("get", "resourceclaimtemplates", status=404, times=1, name=name)
    winner = start_webhook()
    winner.review("/mutate", admission_review(gpu_pod()))
    k8s_double.reset_requests()
    k8s_double.fail("get", "resourceclaimtemplates", status=404, times=1, name=name)
    response = hook.review("/mutate", admission_review(gpu_pod()))
    assert response["allowed"] is True
    assert k8s_double.count(verb="create") == 1 and k8s_double.count(verb="get") == 2


def test_dry_run_creates_nothing_but_returns_the_patch(start_webhook, k8s_double):
    hook = start_webhook()
    response = hook.review("/mutate", admission_review(gpu_pod(), dry_run=True))
    assert patch_of(response)
    assert k8s_double.list("ResourceClaimTemplate") == []
    assert k8s_double.count(verb="create") == 0


def test_mutation_is_idempotent_on_reinvocation(start_webhook):
    hook = start_webhook()
    pod = gpu_pod("2")
    once = jsonpatch.apply_patch(pod, patch_of(hook.review("/mutate", admission_review(pod))))
    assert patch_of(hook.review("/mutate", admission_review(once))) == []


# --- workloads ---------------------------------------------------------------------------------


def test_fractional_gpu_deployment_is_rewritten_under_spec_template(start_webhook, k8s_double):
    hook = start_webhook(translation={"gpuMemory": "80Gi", "sharing": "consumable"})
    deploy = deployment("0.5")
    response = hook.review("/mutate", admission_review(deploy))
    ops = patch_of(response)
    assert ops and all(op["path"].startswith("/spec/template/") for op in ops)
    patched = jsonpatch.apply_patch(deploy, ops)
    [name] = claim_template_names(patched["spec"]["template"])
    stored = k8s_double.get("ResourceClaimTemplate", name, "default")
    assert stored["spec"]["spec"]["devices"]["requests"][0]["exactly"]["capacity"]["requests"]["memory"] == "40Gi"
    again = hook.review("/mutate", admission_review(patched, operation="UPDATE", old=deploy))
    assert patch_of(again) == []


def test_cronjob_is_rewritten_under_its_job_template(start_webhook):
    hook = start_webhook()
    cron = {
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly"},
        "spec": {"schedule": "@daily", "jobTemplate": {"spec": {"template": {"spec": {**gpu_pod()["spec"], "restartPolicy": "Never"}}}}},
    }
    ops = patch_of(hook.review("/mutate", admission_review(cron)))
    assert ops and all(op["path"].startswith("/spec/jobTemplate/spec/template/") for op in ops)


def test_workloads_are_left_alone_when_rewriting_them_is_off(start_webhook):
    hook = start_webhook(rewriteWorkloads=False)
    response = hook.review("/mutate", admission_review(deployment("1")))
    assert response["allowed"] and "patch" not in response


# --- opting out, exclusions, audit -------------------------------------------------------------


def test_pod_opt_out_label_keeps_requests_and_fences_the_pod_off_dra_nodes(start_webhook, k8s_double):
    hook = start_webhook()
    pod = gpu_pod("1", labels={"kubectl-gpu.io/opt-out": "true"})
    response = hook.review("/mutate", admission_review(pod))
    patched = jsonpatch.apply_patch(pod, patch_of(response))
    assert patched["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    terms = patched["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert any(e["key"] == "ack.node.gpu.schedule" for t in terms for e in t["matchExpressions"])
    assert k8s_double.list("ResourceClaimTemplate") == []
    assert 'kubectl_gpu_webhook_double_counting_findings_total{finding="fenced"} 1.0' in hook.metrics_text()


def test_namespace_opt_out_label_is_honoured(start_webhook, k8s_double):
    k8s_double.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "legacy", "labels": {"kubectl-gpu.io/opt-out": "true"}}})
    hook = start_webhook()
    pod = gpu_pod("1")
    pod["metadata"]["namespace"] = "legacy"
    patched = jsonpatch.apply_patch(pod, patch_of(hook.review("/mutate", admission_review(pod, namespace="legacy"))))
    assert patched["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert k8s_double.list("ResourceClaimTemplate", "legacy") == []


@pytest.mark.parametrize("namespace", ["kube-system", "gpu-webhook"])
def test_kube_system_and_its_own_namespace_are_never_touched(start_webhook, k8s_double, namespace):
    hook = start_webhook(env={"POD_NAMESPACE": "gpu-webhook"})
    k8s_double.reset_requests()
    response = hook.review("/mutate", admission_review(gpu_pod(), namespace=namespace))
    assert response == {"uid": response["uid"], "allowed": True}
    assert k8s_double.requests == []


def test_audit_mode_only_warns(start_webhook, k8s_double):
    hook = start_webhook(audit=True)
    response = hook.review("/mutate", admission_review(gpu_pod()))
    assert response["allowed"] and "patch" not in response
    assert any(w.startswith("kubectl-gpu audit") for w in response["warnings"])
    assert k8s_double.list("ResourceClaimTemplate") == []


def test_extended_resource_mode_leaves_whole_gpus_to_the_scheduler(start_webhook, k8s_double):
    hook = start_webhook(translation={"integerGpus": "extended-resource"})
    whole = hook.review("/mutate", admission_review(gpu_pod("2")))
    assert "patch" not in whole  # neither rewritten nor fenced: KEP-5004 serves it on DRA nodes
    fraction = hook.review("/mutate", admission_review(gpu_pod("0.5", name="half")))
    assert patch_of(fraction) and k8s_double.list("ResourceClaimTemplate")


def test_pass_through_family_is_fenced_not_rewritten(start_webhook):
    hook = start_webhook(passThroughFamilies=["nvidia-gpu"])
    pod = gpu_pod("1")
    patched = jsonpatch.apply_patch(pod, patch_of(hook.review("/mutate", admission_review(pod))))
    assert patched["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert "nodeAffinity" in patched["spec"]["affinity"]


# --- /validate ---------------------------------------------------------------------------------


def rct(expression: str = 'device.driver == "gpu.nvidia.com"', config: dict | None = None) -> dict:
    devices: dict = {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com",
                                                              "selectors": [{"cel": {"expression": expression}}]}}]}
    if config:
        devices["config"] = [{"requests": ["gpu"], "opaque": {"driver": "gpu.nvidia.com", "parameters": config}}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "t"},
            "spec": {"spec": {"devices": devices}}}


def test_valid_claim_template_is_allowed(start_webhook):
    assert start_webhook().review("/validate", admission_review(rct()))["allowed"] is True


def test_claim_template_with_broken_cel_is_denied_with_its_position(start_webhook):
    response = start_webhook().review("/validate", admission_review(rct('device.driver == ')))
    assert response["allowed"] is False and response["status"]["code"] == 422
    assert "spec.spec.devices.requests[0]" in response["status"]["message"]


def test_claim_template_with_bad_mps_percentage_is_denied(start_webhook):
    config = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
              "sharing": {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 150}}}
    response = start_webhook().review("/validate", admission_review(rct(config=config)))
    assert response["allowed"] is False and "defaultActiveThreadPercentage" in response["status"]["message"]


def test_legacy_pod_pinned_to_a_dra_node_by_node_name_is_denied(start_webhook, k8s_double):
    k8s_double.seed({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-7", "labels": {"ack.node.gpu.schedule": "disabled"}}})
    hook = start_webhook()
    response = hook.review("/validate", admission_review(gpu_pod("1", nodeName="gpu-7")))
    assert response["allowed"] is False and "gpu-7" in response["status"]["message"]
    assert 'finding="pinned"' in hook.metrics_text()
    assert hook.review("/validate", admission_review(gpu_pod("1", nodeName="cpu-1")))["allowed"] is True


def test_a_dra_only_pod_on_a_named_node_is_admitted_without_reading_the_node(start_webhook, k8s_double):
    k8s_double.fail("get", "nodes", status=503, times=None)
    pod = gpu_pod("1", nodeName="gpu-7", resourceClaims=[{"name": "g", "resourceClaimTemplateName": "gpu"}])
    pod["spec"]["containers"][0]["resources"] = {"claims": [{"name": "g"}]}
    assert start_webhook().review("/validate", admission_review(pod))["allowed"] is True
    assert k8s_double.count(verb="get", resource="nodes") == 0
    # The same pod with a device-plugin GPU does need the node, and is not admitted blind.
    legacy = start_webhook().review("/validate", admission_review(gpu_pod("1", nodeName="gpu-7")))
    assert legacy["allowed"] is False and legacy["status"]["code"] == 503


def test_legacy_pod_pinned_by_node_selector_is_denied_but_audit_only_warns(start_webhook):
    pod = gpu_pod("1", nodeSelector={"ack.node.gpu.schedule": "disabled"})
    assert start_webhook().review("/validate", admission_review(pod))["allowed"] is False
    audited = start_webhook(audit=True).review("/validate", admission_review(pod))
    assert audited["allowed"] is True and audited["warnings"]


def test_same_gpus_by_legacy_resource_and_gpu_claim_is_denied(start_webhook, k8s_double):
    k8s_double.seed({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                     "metadata": {"name": "gpu", "namespace": "default"},
                     "spec": {"spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}})
    pod = gpu_pod("1", resourceClaims=[{"name": "g", "resourceClaimTemplateName": "gpu"}])
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "g"}]
    response = start_webhook().review("/validate", admission_review(pod))
    assert response["allowed"] is False and "asks for GPUs twice" in response["status"]["message"]


def test_legacy_gpu_beside_a_non_gpu_claim_is_allowed(start_webhook, k8s_double):
    k8s_double.seed({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                     "metadata": {"name": "imex", "namespace": "default"},
                     "spec": {"spec": {"devices": {"requests": [{"name": "ch", "exactly": {"deviceClassName": "compute-domain-default-channel.nvidia.com"}}]}}}})
    pod = gpu_pod("1", resourceClaims=[{"name": "ch", "resourceClaimTemplateName": "imex"}])
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "ch"}]
    assert start_webhook().review("/validate", admission_review(fenced(pod)))["allowed"] is True


def test_a_legacy_pod_that_skipped_the_fence_is_denied_saying_what_to_add(start_webhook):
    # The mutating webhook was bypassed (failurePolicy Ignore during an outage) or a webhook after it
    # rewrote the affinity: the pod could land on a DRA node and share its GPUs with DRA claims.
    hook = start_webhook()
    opted_out = gpu_pod("1", labels={"kubectl-gpu.io/opt-out": "true"})  # keeps its device-plugin GPU
    response = hook.review("/validate", admission_review(opted_out))
    assert response["allowed"] is False and response["status"]["code"] == 403
    message = response["status"]["message"]
    assert "nothing keeps this pod off DRA nodes" in message and "nvidia.com/gpu" in message
    assert '{"key": "ack.node.gpu.schedule", "operator": "NotIn", "values": ["disabled"]}' in message
    # As /mutate leaves it (fenced), the same pod is admitted.
    fenced = jsonpatch.apply_patch(opted_out, patch_of(hook.review("/mutate", admission_review(opted_out))))
    assert hook.review("/validate", admission_review(fenced))["allowed"] is True
    # A later webhook that replaces the affinity removes the fence: denied again.
    rewritten = {**fenced, "spec": {**fenced["spec"], "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}}}
    assert hook.review("/validate", admission_review(rewritten))["allowed"] is False
    audited = start_webhook(audit=True).review("/validate", admission_review(opted_out))
    assert audited["allowed"] is True and any("off DRA nodes" in w for w in audited["warnings"])


def renamed_gpu_pod(resource: str, amount: str = "1") -> dict:
    pod = gpu_pod()
    pod["spec"]["containers"][0]["resources"] = {"limits": {resource: amount}}
    return pod


@pytest.mark.parametrize("resource", ["nvidia.com/a100", "nvidia.com/mps", "example.com/gpu"])
def test_renamed_device_plugin_resources_are_fenced_off_dra_nodes_not_rewritten(start_webhook, k8s_double, resource):
    # The NVIDIA device plugin renames what it advertises: resources.gpus[].name (nvidia.com/a100,
    # whole GPUs of one model), time-slicing/MPS `rename` (replicas of a GPU), RESOURCE_PREFIX
    # (another domain).  Declared in extraLegacyResources, they are kept off DRA nodes.
    k8s_double.seed({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-7", "labels": {"ack.node.gpu.schedule": "disabled"}}})
    hook = start_webhook(extraLegacyResources=[resource])
    pod = renamed_gpu_pod(resource)
    response = hook.review("/mutate", admission_review(pod))
    patched = jsonpatch.apply_patch(pod, patch_of(response))
    assert patched["spec"]["containers"] == pod["spec"]["containers"]  # not rewritten: fence only
    assert patched["spec"]["affinity"]["nodeAffinity"]  # kept off DRA nodes
    assert k8s_double.list("ResourceClaimTemplate") == []
    assert hook.review("/validate", admission_review(patched))["allowed"] is True
    assert hook.review("/validate", admission_review(pod))["allowed"] is False  # unfenced
    pinned = hook.review("/validate", admission_review(renamed_gpu_pod(resource) | {"spec": {
        **pod["spec"], "nodeName": "gpu-7"}}))
    assert pinned["allowed"] is False and resource in pinned["status"]["message"]
    # Undeclared, the same name is none of the webhook's business.
    assert "patch" not in start_webhook().review("/mutate", admission_review(pod))
    zero = hook.review("/mutate", admission_review(renamed_gpu_pod(resource, "0")))
    assert "patch" not in zero


def test_extra_legacy_resources_must_be_resource_names(start_webhook):
    from webhook.config import ConfigError

    with pytest.raises(ConfigError, match="extraLegacyResources"):
        start_webhook(extraLegacyResources=["a100"])
    with pytest.raises(ConfigError, match="already"):
        start_webhook(extraLegacyResources=["nvidia.com/gpu"])


# --- node status guard -------------------------------------------------------------------------


def dra_node() -> dict:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "gpu-1", "labels": {"ack.node.gpu.schedule": "disabled"}},
            "status": {"capacity": {"cpu": "8", "nvidia.com/gpu": "4"}, "allocatable": {"cpu": "8", "nvidia.com/gpu": "4"}}}


def test_node_status_guard_is_off_by_default(start_webhook):
    response = start_webhook().review("/mutate", admission_review(dra_node(), operation="UPDATE", namespace="", sub_resource="status"))
    assert "patch" not in response


def test_node_status_guard_strips_legacy_gpus_from_dra_nodes(start_webhook):
    hook = start_webhook(nodeStatusGuard=True)
    node = dra_node()
    response = hook.review("/mutate", admission_review(node, operation="UPDATE", namespace="", sub_resource="status"))
    patched = jsonpatch.apply_patch(node, patch_of(response))
    assert patched["status"]["capacity"] == {"cpu": "8"} and patched["status"]["allocatable"] == {"cpu": "8"}
    assert 'finding="node_status_stripped"' in hook.metrics_text()


def test_reviews_are_logged_as_json_lines_with_the_review_uid(start_webhook):
    with captured_logs() as stream:
        hook = start_webhook()
        response = hook.review("/mutate", admission_review(gpu_pod(), uid="log-me-1"))
    assert response["allowed"] is True
    entries = [json.loads(line) for line in stream.getvalue().splitlines()]
    [entry] = [e for e in entries if e.get("uid") == "log-me-1"]
    assert entry["result"] == "patched" and entry["kind"] == "Pod" and entry["level"] == "info"
