"""An answer /mutate serves from what it kept (webhook/caches.py) is the answer it would give afresh.

A run of reviews goes through one Admission and one ReviewParser, as the server sends them, while
the cluster profile changes between reviews (a driver publishes or withdraws devices, the API
server serves another version, the profile cannot be read).  Each review is also answered by a
new Admission that keeps nothing (not even within the review), from a parse of its own: the encoded responses must be equal,
byte for byte.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_gpu.cluster.profile import ClusterProfile, build_profile
from kubectl_gpu.k8s import WORKLOAD_RESOURCES, ApiError, AsyncClient, Resource
from tests.conftest import admission_review
from tests.test_webhook_cluster_profile import DATA, H100_NODE, docs
from tests.test_webhook_perf_caches import as_api_server_sends, replica_pod, uid
from webhook.admission import Admission
from webhook.caches import Caches, PlanCache, ReviewParser, Unsatisfiable
from webhook.config import WebhookConfig, load_config
from webhook.labelcache import LabelCache
from webhook.metrics import Metrics
from webhook.review import encode_response, parse_review
from webhook.templates import TemplateStore

H100 = docs(H100_NODE)
L40S = docs(DATA / "driver" / "l40s.yaml")
# None: the profile cannot be read (the API did not answer).
PROFILES: list[ClusterProfile | None] = [
    build_profile("h100", objects=H100, kubernetes_minor=35, served_versions=["v1", "v1beta2", "v1beta1"]),
    build_profile("h100+l40s", objects=H100 + L40S, kubernetes_minor=35, served_versions=["v1", "v1beta2"]),
    build_profile("h100 on 1.33", objects=docs(H100_NODE, "v1beta2"), kubernetes_minor=33,
                  served_versions=["v1beta2", "v1beta1"]),
    None,
]


def _pods() -> list[dict]:
    l40s = replica_pod()
    l40s["spec"]["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-L40S"}
    opted = replica_pod("2")
    opted["metadata"]["labels"]["kubectl-gpu.io/opt-out"] = "true"
    bound = replica_pod()
    bound["spec"]["nodeName"] = "gpu-node-1"
    cpu_only = replica_pod()
    del cpu_only["spec"]["containers"][0]["resources"]
    return [replica_pod("1"), replica_pod("0.5"), l40s, opted, bound, cpu_only]


PODS = _pods()
REVIEWS = [admission_review(pod) for pod in PODS] + [admission_review(PODS[0], namespace="opted-out")]

# One step: which review (sent with the API server's field order and a fresh uid each time), under
# which profile, how many times in a row (a body's parse is kept from its second sighting on).
STEPS = st.lists(st.tuples(st.integers(0, len(REVIEWS) - 1), st.integers(0, len(PROFILES) - 1), st.integers(1, 3)),
                 min_size=1, max_size=8)
CONFIGS = st.sampled_from([("warn", False), ("deny", False), ("ignore", False), ("deny", True)])


class SetProfile:
    """The cluster profile as ProfileCache.get() gives it, set by the test between reviews."""

    def __init__(self) -> None:
        self.profile: ClusterProfile | None = None

    async def get(self) -> ClusterProfile:
        if self.profile is None:
            raise ApiError(503, "/version", "the API server did not answer")
        return self.profile


class RecordingStore(TemplateStore):
    """The webhook's template store, noting which objects each review made sure of (the other
    half of an answer: the claim templates, in the version the profile fitted them to)."""

    def __init__(self, api: AsyncClient) -> None:
        super().__init__(api)
        self.ensured: list[list[dict]] = []

    async def ensure(self, claims, namespace: str, dry_run: bool) -> None:
        self.ensured.append([claim.manifest(namespace) for claim in claims])
        await super().ensure(claims, namespace, dry_run)


def _admission(config: WebhookConfig, api: AsyncClient, profiles: SetProfile, templates: TemplateStore,
               keep: bool = True) -> Admission:
    """``keep=False``: plans and verdicts on claims are made every time, even within one review."""
    caches = Caches() if keep else Caches(plans=PlanCache(size=0), unsatisfiable=Unsatisfiable(size=0))
    return Admission(
        config=config,
        templates=templates,
        namespaces=LabelCache(api, Resource("v1", "Namespace")),
        nodes=LabelCache(api, Resource("v1", "Node")),
        owners={resource.kind: LabelCache(api, resource) for resource in WORKLOAD_RESOURCES},
        metrics=Metrics.create(),
        profiles=profiles,  # type: ignore[arg-type]  # SetProfile answers get() as ProfileCache does
        caches=caches,
    )


async def _run(double, config: WebhookConfig, steps: list[tuple[int, int, int]]) -> None:
    api = AsyncClient(double.api_client().configuration, 5)
    templates = RecordingStore(api)
    profiles = SetProfile()
    kept, parser = _admission(config, api, profiles, templates), ReviewParser()
    try:
        sent = [(review, profile) for review, profile, times in steps for _ in range(times)]
        for n, (review, profile) in enumerate(sent):
            profiles.profile = PROFILES[profile]
            body = as_api_server_sends(REVIEWS[review], uid(n))
            request = parser.parse(body)
            templates.ensured.clear()
            served = encode_response(request.uid, await kept.mutate(request), request.strict_json)
            served_templates, templates.ensured = templates.ensured, []
            fresh_request = parse_review(body)
            fresh = _admission(config, api, profiles, templates, keep=False)
            afresh = encode_response(fresh_request.uid, await fresh.mutate(fresh_request), fresh_request.strict_json)
            assert served == afresh, (n, steps)
            assert served_templates == templates.ensured, (n, steps)
    finally:
        await templates.close()
        await api.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS, claims_and_audit=CONFIGS)
def test_an_answer_served_from_the_caches_is_the_answer_made_afresh(k8s_double, steps, claims_and_audit):
    if k8s_double.get("Namespace", "opted-out", "") is None:
        k8s_double.seed({"apiVersion": "v1", "kind": "Namespace",
                         "metadata": {"name": "opted-out", "labels": {"kubectl-gpu.io/opt-out": "true"}}})
    unsatisfiable, audit = claims_and_audit
    config = replace(load_config(None, {}, {}), unsatisfiable_claims=unsatisfiable, audit=audit)
    asyncio.run(_run(k8s_double, config, steps))


def test_the_caches_of_one_admission_are_never_read_by_another(k8s_double):
    """Two Admissions with different configurations reviewing one shared parse (as a server that
    made a new Admission would) each answer with their own configuration."""
    async def answers() -> tuple[bytes, bytes]:
        api = AsyncClient(k8s_double.api_client().configuration, 5)
        templates = TemplateStore(api)
        profiles = SetProfile()
        profiles.profile = PROFILES[0]
        base = load_config(None, {}, {})
        try:
            request = parse_review(as_api_server_sends(REVIEWS[0], uid(1)))
            audited = await _admission(replace(base, audit=True), api, profiles, templates).mutate(request)
            rewritten = await _admission(base, api, profiles, templates).mutate(request)
            return encode_response("u", audited), encode_response("u", rewritten)
        finally:
            await templates.close()
            await api.close()

    audited, rewritten = asyncio.run(answers())
    assert b'"patch"' not in audited and b"audit" in audited
    assert b'"patch"' in rewritten
