"""The API double enforces ResourceQuota for pods and ResourceClaims as kube-apiserver's quota
admission does (tests/k8sdouble/quota.py cites the evaluators it follows)."""
from __future__ import annotations

import json
from fractions import Fraction

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.k8sdouble import K8sDouble
from tests.k8sdouble.quota import claim_usage, pod_usage


def message(error: ApiException) -> str:
    return json.loads(error.body)["message"]


def quota(hard: dict, name: str = "gpu", namespace: str = "team") -> dict:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name, "namespace": namespace},
            "spec": {"hard": hard}}


def gpu_pod(name: str, gpus: int = 1, namespace: str = "team") -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "main", "image": "cuda",
                                     "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}}


def claim(name: str, *requests: dict, namespace: str = "team", annotations: dict | None = None) -> dict:
    meta: dict = {"name": name, "namespace": namespace}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta,
            "spec": {"devices": {"requests": list(requests)}}}


def exactly(name: str, device_class: str = "gpu.nvidia.com", count: int = 1, mode: str = "ExactCount") -> dict:
    shape: dict = {"deviceClassName": device_class, "allocationMode": mode}
    if mode == "ExactCount":
        shape["count"] = count
    return {"name": name, "exactly": shape}


@pytest.fixture
def double():
    with K8sDouble(controllers=True, random_seed=7) as api:
        api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
        yield api


def test_a_pod_beyond_requests_nvidia_com_gpu_is_refused_with_the_servers_message(double):
    double.seed(quota({"requests.nvidia.com/gpu": "2"}))
    core = client.CoreV1Api(double.api_client())
    core.create_namespaced_pod("team", gpu_pod("a"))
    core.create_namespaced_pod("team", gpu_pod("b"))
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod("team", gpu_pod("c"))
    assert refused.value.status == 403
    assert json.loads(refused.value.body)["reason"] == "Forbidden"
    assert ('pods "c" is forbidden: exceeded quota: gpu, requested: requests.nvidia.com/gpu=1, '
            "used: requests.nvidia.com/gpu=2, limited: requests.nvidia.com/gpu=2") in message(refused.value)
    assert double.get("resourcequotas", "gpu", "team")["status"] == {
        "hard": {"requests.nvidia.com/gpu": "2"}, "used": {"requests.nvidia.com/gpu": "2"}}


def test_deleting_a_pod_frees_its_share_of_the_quota(double):
    double.seed(quota({"requests.nvidia.com/gpu": "1", "count/pods": "5"}))
    core = client.CoreV1Api(double.api_client())
    core.create_namespaced_pod("team", gpu_pod("a"))
    core.delete_namespaced_pod("a", "team")
    core.create_namespaced_pod("team", gpu_pod("b"))
    assert double.get("resourcequotas", "gpu", "team")["status"]["used"] == {
        "requests.nvidia.com/gpu": "1", "count/pods": "1"}


@pytest.mark.parametrize("key", ["nvidia.com/gpu", "limits.nvidia.com/gpu"])
def test_bare_and_limits_entries_of_an_extended_resource_cap_nothing(double, key):
    # pods.go: "only quota objects in format of "requests.resourceName" is allowed for extended resource".
    double.seed(quota({key: "1"}))
    core = client.CoreV1Api(double.api_client())
    core.create_namespaced_pod("team", gpu_pod("a", gpus=2))
    core.create_namespaced_pod("team", gpu_pod("b", gpus=2))
    assert double.get("resourcequotas", "gpu", "team")["status"] == {"hard": {key: "1"}, "used": {}}


def test_claims_are_charged_per_device_class_and_refused_beyond_it(double):
    double.seed(quota({"gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "3",
                       "count/resourceclaims.resource.k8s.io": "10"}))
    resource = client.ResourceV1Api(double.api_client())
    resource.create_namespaced_resource_claim("team", claim("two", exactly("gpu", count=2)))
    with pytest.raises(ApiException) as refused:
        resource.create_namespaced_resource_claim("team", claim("more", exactly("gpu", count=2)))
    assert refused.value.status == 403
    assert ('resourceclaims.resource.k8s.io "more" is forbidden: exceeded quota: gpu, requested: '
            "gpu.nvidia.com.deviceclass.resource.k8s.io/devices=2, used: "
            "gpu.nvidia.com.deviceclass.resource.k8s.io/devices=2, limited: "
            "gpu.nvidia.com.deviceclass.resource.k8s.io/devices=3") in message(refused.value)
    resource.create_namespaced_resource_claim("team", claim("one", exactly("gpu")))
    assert double.get("resourcequotas", "gpu", "team")["status"]["used"] == {
        "gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "3", "count/resourceclaims.resource.k8s.io": "2"}


def test_claim_usage_follows_the_evaluator_for_all_mode_and_first_available():
    usage = claim_usage(claim("c", exactly("all", mode="All"), {
        "name": "alt", "firstAvailable": [{"name": "a", "deviceClassName": "mig.nvidia.com", "count": 1},
                                          {"name": "b", "deviceClassName": "gpu.nvidia.com", "count": 1},
                                          {"name": "c", "deviceClassName": "mig.nvidia.com", "count": 2}]}),
                        extended_resource=False, class_resources={})
    assert usage == {"count/resourceclaims.resource.k8s.io": 1,
                     # All: AllocationResultsMaxSize (32), plus the firstAvailable worst case of the class.
                     "gpu.nvidia.com.deviceclass.resource.k8s.io/devices": 33,
                     # setResourceQuantity adds the larger later subrequest to the one already seen (1 + 2).
                     "mig.nvidia.com.deviceclass.resource.k8s.io/devices": 3}


def test_with_dra_extended_resource_a_claim_is_also_charged_to_its_class_extended_resource():
    usage = claim_usage(claim("c", exactly("gpu", count=2)), extended_resource=True,
                        class_resources={"gpu.nvidia.com": "nvidia.com/gpu"})
    assert usage == {"count/resourceclaims.resource.k8s.io": 1,
                     "gpu.nvidia.com.deviceclass.resource.k8s.io/devices": 2,
                     "requests.deviceclass.resource.kubernetes.io/gpu.nvidia.com": 2,
                     "requests.nvidia.com/gpu": 2}
    without = claim_usage(claim("c", exactly("gpu", count=2)), extended_resource=False,
                          class_resources={"gpu.nvidia.com": "nvidia.com/gpu"})
    assert "requests.nvidia.com/gpu" not in without


def test_with_dra_extended_resource_requests_nvidia_com_gpu_caps_pods_and_claims_together(double):
    double.set_feature_gates({"DRAExtendedResource": True})
    double.seed({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.nvidia.com"},
                 "spec": {"extendedResourceName": "nvidia.com/gpu"}}, quota({"requests.nvidia.com/gpu": "2"}))
    client.CoreV1Api(double.api_client()).create_namespaced_pod("team", gpu_pod("legacy"))
    resource = client.ResourceV1Api(double.api_client())
    resource.create_namespaced_resource_claim("team", claim("dra", exactly("gpu")))
    with pytest.raises(ApiException) as refused:
        resource.create_namespaced_resource_claim("team", claim("third", exactly("gpu")))
    assert "used: requests.nvidia.com/gpu=2, limited: requests.nvidia.com/gpu=2" in message(refused.value)


def test_pod_usage_counts_init_containers_as_the_scheduler_does():
    pod = gpu_pod("p", gpus=1)
    pod["spec"]["initContainers"] = [{"name": "warm", "image": "cuda",
                                      "resources": {"limits": {"nvidia.com/gpu": "3", "cpu": "500m"}}}]
    usage = pod_usage(pod)
    assert usage["requests.nvidia.com/gpu"] == 3
    assert usage["requests.cpu"] == Fraction(1, 2) and usage["limits.cpu"] == Fraction(1, 2)
    assert pod_usage({**pod, "status": {"phase": "Succeeded"}}) == {"count/pods": 1}


def test_a_replica_set_stops_at_the_quota_and_says_why(double):
    double.seed(quota({"requests.nvidia.com/gpu": "2"}))
    template = {"metadata": {"labels": {"app": "w"}}, "spec": gpu_pod("x")["spec"]}
    client.AppsV1Api(double.api_client()).create_namespaced_replica_set("team", {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "w", "namespace": "team"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "w"}}, "template": template}})
    assert len(double.list("pods", "team")) == 2
    events = [e for e in double.list("events", "team") if e["reason"] == "FailedCreate"]
    assert len(events) == 1 and "exceeded quota: gpu" in events[0]["message"]
    assert events[0]["message"].startswith('Error creating: pods "w-')


def test_a_claim_made_from_a_template_is_charged_and_its_pod_waits_when_refused(double):
    double.seed(quota({"gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "1"}),
                {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                 "metadata": {"name": "one-gpu", "namespace": "team"},
                 "spec": {"spec": {"devices": {"requests": [exactly("gpu")]}}}})
    core = client.CoreV1Api(double.api_client())
    for name in ("first", "second"):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "team"},
               "spec": {"containers": [{"name": "main", "image": "cuda", "resources": {"claims": [{"name": "gpu"}]}}],
                        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]}}
        core.create_namespaced_pod("team", pod)
    claims = double.list("resourceclaims", "team")
    assert [c["metadata"]["ownerReferences"][0]["name"] for c in claims] == ["first"]
    assert claims[0]["metadata"]["name"].startswith("first-gpu-")
    assert double.get("pods", "first", "team")["status"]["resourceClaimStatuses"] == [
        {"name": "gpu", "resourceClaimName": claims[0]["metadata"]["name"]}]
    # No node publishes devices here: the pod stays Pending and its claim unallocated.
    assert "status" not in claims[0] or not claims[0]["status"].get("allocation")
    second = double.get("pods", "second", "team")
    assert second["status"]["phase"] == "Pending" and "nodeName" not in second["spec"]
    refusal = [e for e in double.list("events", "team") if e["reason"] == "FailedResourceClaimCreation"]
    assert refusal[0]["involvedObject"]["name"] == "second"
    assert "exceeded quota: gpu, requested: gpu.nvidia.com.deviceclass.resource.k8s.io/devices=1" \
        in refusal[0]["message"]
    core.delete_namespaced_pod("first", "team")
    assert [c["metadata"]["ownerReferences"][0]["name"] for c in double.list("resourceclaims", "team")] == ["second"]


def test_binding_a_pod_allocates_its_claim_on_the_node_it_runs_on():
    with K8sDouble(controllers=True, random_seed=3) as api:
        api.seed({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "dra-1"},
                  "status": {"allocatable": {"cpu": "8"}}},
                 {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "dra-1-gpus"},
                  "spec": {"driver": "gpu.nvidia.com", "nodeName": "dra-1",
                           "pool": {"name": "dra-1", "generation": 1, "resourceSliceCount": 1},
                           "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]}},
                 {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                  "metadata": {"name": "one-gpu", "namespace": "default"},
                  "spec": {"spec": {"devices": {"requests": [exactly("gpu")]}}}})
        for name in ("a", "b"):
            client.CoreV1Api(api.api_client()).create_namespaced_pod("default", {
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                "spec": {"containers": [{"name": "main", "image": "cuda"}],
                         "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]}})
        allocated = sorted((c["status"]["reservedFor"][0]["name"], c["status"]["allocation"]["devices"]["results"][0]["device"])
                           for c in api.list("resourceclaims"))
        assert allocated == [("a", "gpu-0"), ("b", "gpu-1")]


# --- scopes and updates (pkg/quota/v1/evaluator/core/pods.go podMatchesScopeFunc; generic.Matches: a
# quota with scopes counts only objects matching every one of them; the claim evaluator matches no
# scope, generic.MatchesNoScopeFunc) -----------------------------------------------------------------

def scoped(hard: dict, name: str, scopes: list[str] | None = None, selector: list[dict] | None = None) -> dict:
    obj = quota(hard, name)
    if scopes:
        obj["spec"]["scopes"] = scopes
    if selector:
        obj["spec"]["scopeSelector"] = {"matchExpressions": selector}
    return obj


def with_spec(pod: dict, **spec) -> dict:
    pod["spec"].update(spec)
    return pod


def test_a_priority_class_scoped_quota_caps_only_pods_of_that_class(double):
    double.seed(scoped({"requests.nvidia.com/gpu": "1"}, "high",
                       selector=[{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]))
    core = client.CoreV1Api(double.api_client())
    core.create_namespaced_pod("team", with_spec(gpu_pod("a"), priorityClassName="high"))
    core.create_namespaced_pod("team", gpu_pod("unscoped-1"))  # no priority class: not this quota's
    core.create_namespaced_pod("team", gpu_pod("unscoped-2"))
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod("team", with_spec(gpu_pod("b"), priorityClassName="high"))
    assert "exceeded quota: high" in message(refused.value)
    status = core.read_namespaced_resource_quota("high", "team").status
    assert status.used == {"requests.nvidia.com/gpu": "1"}


def test_terminating_and_best_effort_scopes_follow_the_pods_fields(double):
    double.seed(scoped({"pods": "1"}, "batch", scopes=["Terminating"]))
    double.seed(scoped({"pods": "1"}, "besteffort", scopes=["BestEffort"]))
    core = client.CoreV1Api(double.api_client())

    def job(name: str) -> dict:  # a cpu request: NotBestEffort, so only the Terminating quota counts it
        pod = with_spec(gpu_pod(name), activeDeadlineSeconds=600)
        pod["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "1"}
        return pod

    core.create_namespaced_pod("team", job("job-1"))
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod("team", job("job-2"))
    assert "exceeded quota: batch" in message(refused.value)
    plain = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "idle-1", "namespace": "team"},
             "spec": {"containers": [{"name": "main", "image": "busybox"}]}}
    core.create_namespaced_pod("team", plain)  # BestEffort: no cpu/memory request or limit
    with pytest.raises(ApiException) as second:  # a GPU limit alone leaves a pod BestEffort (QoS counts cpu/memory)
        core.create_namespaced_pod("team", gpu_pod("gpu-only"))
    assert "exceeded quota: besteffort" in message(second.value)
    sized = gpu_pod("sized")
    sized["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "1"}
    core.create_namespaced_pod("team", sized)  # NotBestEffort: outside that quota


def test_a_scoped_quota_never_counts_resource_claims(double):
    double.seed(scoped({"gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "1"}, "scoped",
                       scopes=["NotTerminating"]))
    resource = client.ResourceV1Api(double.api_client())
    resource.create_namespaced_resource_claim("team", claim("a", exactly("gpu", count=2)))  # not refused
    assert client.CoreV1Api(double.api_client()).read_namespaced_resource_quota("scoped", "team").status.used == {
        "gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "0"}


def test_lowering_a_quota_below_use_is_allowed_and_refuses_the_next_pod(double):
    double.seed(quota({"requests.nvidia.com/gpu": "4"}))
    core = client.CoreV1Api(double.api_client())
    for name in ("a", "b", "c"):
        core.create_namespaced_pod("team", gpu_pod(name))
    core.patch_namespaced_resource_quota("gpu", "team", {"spec": {"hard": {"requests.nvidia.com/gpu": "2"}}})
    status = core.read_namespaced_resource_quota("gpu", "team").status
    assert status.hard == {"requests.nvidia.com/gpu": "2"} and status.used == {"requests.nvidia.com/gpu": "3"}
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod("team", gpu_pod("d"))
    assert "used: requests.nvidia.com/gpu=3, limited: requests.nvidia.com/gpu=2" in message(refused.value)
    core.patch_namespaced_resource_quota("gpu", "team", {"spec": {"hard": {"requests.nvidia.com/gpu": "8"}}})
    core.create_namespaced_pod("team", gpu_pod("d"))
