"""The webhook's speed-ups answer exactly what the plain path answers.

Reviews are sent as the API server writes them (compact JSON, `kind` first, `request.uid` first),
which is the form whose parse the webhook reuses for the next pod of the same controller.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time

import pytest

from kubectl_gpu.core import TranslateOptions, translate_pod_template
from tests.conftest import admission_review, captured_logs, eventually, patch_of
from tests.corpus import SHARED_CORPUS, corpus_files
from webhook import logs
from kubectl_gpu.json_codec import decode_api_json
from kubectl_gpu.k8s import ApiError, AsyncClient, Resource
from webhook.caches import ReviewParser
from webhook.labelcache import LabelCache
from webhook.review import (
    ALLOWED,
    Verdict,
    decode_json,
    deny,
    encode_json,
    encode_response,
    parse_review,
    render_response,
)
from webhook.templates import TemplateStore



def replica_pod(amount: str = "1") -> dict:
    return {
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"generateName": "infer-5d8c-", "namespace": "default", "labels": {"app": "infer"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "infer-5d8c",
                                          "uid": "0b6f6a1e-1111-4222-8333-444455556666", "controller": True}]},
        "spec": {"containers": [{"name": "cuda", "image": "nvidia/cuda",
                                 "resources": {"limits": {"nvidia.com/gpu": amount}}}]},
    }


def as_api_server_sends(review: dict, uid: str) -> bytes:
    """The same review with the API server's field order and compact separators."""
    request = {"uid": uid, **{k: v for k, v in review["request"].items() if k != "uid"}}
    return json.dumps({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": request},
                      separators=(",", ":")).encode()


def uid(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


# --- over HTTPS ---------------------------------------------------------------------------------


def test_pods_of_one_controller_each_get_their_own_uid_and_the_same_answer(start_webhook):
    hook = start_webhook()
    review = admission_review(replica_pod("0.5"))
    plain = hook.review("/mutate", review)  # the builder's own form: parsed the ordinary way
    answers = [hook.review("/mutate", as_api_server_sends(review, uid(n))) for n in range(4)]
    assert [a["uid"] for a in answers] == [uid(n) for n in range(4)]
    for answer in answers:
        assert answer["allowed"] is True
        assert patch_of(answer) == patch_of(plain) != []
        assert answer["warnings"] == plain["warnings"]
    assert 'kubectl_gpu_webhook_reviews_total{endpoint="mutate",kind="Pod",operation="CREATE",result="patched"} 5.0' in hook.metrics_text()


@pytest.mark.parametrize("unsatisfiable", ["warn", "deny"])
def test_a_controllers_pods_are_judged_against_the_devices_published_now(webhook_on, unsatisfiable):
    """The fitted answer is kept for a controller's next pod (same body but its uid): it must follow
    the cluster's devices as a pod parsed afresh does (docs/webhook.md "Cluster profile": a driver
    that publishes new ResourceSlices is seen by the next pod), both ways."""
    from tests.k8sdouble import K8sDouble
    from tests.test_webhook_cluster_profile import DATA, H100_NODE, docs

    l40s_pod = replica_pod()
    l40s_pod["spec"]["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-L40S"}
    review = admission_review(l40s_pod)
    l40s_slices = docs(DATA / "driver" / "l40s.yaml")
    sent = iter(range(1000))

    def answers() -> tuple[dict, dict]:
        # Three sightings: the parse is kept from the second on, so the last answer is a reused one.
        reused = [hook.review("/mutate", as_api_server_sends(review, uid(next(sent)))) for _ in range(3)][-1]
        return reused, hook.review("/mutate", review)  # the plain path, parsed afresh

    def satisfiable(answer: dict) -> bool:
        if unsatisfiable == "deny":
            return answer["allowed"]
        assert answer["allowed"] is True
        return not any("no device in the cluster can satisfy" in w for w in answer.get("warnings", ()))

    def settles_on(wanted: bool) -> tuple[dict, dict]:
        deadline = time.monotonic() + 10  # the watch delivers in milliseconds; a bound against a hang
        while satisfiable(hook.review("/mutate", review)) != wanted:
            assert time.monotonic() < deadline, "the published devices never reached the webhook"
            time.sleep(0.05)
        return answers()  # the plain path has seen the change: every later answer must too

    with K8sDouble() as double:
        double.seed(*docs(H100_NODE))
        hook = webhook_on(double, cluster={"unsatisfiableClaims": unsatisfiable, "profileTtlSeconds": 3600})
        for wanted in (False, True, False):  # only H100s, then L40S slices published, then removed
            if wanted:
                double.seed(*l40s_slices)
            elif double.get("ResourceSlice", l40s_slices[0]["metadata"]["name"], ""):
                double.delete("ResourceSlice", l40s_slices[0]["metadata"]["name"], "")
            reused, plain = settles_on(wanted)
            assert satisfiable(reused) == wanted
            assert {k: v for k, v in reused.items() if k != "uid"} == {k: v for k, v in plain.items() if k != "uid"}


def test_a_duplicate_uid_key_is_read_as_json_reads_it(start_webhook):
    hook = start_webhook()
    review = admission_review(replica_pod())
    # A later "uid" in the request overrides the first one, as JSON parsers read it; the first
    # bodies have both equal, so only the later ones show whether the first is taken for the uid.
    for n in (99, 99, 99, 1, 2):
        body = as_api_server_sends(review, uid(n))[:-2] + b',"uid":"' + uid(99).encode() + b'"}}'
        assert json.loads(body)["request"]["uid"] == uid(99)
        assert hook.review("/mutate", body)["uid"] == uid(99)


def test_a_reused_parse_still_makes_sure_the_template_exists(start_webhook, k8s_double):
    from webhook.server import Timings

    hook = start_webhook(timings=Timings(tls_poll=0.2))
    review = admission_review(replica_pod("2"))
    first = hook.review("/mutate", as_api_server_sends(review, uid(1)))
    [name] = [op["value"][0]["resourceClaimTemplateName"] for op in patch_of(first) if op["path"] == "/spec/resourceClaims"]
    hook.review("/mutate", as_api_server_sends(review, uid(2)))  # seen twice: its parse is kept now
    k8s_double.delete("ResourceClaimTemplate", name, "default")
    third = hook.review("/mutate", as_api_server_sends(review, uid(3)))
    assert third["allowed"] is True and third["uid"] == uid(3)
    # Re-created when the watch reports the deletion (webhook/templates.py), which may come just
    # after this review: as for a parse that is not reused (test_webhook_server.py).
    eventually(lambda: k8s_double.get("ResourceClaimTemplate", name, "default") is not None)


def test_each_review_is_logged_with_its_own_uid(start_webhook):
    with captured_logs() as stream:
        hook = start_webhook()
        review = admission_review(replica_pod())
        for n in range(3):
            hook.review("/mutate", as_api_server_sends(review, uid(n)))
    entries = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [e["uid"] for e in entries if e.get("msg") == "review"] == [uid(n) for n in range(3)]


def test_admission_never_modifies_the_objects_it_reviews(start_webhook):
    """Reused parses share their objects between reviews: reviewing must leave them as parsed."""
    hook = start_webhook()
    reviews = [admission_review(replica_pod(a)) for a in ("1", "0.5", "3")]
    real = []  # real AdmissionReviews from the shared corpus, when it is checked out
    for path in corpus_files("admission", "*.json"):
        try:
            document = json.loads(path.read_text())
        except ValueError:
            continue
        if isinstance(document.get("request"), dict):
            real.append(document)
    assert real or not SHARED_CORPUS.is_dir()
    reviews.extend(real)
    for review in reviews:
        body = as_api_server_sends(review, uid(7))
        for endpoint in ("mutate", "validate"):
            request = parse_review(body)
            decide = getattr(hook.server.admission, endpoint)
            asyncio.run_coroutine_threadsafe(decide(request), hook.loop).result(30)
            assert request == parse_review(body), (endpoint, review["request"].get("kind"))


# --- reviews that arrive together share one API round trip -------------------------------------


@pytest.fixture
async def kube_api(k8s_double):
    api = AsyncClient(k8s_double.api_client().configuration, 5)
    yield api
    await api.close()


async def test_pods_arriving_together_create_their_claim_template_once(k8s_double, kube_api):
    [claim] = translate_pod_template(replica_pod("1"), TranslateOptions()).claims
    k8s_double.delay(0.2, "create", "resourceclaimtemplates")
    created: list[str] = []
    store = TemplateStore(kube_api, on_created=created.append)
    await asyncio.gather(*(store.ensure((claim,), "default", dry_run=False) for _ in range(5)))
    await store.close()
    # What exists is read from one list + watch of the managed templates, not a GET per pod.
    assert k8s_double.count(verb="get", resource="resourceclaimtemplates") == 0
    assert k8s_double.count(verb="list", resource="resourceclaimtemplates") == 1
    assert k8s_double.count(verb="create", resource="resourceclaimtemplates") == 1
    assert created == ["ResourceClaimTemplate"]
    assert k8s_double.get("ResourceClaimTemplate", claim.name, "default") is not None


async def test_a_template_no_pod_needed_lately_stays_deleted(k8s_double, kube_api):
    """`kgpu-webhook cleanup` deletes a managed template nothing referenced for its grace
    period (600 s by default, docs/webhook.md "Clean-up of unused templates"): the webhook re-creates
    only what a review needed within the last minute, so it never fights the clean-up."""
    from webhook.templates import RECENTLY_NEEDED_SECONDS

    [claim] = translate_pod_template(replica_pod("1"), TranslateOptions()).claims
    now = [1000.0]
    store = TemplateStore(kube_api, clock=lambda: now[0])
    await store.ensure((claim,), "default", dry_run=False)
    now[0] += RECENTLY_NEEDED_SECONDS + 1
    k8s_double.delete("ResourceClaimTemplate", claim.name, "default")
    await asyncio.sleep(0.5)  # the watch reports the deletion in milliseconds
    await store.close()
    assert k8s_double.get("ResourceClaimTemplate", claim.name, "default") is None
    assert k8s_double.count(verb="create", resource="resourceclaimtemplates") == 1


async def test_the_re_create_window_follows_the_latest_pod_that_needed_the_template(k8s_double, kube_api):
    """docs/webhook.md "Templates exist before admission": one that a review needed within the last
    minute is created again as soon as the watch reports it deleted.  A rollout's pods note the
    need at most once a second; a pod 30 s later still moves the window."""
    from webhook.templates import RECENTLY_NEEDED_SECONDS

    [claim] = translate_pod_template(replica_pod("1"), TranslateOptions()).claims
    now = [1000.0]
    store = TemplateStore(kube_api, clock=lambda: now[0])
    for moment in (1000.0, 1000.5, 1030.0):  # the first pods of a rollout, then one 30 s later
        now[0] = moment
        await store.ensure((claim,), "default", dry_run=False)
    now[0] = 1030.0 + RECENTLY_NEEDED_SECONDS - 1  # 89 s after the first pod, 59 s after the last
    k8s_double.delete("ResourceClaimTemplate", claim.name, "default")
    for _ in range(300):  # the watch reports the deletion in milliseconds; a bound against a hang
        if k8s_double.get("ResourceClaimTemplate", claim.name, "default") is not None:
            break
        await asyncio.sleep(0.05)
    await store.close()
    assert k8s_double.count(verb="create", resource="resourceclaimtemplates") == 2


async def test_labels_asked_for_together_are_read_once_and_a_failure_reaches_every_caller(k8s_double, kube_api):
    k8s_double.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml", "labels": {"team": "a"}}})
    cache = LabelCache(kube_api, Resource("v1", "Namespace"))
    k8s_double.fail("get", "namespaces", status=500, times=1)
    failed = await asyncio.gather(*(cache.labels("ml") for _ in range(4)), return_exceptions=True)
    assert [getattr(f, "status", f) for f in failed] == [500] * 4
    assert all(isinstance(f, ApiError) for f in failed)
    assert await asyncio.gather(*(cache.labels("ml") for _ in range(4))) == [{"team": "a"}] * 4
    assert k8s_double.count(verb="get", resource="namespaces") == 2


# --- the parts ----------------------------------------------------------------------------------


def test_a_reused_parse_is_the_same_request_with_the_new_uid():
    parser = ReviewParser()
    review = admission_review(replica_pod())
    for n in range(5):
        body = as_api_server_sends(review, uid(n))
        assert parser.parse(body) == parse_review(body)


@pytest.mark.parametrize("body", [
    b'{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"not a uuid!","object":{}}}',
    b'{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"0000-1","object":{"a":NaN}}}',
    b'{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"0000-1","object":{"a":123456789012345678901234}}}',
    b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "0000-1"}}',
])
def test_unusual_bodies_are_parsed_the_ordinary_way(body):
    parser = ReviewParser()
    for _ in range(3):
        assert parser.parse(body) == parse_review(body)
    if b"NaN" in body:
        assert parse_review(body).strict_json is False


@pytest.mark.parametrize("text", [
    b'{"a":[1,2.5,"x",null,true]}', b'{"a":NaN}', b'[Infinity,-Infinity]', b'1e400',
    b'123456789012345678901234567890', b'-9223372036854775809', b'"\\ud800"', b'{"a":1,"a":2}',
    '{"a":"\u00e9"}'.encode("utf-16"), b'\xef\xbb\xbf{"a":1}', b' {"a" : 1} ',
])
def test_json_is_read_as_the_standard_library_reads_it(text):
    value, _ = decode_json(text)
    assert json.dumps(value) == json.dumps(json.loads(text))


@pytest.mark.parametrize("decode", [decode_json, decode_api_json], ids=["review", "API answer"])
@pytest.mark.parametrize("text", [b"", b"{", b'{"a":1,}', b"\xff\xfe\x00", b'{"a":"\x01"}',
                                  b"<html>502 Bad Gateway</html>"])
def test_bad_json_fails_with_the_standard_librarys_message(text, decode):
    with pytest.raises(ValueError) as ours:
        decode(text)
    with pytest.raises(ValueError) as theirs:
        json.loads(text)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("verdict", [
    ALLOWED,
    Verdict(allowed=True, warnings=("kubectl-gpu: one", "kubectl-gpu: one", "  two \n lines ")),
    Verdict(allowed=True, patch=({"op": "add", "path": "/metadata/labels/a~1b", "value": {"n": 10**30}},)),
    deny("kubectl-gpu: no \"quotes\" \u00e9", 409, ("w",)),
])
@pytest.mark.parametrize("review_uid", ["u-1", "0000-\u00e9-\"x\""])
def test_encoded_responses_are_the_rendered_ones(verdict, review_uid):
    for _ in range(2):  # the second time from the verdict's kept encoding
        encoded = encode_response(review_uid, verdict)
        assert json.loads(encoded) == json.loads(encode_json(render_response(review_uid, verdict)))
        assert json.loads(encoded)["response"]["uid"] == review_uid


def test_the_fast_review_line_is_the_line_logging_writes():
    log = logging.getLogger("webhook.test")
    fields = {"uid": "u", "warnings": ["\u00e9", "b"], "ms": 0.25, "reason": None, "big": 10**30}
    with captured_logs() as stream:
        logs.emit(log, logging.INFO, "review", fields)
        log.info("review", extra=fields)
        logs.emit(log, logging.DEBUG, "hidden", fields)
    fast, slow = (json.loads(line) for line in stream.getvalue().splitlines())
    assert fast.pop("ts")[:19] == slow.pop("ts")[:19] and fast == slow
    assert stream.getvalue().isascii()


def test_other_handlers_still_receive_review_records():
    class Collect(logging.Handler):
        def __init__(self) -> None:
            super().__init__()
            self.records: list[logging.LogRecord] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.records.append(record)

    collect = Collect()
    with captured_logs() as stream:
        logging.getLogger().addHandler(collect)
        logs.emit(logging.getLogger("webhook.test"), logging.INFO, "review", {"uid": "u-2"})
    assert [r.uid for r in collect.records] == ["u-2"]  # type: ignore[attr-defined]
    assert json.loads(stream.getvalue())["uid"] == "u-2"
