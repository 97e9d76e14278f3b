"""The Kubernetes API double, specified through the real kubernetes client and real kubectl."""
from __future__ import annotations

import json
import shutil
import threading
import time

import pytest
import urllib3
import yaml
from kubernetes import client, watch
from kubernetes import config as kubernetes_config
from kubernetes.client.rest import ApiException

from tests.corpus import corpus_dir, requires_corpus
from tests.k8sdouble import TIMEOUT, K8sDouble, UnknownResource
from tests.k8sdouble.fixtures import k8s_double  # noqa: F401 - the fixture under test

DRA_CORPUS = corpus_dir("dra")
needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")


def pod(name: str | None = None, namespace: str = "default", labels: dict | None = None,
        node: str | None = None, generate_name: str | None = None) -> dict:
    meta: dict = {"namespace": namespace}
    if name:
        meta["name"] = name
    if generate_name:
        meta["generateName"] = generate_name
    if labels:
        meta["labels"] = labels
    spec: dict = {"containers": [{"name": "main", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def claim_template(name: str, device_class: str = "gpu.nvidia.com", namespace: str = "default") -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu",
                                                        "exactly": {"deviceClassName": device_class}}]}}}}


def status_of(error: ApiException) -> dict:
    return json.loads(error.body)


@pytest.fixture
def core(k8s_double: K8sDouble) -> client.CoreV1Api:
    return client.CoreV1Api(k8s_double.api_client())


@pytest.fixture
def resource_v1(k8s_double: K8sDouble) -> client.ResourceV1Api:
    return client.ResourceV1Api(k8s_double.api_client())


# ------------------------------------------------------------------ create / get / list


def test_a_started_double_serves_the_default_namespaces(core):
    names = [ns.metadata.name for ns in core.list_namespace().items]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]


def test_create_sets_server_owned_metadata_and_get_returns_the_same_object(core, k8s_double):
    before = k8s_double.resource_version
    created = core.create_namespaced_pod("default", pod("p1"))
    meta = created.metadata
    assert meta.uid and meta.creation_timestamp is not None and meta.generation == 1
    assert int(meta.resource_version) == before + 1
    assert created.status.phase == "Pending"
    fetched = core.read_namespaced_pod("p1", "default")
    assert fetched.to_dict() == created.to_dict()
    assert k8s_double.get("Pod", "p1")["metadata"]["uid"] == meta.uid


def test_every_write_bumps_one_global_resource_version(core, resource_v1):
    rvs = [int(core.create_namespaced_pod("default", pod("a")).metadata.resource_version),
           int(resource_v1.create_namespaced_resource_claim_template("default", claim_template("t"))
               .metadata.resource_version),
           int(core.create_namespace({"metadata": {"name": "team-a"}}).metadata.resource_version)]
    assert rvs == sorted(set(rvs)) and rvs[2] - rvs[0] == 2


def test_generate_name_appends_a_random_suffix(core):
    first = core.create_namespaced_pod("default", pod(generate_name="worker-"))
    second = core.create_namespaced_pod("default", pod(generate_name="worker-"))
    for created in (first, second):
        assert created.metadata.name.startswith("worker-") and len(created.metadata.name) == len("worker-") + 5
    assert first.metadata.name != second.metadata.name


def test_creating_an_existing_name_is_409_already_exists(core, resource_v1):
    resource_v1.create_namespaced_resource_claim_template("default", claim_template("one-gpu"))
    with pytest.raises(ApiException) as raised:
        resource_v1.create_namespaced_resource_claim_template("default", claim_template("one-gpu"))
    status = status_of(raised.value)
    assert raised.value.status == 409 and status["kind"] == "Status" and status["reason"] == "AlreadyExists"
    assert status["message"] == 'resourceclaimtemplates.resource.k8s.io "one-gpu" already exists'
    assert status["details"] == {"name": "one-gpu", "group": "resource.k8s.io", "kind": "resourceclaimtemplates"}


def test_the_same_name_in_another_namespace_is_a_different_object(core):
    core.create_namespaced_pod("default", pod("p"))
    core.create_namespaced_pod("team-a", pod("p", namespace="team-a"))
    assert sorted(p.metadata.namespace for p in core.list_pod_for_all_namespaces().items) == ["default", "team-a"]


def test_missing_objects_are_404_not_found(core, resource_v1):
    with pytest.raises(ApiException) as raised:
        core.read_namespaced_pod("ghost", "default")
    assert raised.value.status == 404 and status_of(raised.value)["reason"] == "NotFound"
    with pytest.raises(ApiException) as raised:
        resource_v1.delete_namespaced_resource_claim_template("ghost", "default")
    assert raised.value.status == 404


def test_namespace_in_body_must_match_the_url(core):
    with pytest.raises(ApiException) as raised:
        core.create_namespaced_pod("default", pod("p", namespace="other"))
    assert raised.value.status == 400 and "does not match the namespace" in status_of(raised.value)["message"]


def test_cluster_scoped_kinds_have_no_namespace(core, k8s_double):
    k8s_double.seed({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-node-1"}})
    node = core.read_node("gpu-node-1")
    assert node.metadata.namespace is None


# ------------------------------------------------------------------ update / patch


def test_update_with_a_stale_resource_version_is_409_conflict(core):
    created = core.create_namespaced_pod("default", pod("p"))
    fresh = core.read_namespaced_pod("p", "default")
    fresh.metadata.labels = {"step": "1"}
    core.replace_namespaced_pod("p", "default", fresh)
    created.metadata.labels = {"step": "stale"}
    with pytest.raises(ApiException) as raised:
        core.replace_namespaced_pod("p", "default", created)
    status = status_of(raised.value)
    assert raised.value.status == 409 and status["reason"] == "Conflict"
    assert "the object has been modified" in status["message"]
    assert core.read_namespaced_pod("p", "default").metadata.labels == {"step": "1"}


def test_generation_counts_spec_changes_only(k8s_double):
    apps = client.AppsV1Api(k8s_double.api_client())
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}},
                           "template": {"metadata": {"labels": {"app": "d"}},
                                        "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    created = apps.create_namespaced_deployment("default", deployment)
    relabelled = apps.patch_namespaced_deployment("d", "default", {"metadata": {"labels": {"x": "y"}}})
    scaled = apps.patch_namespaced_deployment("d", "default", {"spec": {"replicas": 3}})
    assert (created.metadata.generation, relabelled.metadata.generation, scaled.metadata.generation) == (1, 1, 2)
    assert int(relabelled.metadata.resource_version) > int(created.metadata.resource_version)


def test_a_no_op_update_keeps_the_resource_version(core):
    created = core.create_namespaced_pod("default", pod("p", labels={"a": "b"}))
    again = core.patch_namespaced_pod("p", "default", {"metadata": {"labels": {"a": "b"}}})
    assert again.metadata.resource_version == created.metadata.resource_version


def test_patch_content_types(core):
    core.create_namespaced_pod("default", pod("p", labels={"keep": "1", "drop": "1"}))
    # the client sends a dict as strategic merge: containers merge by name
    core.patch_namespaced_pod("p", "default", {"spec": {"containers": [{"name": "side", "image": "envoy"}]}})
    merged = core.read_namespaced_pod("p", "default")
    assert [c.name for c in merged.spec.containers] == ["main", "side"]
    core.patch_namespaced_pod("p", "default", {"metadata": {"labels": {"drop": None, "new": "2"}}},
                              _content_type="application/merge-patch+json")
    core.patch_namespaced_pod("p", "default", [{"op": "add", "path": "/metadata/annotations",
                                                "value": {"a.io~1x": "y"}}])
    patched = core.read_namespaced_pod("p", "default")
    assert patched.metadata.labels == {"keep": "1", "new": "2"}
    assert patched.metadata.annotations == {"a.io~1x": "y"}


def test_a_failing_json_patch_is_422_and_changes_nothing(core):
    created = core.create_namespaced_pod("default", pod("p"))
    with pytest.raises(ApiException) as raised:
        core.patch_namespaced_pod("p", "default", [{"op": "test", "path": "/metadata/name", "value": "other"},
                                                   {"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}])
    assert raised.value.status == 422
    assert core.read_namespaced_pod("p", "default").metadata.resource_version == created.metadata.resource_version


def test_status_subresource_is_separate_from_the_main_resource(core, k8s_double):
    k8s_double.seed({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                     "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"}}})
    core.patch_node_status("n1", {"status": {"allocatable": {"nvidia.com/gpu": None}},
                                  "metadata": {"labels": {"ignored": "on-status"}}},
                           _content_type="application/merge-patch+json")
    node = core.read_node("n1")
    assert node.status.allocatable == {} and node.status.capacity == {"nvidia.com/gpu": "8"}
    assert node.metadata.labels is None
    node.status.capacity = {}
    node.metadata.labels = {"set": "on-main"}
    core.replace_node("n1", node)
    after = core.read_node("n1")
    assert after.status.capacity == {"nvidia.com/gpu": "8"} and after.metadata.labels == {"set": "on-main"}
    assert k8s_double.count(verb="patch", resource="nodes/status") == 1
    assert k8s_double.count(verb="update", resource="nodes") == 1


# ------------------------------------------------------------------ delete


def test_delete_returns_the_pod_and_a_status_for_a_deployment(core, k8s_double):
    created = core.create_namespaced_pod("default", pod("p"))
    deleted = core.delete_namespaced_pod("p", "default")
    assert deleted.metadata.uid == created.metadata.uid
    assert k8s_double.get("Pod", "p") is None
    k8s_double.seed({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                     "spec": {"selector": {}, "template": {"spec": {"containers": []}}}})
    status = client.AppsV1Api(k8s_double.api_client()).delete_namespaced_deployment("d", "default")
    assert status["kind"] == "Status" and status["status"] == "Success" and status["details"]["name"] == "d"


def test_delete_precondition_on_resource_version(core):
    created = core.create_namespaced_pod("default", pod("p"))
    core.patch_namespaced_pod("p", "default", {"metadata": {"labels": {"a": "b"}}})
    with pytest.raises(ApiException) as raised:
        core.delete_namespaced_pod("p", "default", body=client.V1DeleteOptions(
            preconditions=client.V1Preconditions(resource_version=created.metadata.resource_version)))
    assert raised.value.status == 409


def test_deleting_a_namespace_deletes_what_is_in_it(core, k8s_double):
    k8s_double.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
                    pod("p", namespace="team-a"), pod("q"))
    core.delete_namespace("team-a")
    assert [p["metadata"]["name"] for p in k8s_double.list("pods")] == ["q"]


def test_delete_collection_honours_the_label_selector(core, k8s_double):
    k8s_double.seed(pod("a", labels={"gpu": "yes"}), pod("b", labels={"gpu": "no"}), pod("c", labels={"gpu": "yes"}))
    core.delete_collection_namespaced_pod("default", label_selector="gpu=yes")
    assert [p["metadata"]["name"] for p in k8s_double.list("pods")] == ["b"]


# ------------------------------------------------------------------ dry run


def test_dry_run_answers_like_a_write_and_stores_nothing(core, resource_v1, k8s_double):
    k8s_double.seed(pod("existing"))
    rv = k8s_double.resource_version
    created = resource_v1.create_namespaced_resource_claim_template("default", claim_template("t"), dry_run="All")
    assert created.metadata.name == "t" and created.metadata.uid
    generated = core.create_namespaced_pod("default", pod(generate_name="gen-"), dry_run="All")
    assert generated.metadata.name.startswith("gen-")
    patched = core.patch_namespaced_pod("existing", "default", {"metadata": {"labels": {"a": "b"}}}, dry_run="All")
    assert patched.metadata.labels == {"a": "b"}
    core.delete_namespaced_pod("existing", "default", dry_run="All")
    with pytest.raises(ApiException) as raised:  # dry run still reports what the write would hit
        core.create_namespaced_pod("default", pod("existing"), dry_run="All")
    assert raised.value.status == 409
    assert k8s_double.resource_version == rv
    assert k8s_double.list("resourceclaimtemplates") == []
    assert [p["metadata"]["name"] for p in k8s_double.list("pods")] == ["existing"]
    assert "labels" not in k8s_double.get("pods", "existing")["metadata"]
    assert k8s_double.count(verb="create", resource="resourceclaimtemplates") == 1
    assert all(r.dry_run for r in k8s_double.requests)


# ------------------------------------------------------------------ validation


def test_a_v1beta1_shaped_request_sent_as_v1_is_422_invalid(k8s_double):
    flat = claim_template("flat")
    flat["spec"]["spec"]["devices"]["requests"][0] = {"name": "gpu", "deviceClassName": "gpu.nvidia.com"}
    # the typed client refuses this body itself; the dynamic client sends what it is given
    templates = k8s_double.dynamic_client().resources.get(api_version="resource.k8s.io/v1",
                                                                      kind="ResourceClaimTemplate")
    with pytest.raises(ApiException) as raised:
        templates.create(body=flat, namespace="default")
    status = status_of(raised.value)
    assert raised.value.status == 422 and status["reason"] == "Invalid"
    assert status["details"]["causes"][0]["field"] == "spec.spec.devices.requests[0]"
    assert "deviceClassName" in status["message"]
    assert k8s_double.list("resourceclaimtemplates") == []


def test_names_must_be_dns_subdomains(core):
    with pytest.raises(ApiException) as raised:
        core.create_namespaced_pod("default", pod("Not_A_Name"))
    assert raised.value.status == 422 and status_of(raised.value)["details"]["causes"][0]["field"] == "metadata.name"


# ------------------------------------------------------------------ selectors


@pytest.mark.parametrize(("selector", "expected"), [
    ("tier=gpu", ["a", "b"]),
    ("tier==gpu", ["a", "b"]),
    ("tier!=gpu", ["c", "d"]),  # != also matches pods without the label
    ("tier in (gpu,cpu)", ["a", "b", "c"]),
    ("tier notin (gpu)", ["c", "d"]),
    ("migrated", ["b"]),
    ("!migrated", ["a", "c", "d"]),
    ("tier=gpu,!migrated", ["a"]),
    ("tier in (gpu), migrated=yes", ["b"]),
    ("", ["a", "b", "c", "d"]),
])
def test_label_selectors(core, k8s_double, selector, expected):
    k8s_double.seed(pod("a", labels={"tier": "gpu"}), pod("b", labels={"tier": "gpu", "migrated": "yes"}),
                    pod("c", labels={"tier": "cpu"}), pod("d"))
    names = [p.metadata.name for p in core.list_namespaced_pod("default", label_selector=selector).items]
    assert names == expected


def test_a_malformed_label_selector_is_400(core):
    with pytest.raises(ApiException) as raised:
        core.list_namespaced_pod("default", label_selector="tier in gpu")
    assert raised.value.status == 400 and "label selector" in status_of(raised.value)["message"]


def test_field_selectors_on_name_namespace_and_node(core, k8s_double):
    k8s_double.seed(pod("a", node="n1"), pod("b", node="n2"), pod("c", namespace="team-a", node="n1"))
    by_node = core.list_pod_for_all_namespaces(field_selector="spec.nodeName=n1").items
    assert sorted(p.metadata.name for p in by_node) == ["a", "c"]
    not_n1 = core.list_pod_for_all_namespaces(field_selector="spec.nodeName!=n1,metadata.namespace=default")
    assert [p.metadata.name for p in not_n1.items] == ["b"]
    assert [p.metadata.name for p in core.list_namespaced_pod("default", field_selector="metadata.name=a").items] \
        == ["a"]


def test_an_unsupported_field_selector_is_400(core):
    with pytest.raises(ApiException) as raised:
        core.list_namespaced_pod("default", field_selector="spec.containers=x")
    assert raised.value.status == 400 and "field label not supported" in status_of(raised.value)["message"]


def test_resource_slices_select_by_node_and_driver(resource_v1, k8s_double):
    for node, driver in (("n1", "gpu.nvidia.com"), ("n2", "gpu.nvidia.com"), ("n1", "gpu.example.com")):
        k8s_double.seed({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                         "metadata": {"name": f"{node}-{driver}"},
                         "spec": {"driver": driver, "nodeName": node, "pool": {"name": node, "generation": 1,
                                                                               "resourceSliceCount": 1},
                                  "devices": [{"name": "gpu-0"}]}})
    slices = resource_v1.list_resource_slice(field_selector="spec.nodeName=n1,spec.driver=gpu.nvidia.com").items
    assert [s.metadata.name for s in slices] == ["n1-gpu.nvidia.com"]


# ------------------------------------------------------------------ pagination


def test_pagination_returns_every_object_exactly_once(core, k8s_double):
    k8s_double.seed([pod(f"p{i:04d}", namespace=f"ns{i % 7}") for i in range(1234)])
    seen, pages, token, remaining = [], 0, None, []
    first_rv = None
    while True:
        page = core.list_pod_for_all_namespaces(limit=100, _continue=token)
        assert len(page.items) <= 100
        first_rv = first_rv or page.metadata.resource_version
        assert page.metadata.resource_version == first_rv
        seen += [(p.metadata.namespace, p.metadata.name) for p in page.items]
        pages += 1
        token = page.metadata._continue
        if not token:
            break
        remaining.append(page.metadata.remaining_item_count)
    assert pages == 13 and len(seen) == 1234 and len(set(seen)) == 1234
    assert remaining == list(range(1134, 0, -100))


def test_pagination_is_a_consistent_snapshot_of_the_first_page(core, k8s_double):
    k8s_double.seed([pod(f"p{i:03d}") for i in range(30)])
    first = core.list_namespaced_pod("default", limit=10)
    core.delete_namespaced_pod("p025", "default")
    core.create_namespaced_pod("default", pod("p999"))
    rest, token = [], first.metadata._continue
    while token:
        page = core.list_namespaced_pod("default", limit=10, _continue=token)
        rest += [p.metadata.name for p in page.items]
        token = page.metadata._continue
    assert [p.metadata.name for p in first.items] + rest == [f"p{i:03d}" for i in range(30)]


def test_pagination_with_a_selector_filters_every_page(core, k8s_double):
    k8s_double.seed([pod(f"p{i:03d}", labels={"gpu": "yes" if i % 3 == 0 else "no"}) for i in range(100)])
    names, token = [], None
    while True:
        page = core.list_namespaced_pod("default", limit=7, label_selector="gpu=yes", _continue=token)
        names += [p.metadata.name for p in page.items]
        token = page.metadata._continue
        if not token:
            break
    assert names == [f"p{i:03d}" for i in range(0, 100, 3)]


def test_a_garbled_continue_token_is_400(core):
    with pytest.raises(ApiException) as raised:
        core.list_namespaced_pod("default", limit=1, _continue="not-a-token")
    assert raised.value.status == 400


# ------------------------------------------------------------------ watch


def test_watch_streams_changes_after_the_list_resource_version(core, k8s_double):
    k8s_double.seed(pod("before"))
    rv = core.list_namespaced_pod("default").metadata.resource_version

    def writer():
        core.create_namespaced_pod("default", pod("w"))
        core.patch_namespaced_pod("w", "default", {"metadata": {"labels": {"a": "b"}}})
        core.create_namespaced_pod("team-a", pod("elsewhere", namespace="team-a"))
        core.delete_namespaced_pod("w", "default")

    threading.Thread(target=writer).start()
    events = []
    w = watch.Watch()
    for event in w.stream(core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=10):
        events.append((event["type"], event["object"].metadata.name))
        if len(events) == 3:
            w.stop()
    assert events == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]


def test_watch_without_resource_version_starts_with_the_current_state(core, k8s_double):
    k8s_double.seed(pod("a", labels={"gpu": "yes"}), pod("b"), pod("c", labels={"gpu": "yes"}))
    w = watch.Watch()
    names = []
    for event in w.stream(core.list_namespaced_pod, "default", label_selector="gpu=yes", timeout_seconds=10):
        names.append((event["type"], event["object"].metadata.name))
        if len(names) == 2:
            w.stop()
    assert names == [("ADDED", "a"), ("ADDED", "c")]


def test_a_watch_ends_at_its_timeout(core):
    events = list(watch.Watch().stream(core.list_namespaced_pod, "default", timeout_seconds=1))
    assert events == []


def test_watching_from_a_compacted_resource_version_is_410_gone():
    with K8sDouble(event_log_size=10) as double:
        double.seed([pod(f"p{i}") for i in range(30)])
        core = client.CoreV1Api(double.api_client())
        with pytest.raises(ApiException) as raised:
            list(watch.Watch().stream(core.list_namespaced_pod, "default", resource_version="2", timeout_seconds=5))
        assert raised.value.status == 410


# ------------------------------------------------------------------ faults and request counting


def test_injected_errors_surface_as_api_exceptions_then_clear(resource_v1, k8s_double):
    fault = k8s_double.fail(verb="create", resource="resourceclaimtemplates", status=500, times=2)
    for _ in range(2):
        with pytest.raises(ApiException) as raised:
            resource_v1.create_namespaced_resource_claim_template("default", claim_template("t"))
        assert raised.value.status == 500 and status_of(raised.value)["reason"] == "InternalError"
    created = resource_v1.create_namespaced_resource_claim_template("default", claim_template("t"))
    assert created.metadata.name == "t" and fault.hits == 2
    assert k8s_double.count(verb="create", resource="resourceclaimtemplates") == 3


@pytest.mark.parametrize(("code", "reason"), [(409, "Conflict"), (503, "ServiceUnavailable"), (403, "Forbidden")])
def test_injected_status_codes(core, k8s_double, code, reason):
    k8s_double.seed(pod("p"))
    k8s_double.fail(verb="get", resource="pods", status=code, name="p")
    with pytest.raises(ApiException) as raised:
        core.read_namespaced_pod("p", "default")
    assert raised.value.status == code and status_of(raised.value)["reason"] == reason
    assert core.read_namespaced_pod("p", "default").metadata.name == "p"


def test_faults_only_hit_matching_requests(core, resource_v1, k8s_double):
    k8s_double.fail(verb="create", resource="resourceclaimtemplates", namespace="team-a", times=None)
    resource_v1.create_namespaced_resource_claim_template("default", claim_template("t"))
    core.create_namespaced_pod("team-a", pod("p", namespace="team-a"))
    for _ in range(3):
        with pytest.raises(ApiException):
            resource_v1.create_namespaced_resource_claim_template("team-a", claim_template("t", namespace="team-a"))
    k8s_double.clear_faults()
    resource_v1.create_namespaced_resource_claim_template("team-a", claim_template("t", namespace="team-a"))


def test_a_timeout_fault_leaves_the_client_without_an_answer(core, k8s_double):
    k8s_double.fail(verb="list", resource="pods", status=TIMEOUT, seconds=0.3)
    api = client.CoreV1Api(k8s_double.api_client(retries=False))
    with pytest.raises(urllib3.exceptions.HTTPError):
        api.list_namespaced_pod("default")
    assert api.list_namespaced_pod("default").items == []


def test_latency_delays_but_does_not_fail(core, k8s_double):
    fault = k8s_double.delay(0.2, verb="list", resource="nodes")
    started = time.monotonic()
    core.list_node()
    core.list_namespace()
    assert time.monotonic() - started >= 0.2 and fault.hits == 1


def test_requests_are_counted_by_verb_and_resource(core, k8s_double):
    core.create_namespaced_pod("default", pod("p"))
    core.read_namespaced_pod("p", "default")
    core.list_namespaced_pod("default")
    core.list_pod_for_all_namespaces()
    core.list_node()
    assert k8s_double.count(resource="pods") == 4
    assert k8s_double.count(verb="list", resource="pods") == 2
    assert k8s_double.count(verb="list", resource="pods", namespace="default") == 1
    assert [(r.verb, r.resource_path) for r in k8s_double.requests][-1] == ("list", "nodes")


def test_bad_fault_definitions_are_rejected(k8s_double):
    with pytest.raises(ValueError, match="unknown resource"):
        k8s_double.fail(resource="gpus")
    with pytest.raises(ValueError, match="400-599"):
        k8s_double.fail(resource="pods", status=200)


# ------------------------------------------------------------------ resource.k8s.io versions


def test_objects_are_served_at_every_resource_api_version(k8s_double):
    beta1 = client.ResourceV1beta1Api(k8s_double.api_client())
    flat = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "t"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.nvidia.com",
                                                        "count": 2}]}}}}
    beta1.create_namespaced_resource_claim_template("default", flat)
    v1 = client.ResourceV1Api(k8s_double.api_client()).read_namespaced_resource_claim_template("t", "default")
    request = v1.spec.spec.devices.requests[0]
    assert request.exactly.device_class_name == "gpu.nvidia.com" and request.exactly.count == 2
    beta2 = client.ResourceV1beta2Api(k8s_double.api_client()).read_namespaced_resource_claim_template(
        "t", "default")
    assert beta2.api_version == "resource.k8s.io/v1beta2"
    assert beta2.spec.spec.devices.requests[0].exactly.count == 2
    raw = k8s_double.get("resourceclaimtemplates", "t", version="v1beta1")
    # Stored defaulted, as kube-apiserver does (allocationMode ExactCount).
    assert raw["spec"]["spec"]["devices"]["requests"] == [{"name": "gpu", "deviceClassName": "gpu.nvidia.com",
                                                           "count": 2, "allocationMode": "ExactCount"}]


def test_claim_specs_are_defaulted_on_write_as_the_api_server_does(k8s_double):
    v1 = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c"},
          "spec": {"devices": {"requests": [
              {"name": "a", "exactly": {"deviceClassName": "gpu.nvidia.com",
                                        "tolerations": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}},
              {"name": "b", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All"}},
              {"name": "c", "firstAvailable": [{"name": "x", "deviceClassName": "gpu.nvidia.com"}]}]}}}
    client.ResourceV1Api(k8s_double.api_client()).create_namespaced_resource_claim("default", v1)
    requests = k8s_double.get("ResourceClaim", "c")["spec"]["devices"]["requests"]
    assert requests[0]["exactly"]["allocationMode"] == "ExactCount" and requests[0]["exactly"]["count"] == 1
    assert requests[0]["exactly"]["tolerations"][0]["operator"] == "Equal"
    assert "count" not in requests[1]["exactly"]
    assert requests[2]["firstAvailable"][0] | {} == {"name": "x", "deviceClassName": "gpu.nvidia.com",
                                                   "allocationMode": "ExactCount", "count": 1}


def test_resource_slice_devices_are_wrapped_in_basic_for_v1beta1(k8s_double):
    k8s_double.seed({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
                     "spec": {"driver": "gpu.nvidia.com", "nodeName": "n1",
                              "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                              "devices": [{"name": "gpu-0", "attributes": {"productName": {"string": "H100"}},
                                           "capacity": {"memory": {"value": "80Gi"}}}]}})
    device = client.ResourceV1beta1Api(k8s_double.api_client()).read_resource_slice("s").spec.devices[0]
    assert device.name == "gpu-0" and device.basic.capacity["memory"].value == "80Gi"
    assert device.basic.attributes["productName"].string == "H100"


def test_v1beta1_slice_devices_lose_basic_at_v1(k8s_double):
    k8s_double.seed({"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", "metadata": {"name": "s"},
                     "spec": {"driver": "gpu.nvidia.com", "nodeName": "n1",
                              "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                              "devices": [{"name": "gpu-0", "basic": {
                                  "attributes": {"productName": {"string": "H100"}},
                                  "capacity": {"memory": {"value": "80Gi"}}}}]}})
    (device,) = k8s_double.get("resourceslices", "s", version="v1")["spec"]["devices"]
    assert device == {"name": "gpu-0", "attributes": {"productName": {"string": "H100"}},
                      "capacity": {"memory": {"value": "80Gi"}}}


def test_a_cluster_without_resource_v1_does_not_serve_it():
    with K8sDouble(disabled_group_versions=["resource.k8s.io/v1"]) as double:
        groups = client.ApisApi(double.api_client()).get_api_versions().groups
        resource = next(g for g in groups if g.name == "resource.k8s.io")
        assert [v.version for v in resource.versions] == ["v1beta2", "v1beta1"]
        with pytest.raises(ApiException) as raised:
            client.ResourceV1Api(double.api_client()).list_resource_claim_for_all_namespaces()
        assert raised.value.status == 404
        assert client.ResourceV1beta2Api(double.api_client()).list_resource_claim_for_all_namespaces().items == []


def test_discovery_lists_resources_with_verbs_and_scope(k8s_double):
    resources = client.ResourceV1Api(k8s_double.api_client()).get_api_resources().resources
    by_name = {r.name: r for r in resources}
    assert by_name["resourceclaims"].namespaced and not by_name["resourceslices"].namespaced
    assert by_name["resourceclaims/status"].verbs == ["get", "patch", "update"]
    assert "watch" in by_name["deviceclasses"].verbs and by_name["deviceclasses"].kind == "DeviceClass"
    assert client.VersionApi(k8s_double.api_client()).get_code().minor == "34"


# ------------------------------------------------------------------ seeding and the store API


def _corpus_documents() -> list[tuple[str, dict]]:
    docs = []
    for path in sorted(DRA_CORPUS.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                docs.append((path.name, doc))
    return docs


@requires_corpus
def test_every_served_dra_corpus_document_seeds_and_reads_back(k8s_double):
    dynamic_client = k8s_double.dynamic_client()
    served = [(f, d) for f, d in _corpus_documents() if k8s_double.serves(d)]
    unserved = [(f, d) for f, d in _corpus_documents() if not k8s_double.serves(d)]
    assert len(served) > 40 and {d["apiVersion"] for _, d in unserved} <= {"resource.k8s.io/v1alpha2",
                                                                             "resource.k8s.io/v1alpha3"}
    for _, doc in served:
        k8s_double.seed(doc, replace=True)
    for name, doc in served:
        for item in doc["items"] if doc["kind"] == "List" else [doc]:
            resource = dynamic_client.resources.get(api_version=item["apiVersion"], kind=item["kind"])
            namespace = item["metadata"].get("namespace", "default") if resource.namespaced else None
            read = resource.get(name=item["metadata"]["name"], namespace=namespace).to_dict()
            assert read["apiVersion"] == item["apiVersion"], name
            assert read.get("spec") == item.get("spec"), name


def test_seeding_an_unserved_kind_says_what_is_served(k8s_double):
    with pytest.raises(UnknownResource, match="resource.k8s.io/v1 ResourceClaim"):
        k8s_double.seed({"apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourceSlice",
                         "metadata": {"name": "s"}})


def test_seed_accepts_multi_document_yaml_and_lists(k8s_double):
    stored = k8s_double.seed_yaml("""
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n1}}
- {apiVersion: v1, kind: Node, metadata: {name: n2, uid: fixed-uid, creationTimestamp: "2024-01-01T00:00:00Z"}}
---
""")
    assert [o["metadata"]["name"] for o in stored] == ["team-a", "n1", "n2"]
    assert k8s_double.get("Node", "n2")["metadata"]["uid"] == "fixed-uid"
    assert k8s_double.get("nodes", "n2")["metadata"]["creationTimestamp"] == "2024-01-01T00:00:00Z"
    with pytest.raises(Exception, match="already exists"):
        k8s_double.seed({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})


def test_seeded_objects_are_seen_by_watches(core, k8s_double):
    rv = core.list_namespaced_pod("default").metadata.resource_version
    k8s_double.seed(pod("seeded"))
    stream = watch.Watch().stream(core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=5)
    event = next(stream)
    assert (event["type"], event["object"].metadata.name) == ("ADDED", "seeded")
    stream.close()


def test_concurrent_creates_get_unique_names_and_resource_versions(k8s_double):
    api = client.CoreV1Api(k8s_double.api_client())
    results: list = []

    def create_some():
        for _ in range(20):
            results.append(api.create_namespaced_pod("default", pod(generate_name="c-")).metadata)

    threads = [threading.Thread(target=create_some) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({m.name for m in results}) == 80 and len({m.resource_version for m in results}) == 80


def test_the_kubeconfig_works_with_the_clients_own_loader(k8s_double):
    k8s_double.seed(pod("p", namespace="ml"))
    path = k8s_double.kubeconfig_path(namespace="ml")
    api = kubernetes_config.new_client_from_config(config_file=path)
    _, active = kubernetes_config.list_kube_config_contexts(config_file=path)
    assert active["context"]["namespace"] == "ml"
    assert [p.metadata.name for p in client.CoreV1Api(api).list_namespaced_pod("ml").items] == ["p"]
    api.close()


def test_stopping_the_double_ends_open_watches():
    double = K8sDouble().start()
    core = client.CoreV1Api(double.api_client())
    finished = threading.Event()

    def watch_forever():
        try:
            for _ in watch.Watch().stream(core.list_namespaced_pod, "default", timeout_seconds=30):
                pass
        except Exception:  # the connection may be cut mid-stream; ending is what matters
            pass
        finished.set()

    threading.Thread(target=watch_forever, daemon=True).start()
    deadline = time.monotonic() + 10
    while double.count(verb="watch") == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    double.stop()
    assert finished.wait(10)


def test_a_token_protected_double_rejects_anonymous_requests():
    with K8sDouble(token="s3cret") as double:
        assert client.CoreV1Api(double.api_client()).list_node().items == []
        anonymous = client.Configuration()
        anonymous.host = double.url
        with pytest.raises(ApiException) as raised:
            client.CoreV1Api(client.ApiClient(anonymous)).list_node()
        assert raised.value.status == 401


# ------------------------------------------------------------------ real kubectl


@needs_kubectl
def test_kubectl_lists_pods_in_all_namespaces(k8s_double):
    k8s_double.seed(pod("gpu-job", namespace="ml"), pod("web"))
    out = k8s_double.kubectl("--kubeconfig", k8s_double.kubeconfig_path(), "get", "pods", "-A").stdout.splitlines()
    assert out[0].split() == ["NAMESPACE", "NAME", "AGE"]
    assert sorted(line.split()[:2] for line in out[1:]) == [["default", "web"], ["ml", "gpu-job"]]


@needs_kubectl
def test_kubectl_gets_nodes_as_json(k8s_double):
    k8s_double.seed([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
                      "status": {"capacity": {"nvidia.com/gpu": "8"}}} for i in range(3)])
    nodes = json.loads(k8s_double.kubectl("get", "nodes", "-o", "json").stdout)
    assert [n["metadata"]["name"] for n in nodes["items"]] == ["n0", "n1", "n2"]
    assert nodes["items"][0]["status"]["capacity"] == {"nvidia.com/gpu": "8"}


@needs_kubectl
@requires_corpus
def test_kubectl_creates_a_dra_corpus_manifest_and_reads_the_claims(k8s_double):
    manifest = DRA_CORPUS / "kubernetes-sigs__dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test1.yaml"
    created = k8s_double.kubectl("create", "--validate=false", "-f", str(manifest))
    assert "resourceclaimtemplate.resource.k8s.io/single-gpu created" in created.stdout
    names = k8s_double.kubectl("get", "resourceclaimtemplates", "-n", "gpu-test1", "-o", "name").stdout.split()
    assert names == ["resourceclaimtemplate.resource.k8s.io/single-gpu"]
    assert k8s_double.get("pods", "pod1", namespace="gpu-test1") is not None


@needs_kubectl
def test_kubectl_label_and_a_404_exit_status(k8s_double):
    k8s_double.seed(pod("p"))
    k8s_double.kubectl("label", "pod", "p", "migrated=yes")
    assert k8s_double.get("pods", "p")["metadata"]["labels"] == {"migrated": "yes"}
    missing = k8s_double.kubectl("get", "pod", "ghost", check=False)
    assert missing.returncode == 1 and 'pods "ghost" not found' in missing.stderr


@needs_kubectl
def test_kubectl_describe_finds_the_pods_events_by_field_selector(k8s_double):
    created = k8s_double.seed(pod("stuck"))[0]
    k8s_double.seed({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "stuck.1"},
                     "involvedObject": {"kind": "Pod", "name": "stuck", "namespace": "default",
                                        "uid": created["metadata"]["uid"]},
                     "reason": "FailedScheduling", "type": "Warning", "count": 1,
                     "message": "0/3 nodes are available: cannot allocate all claims"},
                    {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "other.1"},
                     "involvedObject": {"kind": "Pod", "name": "other", "namespace": "default"},
                     "reason": "Scheduled", "type": "Normal", "message": "unrelated"})
    described = k8s_double.kubectl("describe", "pod", "stuck").stdout
    assert "FailedScheduling" in described and "cannot allocate all claims" in described
    assert "unrelated" not in described
