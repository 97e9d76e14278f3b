"""Properties of the webhook under random input, API faults and certificate rotation."""

from __future__ import annotations

import json
import threading

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


@st.composite
def malformed_reviews(draw) -> bytes:
    choice = draw(st.integers(0, 4))
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


def _shared(start_webhook, **settings_):
    # One server per test function: hypothesis runs every example against it.
    if not hasattr(start_webhook, "shared"):
        start_webhook.shared = start_webhook(**settings_)
    return start_webhook.shared


def test_oversized_body_is_refused_with_413(start_webhook):
    hook = start_webhook()
    status, data = hook.request("POST", "/mutate", b"{" + b" " * (4 * 1024 * 1024) + b"}")
    assert status == 413 and b"3 MiB" in data


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
    hook = _shared(start_webhook, apiTimeoutSeconds=0.3)
    k8s_double.clear()  # every example starts from an empty API and a faulty one
    hook.server.admission.templates.forget()
    verb, status = fault
    k8s_double.fail(verb, "resourceclaimtemplates", status=status, times=None, seconds=0.6 if status == "timeout" else None)
    response = hook.review("/mutate", admission_review(pod))
    k8s_double.clear_faults()
    if not response["allowed"]:
        return
    patched = jsonpatch.apply_patch(pod, patch_of(response))
    for claim in patched["spec"].get("resourceClaims") or []:
        name = claim.get("resourceClaimTemplateName")
        assert name is None or k8s_double.get("ResourceClaimTemplate", name, "default") is not None


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
