"""Properties of the webhook under random input, API faults and certificate rotation."""

from __future__ import annotations

import json
import threading
import time

import jsonpatch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import admission_review, patch_of
from webhook.certs import reissue_serving_cert

PROPERTY_SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)

GPU_RESOURCES = st.sampled_from([
    ("nvidia.com/gpu", st.sampled_from(["1", "2", "0.5", "0.25", "8"])),
    ("nvidia.com/mig-1g.10gb", st.sampled_from(["1", "2"])),
    ("tencent.com/vcuda-core", st.sampled_from(["50", "100", "200"])),
    ("nvidia.com/gpumem", st.sampled_from(["4000", "10240"])),
    ("aliyun.com/gpu-mem", st.sampled_from(["4", "16"])),
    ("cpu", st.sampled_from(["1", "500m"])),
])


@st.composite
def pods(draw) -> dict:
    containers = []
    for index in range(draw(st.integers(1, 3))):
        limits = {}
        for name, amounts in draw(st.lists(GPU_RESOURCES, max_size=2)):
            limits[name] = draw(amounts)
        container = {"name": f"c{index}", "image": "img"}
        if limits:
            container["resources"] = {"limits": limits}
        containers.append(container)
    labels = draw(st.sampled_from([{}, {"app": "x"}, {"kubectl-gpu.io/opt-out": "true"}]))
    spec = {"containers": containers}
    if draw(st.booleans()):
        spec["nodeSelector"] = {"cloud.google.com/gke-accelerator": "nvidia-l4"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": labels}, "spec": spec}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)


def _workload(kind: str, pod: dict) -> dict:
    api_version = "batch/v1" if kind == "Job" else "apps/v1"
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "w", "namespace": "default"},
            "spec": {"template": {"metadata": pod["metadata"], "spec": pod["spec"]}}}


OWNERS = st.lists(st.fixed_dictionaries({
    "apiVersion": st.sampled_from(["apps/v1", "batch/v1", "v1", "example.com/v1"]),
    "kind": st.sampled_from(["ReplicaSet", "Deployment", "Job", "CronJob", "StatefulSet", "RayCluster"]),
    "name": st.sampled_from(["w", "w-7c9f", "missing"]),
    "uid": st.just("u-1"),
    "controller": st.sampled_from([True, False, None, "yes"]),
}), max_size=2)


def _nested_json(depth: int) -> bytes:
    """A JSON value nested ``depth`` arrays deep (written as text: json.dumps itself recurses)."""
    return b"[" * depth + b'"x"' + b"]" * depth


@st.composite
def update_reviews(draw) -> dict:
    """What the API server sends on UPDATE: the object and its oldObject, owned or not."""
    kind = draw(st.sampled_from(["Deployment", "ReplicaSet", "StatefulSet", "Job", "Pod"]))
    new_pod, old_pod = draw(pods()), draw(pods())
    if draw(st.booleans()):
        old_pod = json.loads(json.dumps(new_pod))  # an update that leaves the template alone
    new = new_pod if kind == "Pod" else _workload(kind, new_pod)
    old = old_pod if kind == "Pod" else _workload(kind, old_pod)
    owners = draw(OWNERS)
    if owners:
        new["metadata"]["ownerReferences"] = owners
    return admission_review(new, operation="UPDATE", old=old if draw(st.booleans()) else draw(json_values))


@st.composite
def malformed_reviews(draw) -> bytes:
    choice = draw(st.integers(0, 8))
    if choice == 5:
        return json.dumps(draw(update_reviews())).encode()
    if choice == 6:  # a controller's pod, with whatever owner chain
        pod = draw(pods())
        pod["metadata"]["ownerReferences"] = draw(OWNERS)
        return json.dumps(admission_review(pod)).encode()
    if choice == 7:  # lone surrogates where the webhook reads text (json.dumps escapes them: valid JSON)
        review = admission_review(draw(pods()))
        surrogate = draw(st.sampled_from([chr(0xD800), chr(0xDFFF), "Pod" + chr(0xDC80)]))
        for field in draw(st.lists(st.sampled_from(["kind", "operation", "name", "namespace", "label"]), min_size=1)):
            if field == "kind":
                review["request"]["kind"]["kind"] = surrogate
            elif field == "label":
                review["request"]["object"]["metadata"]["labels"] = {"app": surrogate}
            else:
                review["request"][field] = surrogate
        return json.dumps(review).encode()
    if choice == 8:  # deep nesting, inside the object or as the whole body
        depth = draw(st.sampled_from([50, 255, 300, 2_000, 200_000]))
        if draw(st.booleans()):
            return b"[" * depth
        review = admission_review(draw(pods()))
        review["request"]["object"]["spec"]["containers"][0]["env"] = "NESTED"
        return json.dumps(review).encode().replace(b'"NESTED"', _nested_json(depth))
    if choice == 0:
        return draw(st.binary(max_size=200))
    if choice == 1:
        return json.dumps(draw(json_values)).encode()
    review = admission_review(draw(pods()))
    request = review["request"]
    if choice == 2:  # fields of the wrong type
        for key in draw(st.lists(st.sampled_from(sorted(request)), max_size=4)):
            request[key] = draw(json_values)
    elif choice == 3:  # a damaged object
        obj = request["object"]
        for key in draw(st.lists(st.sampled_from(["spec", "metadata", "kind"]), max_size=2)):
            obj[key] = draw(json_values)
        if draw(st.booleans()) and isinstance(obj.get("spec"), dict):
            obj["spec"]["containers"] = draw(json_values)
    else:
        review[draw(st.sampled_from(["apiVersion", "kind", "request"]))] = draw(json_values)
    return json.dumps(review).encode()


@PROPERTY_SETTINGS
@given(body=malformed_reviews(), endpoint=st.sampled_from(["/mutate", "/validate"]))
def test_random_and_malformed_reviews_never_get_a_5xx(start_webhook, body, endpoint):
    hook = _shared(start_webhook)
    status, data = hook.request("POST", endpoint, body)
    assert status < 500
    if status == 200:
        answer = json.loads(data)
        assert answer["kind"] == "AdmissionReview" and isinstance(answer["response"]["allowed"], bool)
        assert answer["response"]["uid"] == json.loads(body)["request"]["uid"]
    else:
        assert 400 <= status < 500 and json.loads(data)["error"]
    assert hook.request("GET", "/metrics")[0] == 200  # nothing a review says can break /metrics


def _shared(start_webhook, **settings_):
    # One server per test function: hypothesis runs every example against it.
    if not hasattr(start_webhook, "shared"):
        start_webhook.shared = start_webhook(**settings_)
    return start_webhook.shared


def test_oversized_body_is_refused_with_413(start_webhook):
    hook = start_webhook()
    status, data = hook.request("POST", "/mutate", b"{" + b" " * (8 * 1024 * 1024) + b"}")
    assert status == 413 and b"3 MiB each" in data


def test_an_update_carrying_a_large_workload_twice_is_answered(start_webhook):
    """object and oldObject can each be 3 MiB (the API server's limit on an object); together they
    fit the 7 MB controller-runtime allows (pkg/webhook/admission/http.go, maxRequestSize)."""
    hook = start_webhook()
    big = _workload("Deployment", {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [
        {"name": "c", "image": "img", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})
    big["metadata"]["annotations"] = {"example.com/blob": "x" * (3 * 1024 * 1024 - 4096)}
    old = json.loads(json.dumps(big))
    old["spec"]["template"]["spec"]["containers"][0]["image"] = "img:old"
    body = json.dumps(admission_review(big, operation="UPDATE", old=old)).encode()
    assert len(body) > 6_000_000  # twice what the old 3 MiB limit allowed
    response = hook.review("/mutate", body)
    assert response["allowed"] is True and patch_of(response)


@given(depth=st.sampled_from([257, 2_000, 200_000]), whole=st.booleans())
@PROPERTY_SETTINGS
def test_deep_nesting_is_a_400_saying_so(start_webhook, depth, whole):
    hook = _shared(start_webhook)
    if whole:
        body = b"[" * depth
    else:
        review = admission_review({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                   "spec": {"containers": [{"name": "c", "image": "i", "args": "NESTED"}]}})
        body = json.dumps(review).encode().replace(b'"NESTED"', _nested_json(depth))
    status, data = hook.request("POST", "/mutate", body)
    assert status == 400 and b"deeper than" in data


def test_a_number_too_long_to_read_is_a_400_saying_what_to_change(start_webhook):
    """A client sending an integer of 5,000 digits gets the line and what to change, not Python's
    advice to raise its own limit (sys.set_int_max_str_digits), which only the server could follow."""
    hook = _shared(start_webhook)
    review = admission_review({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                               "spec": {"containers": [{"name": "c", "image": "i"}], "priority": "LONG"}})
    body = json.dumps(review, indent=1).encode().replace(b'"LONG"', b"9" * 5000)
    status, data = hook.request("POST", "/mutate", body)
    assert status == 400, data
    assert b"set_int_max_str_digits" not in data
    assert b"5000 digits" in data and b"shorten it" in data and b"line " in data


def test_brackets_inside_strings_do_not_count_as_nesting(start_webhook):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "annotations": {"a": "[" * 5000}},
           "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
    assert patch_of(start_webhook().review("/mutate", admission_review(pod)))


def test_a_lone_surrogate_in_the_kind_never_breaks_metrics(start_webhook):
    """The text format is UTF-8: one such label value made every later scrape a 500."""
    hook = start_webhook()
    review = admission_review({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}})
    review["request"]["kind"]["kind"] = chr(0xD800)
    review["request"]["operation"] = chr(0xDFFF)
    hook.review("/mutate", json.dumps(review).encode())
    text = hook.metrics_text()
    assert 'kind="other",operation="other"' in text


@PROPERTY_SETTINGS
@given(pod=pods())
def test_mutate_twice_is_mutate_once(start_webhook, pod):
    hook = _shared(start_webhook, translation={"gpuMemory": "80Gi"})
    first = hook.review("/mutate", admission_review(pod))
    if not first["allowed"]:
        return  # a denial changes nothing to compare
    once = jsonpatch.apply_patch(pod, patch_of(first))
    second = hook.review("/mutate", admission_review(once))
    assert second["allowed"] and patch_of(second) == []


@PROPERTY_SETTINGS
@given(pod=pods())
def test_dry_run_creates_nothing(start_webhook, k8s_double, pod):
    hook = _shared(start_webhook)
    k8s_double.reset_requests()
    hook.review("/mutate", admission_review(pod, dry_run=True))
    writes = [r for r in k8s_double.requests if r.verb not in ("get", "list", "watch")]
    assert writes == [] and k8s_double.list("ResourceClaimTemplate") == []


@PROPERTY_SETTINGS
@given(
    pod=pods(),
    fault=st.sampled_from([("get", 500), ("create", 500), ("create", 403), ("get", 429), ("get", "timeout"),
                           ("create", "timeout"), ("get", 409)]),
)
def test_api_faults_never_admit_a_pod_pointing_at_a_missing_template(start_webhook, k8s_double, pod, fault):
    """Each example deletes every template (DELETED events, as a user or a namespace deletion
    would), then the API fails while the pod is reviewed.  A pod admitted points at templates that
    exist once the API answers again: created before admission, or, when the deletion reached the
    webhook's watch only after the review, re-created from the watch (retried until the API answers)."""
    hook = _shared(start_webhook, apiTimeoutSeconds=0.3)
    for template in k8s_double.list("ResourceClaimTemplate"):
        k8s_double.delete("ResourceClaimTemplate", template["metadata"]["name"], template["metadata"]["namespace"])
    verb, status = fault
    k8s_double.fail(verb, "resourceclaimtemplates", status=status, times=None, seconds=0.6 if status == "timeout" else None)
    response = hook.review("/mutate", admission_review(pod))
    k8s_double.clear_faults()
    if not response["allowed"]:
        return
    patched = jsonpatch.apply_patch(pod, patch_of(response))
    names = [c["resourceClaimTemplateName"] for c in patched["spec"].get("resourceClaims") or []
             if "resourceClaimTemplateName" in c]
    deadline = time.monotonic() + 15  # a bound against a hang, not a speed check
    while not all(k8s_double.get("ResourceClaimTemplate", name, "default") for name in names):
        assert time.monotonic() < deadline, f"templates {names} missing after the API recovered"
        time.sleep(0.02)


def test_certificate_rotation_under_load_loses_no_request(start_webhook, webhook_certs, tmp_path):
    import shutil

    from webhook.certs import CertFiles

    # Rotate a private copy of the files, so other tests keep their certificate.
    for name in ("ca.crt", "ca.key", "tls.crt", "tls.key"):
        shutil.copy(getattr(webhook_certs, {"ca.crt": "ca_cert", "ca.key": "ca_key", "tls.crt": "cert", "tls.key": "key"}[name]), tmp_path / name)
    files = CertFiles(tmp_path / "ca.crt", tmp_path / "ca.key", tmp_path / "tls.crt", tmp_path / "tls.key")
    hook = start_webhook(tls={"certFile": str(files.cert), "keyFile": str(files.key)})
    review = admission_review({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                               "spec": {"containers": [{"name": "c", "image": "i"}]}})
    body = json.dumps(review).encode()
    failures: list[BaseException] = []
    served: list[int] = []
    stop = threading.Event()

    def client(fresh_connections: bool) -> None:
        import http.client

        while not stop.is_set():
            try:
                conn = http.client.HTTPSConnection("127.0.0.1", hook.port, context=hook.ssl_context(), timeout=10)
                for _ in range(1 if fresh_connections else 20):
                    conn.request("POST", "/mutate", body=body, headers={"Content-Type": "application/json"})
                    response = conn.getresponse()
                    response.read()
                    served.append(response.status)
                conn.close()
            except BaseException as exc:  # noqa: BLE001 - every failure is a lost request
                failures.append(exc)
                return

    threads = [threading.Thread(target=client, args=(i % 2 == 0,)) for i in range(4)]
    for thread in threads:
        thread.start()
    serials = set()
    for _ in range(3):
        reissue_serving_cert(files, ["localhost"], ["127.0.0.1"])
        reloads = hook.server.tls.reloads
        _wait(lambda: hook.server.tls.reloads > reloads)
        serials.add(_peer_serial(hook))
    stop.set()
    for thread in threads:
        thread.join(30)
    assert failures == []
    assert served and set(served) == {200}
    assert len(serials) == 3  # every rotation was served to new connections without a restart


def _wait(condition, limit: float = 20.0) -> None:
    import time

    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def _peer_serial(hook) -> int:
    import socket

    from cryptography import x509

    with socket.create_connection(("127.0.0.1", hook.port)) as raw:
        with hook.ssl_context().wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            return x509.load_der_x509_certificate(tls.getpeercert(binary_form=True)).serial_number
