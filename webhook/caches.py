"""Everything /mutate keeps from one review for the next, in one place.

Each cache here keeps only what is a pure function of its key, so an answer served from it is
the answer computing afresh would give (tests/test_webhook_cache_answers.py holds them to that):

=================  ==========================  ===============================  ==========  ==================================
cache              keeps                       key                              bound       invalidated by
=================  ==========================  ===============================  ==========  ==================================
ReviewParser       the parsed AdmissionRequest the body's bytes but its uid     256 bodies  nothing: a parse depends on the
                                                                                of 64 KiB   bytes alone
RequestAnswers     what one Admission decided  the parse (shared by the reused  as above    a new profile revision (the fitted
                   from the request's content: parses of one controller's pods)             answers); the reading and plans
                   its reading, its plans, its and the Caches object itself                 depend on the fixed configuration
                   fitted answers              (held, never its id)                         only
PlanCache          MutationPlan                the site, the template's JSON,   1024 plans  the profile revision is part of
                                               skip, the profile revision       of 64 KiB   the key; least recently used out
FittedConfigs      the configuration fitted to the profile revision             1           a newer revision replaces it
                   the cluster profile
Unsatisfiable      why no device can satisfy   (profile revision, claim name;   4096        the revision is part of the key;
                   a claim, or None            names derive from content)                   oldest out
=================  ==========================  ===============================  ==========  ==================================

What is not kept here changes with the cluster and has its own cache with its own rule: the
labels of namespaces, nodes and owners (``labelcache.py``, a TTL), a namespace's ResourceQuotas
(``quota_guard.py``, a TTL per namespace), the claim objects created per namespace and minute
(``ratelimit.py``, a sliding window: a count, not an answer), the managed templates
(``templates.py``, an informer: ``ensure`` runs on every review, so a deleted template is made
again whatever was kept above) and the cluster profile itself (``cluster_profile.py``,
informers; its ``revision`` is a digest of its content, the key everything fitted uses).

One Admission owns one :class:`Caches`, and its configuration never changes, so nothing here is
keyed by configuration: a new configuration is a new Admission with new caches.  Parsed
objects are shared between reviews, so nothing may modify a request's objects (admission never
does; it patches copies).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, TypeVar

from kubectl_gpu.cluster import ClusterProfile
from kubectl_gpu.json_codec import encode_json

from .config import WebhookConfig
from .mutation import MutationPlan, TemplateSite, plan
from .review import AdmissionRequest, parse_review

# Larger templates are planned every time: the plan cache's memory stays bounded (1024 x 64 KiB).
MAX_CACHED_TEMPLATE_BYTES = 64 * 1024
MAX_UNSATISFIABLE = 4096

# How the API server (Go, fields in declaration order, compact) starts every AdmissionReview.
_API_SERVER_PREFIX = b'{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"'
_UID_BYTES = b"0123456789abcdefABCDEF-"
_PROBE_UID = "kubectl-gpu-probe-0000"


class ReviewParser:
    """parse_review() for a stream of reviews, reusing the parse of a body seen before.

    The pods of one controller reach admission as the same bytes except ``request.uid`` (their
    names are generated after admission), so a rollout of N replicas parses one body.  A body is
    reused only when it starts the way the API server writes reviews and its uid is a plain
    UUID, and only after a second parse, with another uid in its place, proved that those bytes
    are the uid the request is read with (no duplicate key overrides it): then a body equal but
    for those bytes is exactly the same request with another uid.  A body is kept from its
    second sighting on, so one-off bodies cost no second parse.
    """

    def __init__(self, size: int = 256, max_body: int = 64 * 1024) -> None:
        self.size = size
        self.max_body = max_body
        self._requests: OrderedDict[bytes, AdmissionRequest] = OrderedDict()
        self._seen: OrderedDict[int, None] = OrderedDict()  # hashes of bodies parsed once

    def parse(self, body: bytes) -> AdmissionRequest:
        if len(body) > self.max_body or not body.startswith(_API_SERVER_PREFIX):
            return parse_review(body)
        start = len(_API_SERVER_PREFIX)
        end = body.find(b'"', start)
        uid = body[start:end]
        if end <= start or uid.translate(None, _UID_BYTES):
            return parse_review(body)
        key = body[:start] + body[end:]
        known = self._requests.get(key)
        if known is not None:
            self._requests.move_to_end(key)
            return known.with_uid(uid.decode("ascii"))
        request = parse_review(body)
        if self._first_sighting(hash(key)):
            return request
        if request.uid == uid.decode("ascii") and request.strict_json:
            probe = parse_review(body[:start] + _PROBE_UID.encode() + body[end:])
            if probe.uid == _PROBE_UID and probe.strict_json:
                self._requests[key] = request
                if len(self._requests) > self.size:
                    self._requests.popitem(last=False)
        return request

    def _first_sighting(self, digest: int) -> bool:
        if digest in self._seen:
            return False
        self._seen[digest] = None
        if len(self._seen) > 4 * self.size:
            self._seen.popitem(last=False)
        return True


class PlanCache:
    """Recent mutation plans by pod template content.

    The pods of one ReplicaSet or Job arrive with identical templates (same generateName, same
    owner), so a rollout of N replicas translates once.  A plan is a pure function of the
    template and the configuration (the owner's, or the one fitted to the profile ``revision``).
    """

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self._plans: OrderedDict[tuple[str, str, str | None, bool, bytes, str], MutationPlan] = OrderedDict()

    def get_or_plan(
        self, site: TemplateSite, config: WebhookConfig, skip_translation: bool, cacheable: bool = True,
        revision: str = "",
    ) -> MutationPlan:
        """``cacheable=False`` for a template parsed leniently (NaN...), whose encoding may equal
        another template's.  ``revision``: the cluster profile ``config`` was fitted to (plans for
        different clusters never mix)."""
        if not cacheable:
            return plan(site, config, skip_translation=skip_translation)
        try:
            encoded = encode_json(site.template)
        except (TypeError, ValueError):
            return plan(site, config, skip_translation=skip_translation)
        if len(encoded) > MAX_CACHED_TEMPLATE_BYTES:
            return plan(site, config, skip_translation=skip_translation)
        key = (site.kind, site.prefix, site.sharing_group, skip_translation, encoded, revision)
        cached = self._plans.get(key)
        if cached is not None:
            self._plans.move_to_end(key)
            return cached
        result = plan(site, config, skip_translation=skip_translation)
        self._plans[key] = result
        if len(self._plans) > self.size:
            self._plans.popitem(last=False)
        return result


Fitted = tuple[WebhookConfig, tuple[str, ...]]


class FittedConfigs:
    """The configuration fitted to the newest cluster profile (one cluster at a time: an older
    profile is never planned with again)."""

    def __init__(self) -> None:
        self._newest: tuple[str, Fitted] | None = None

    def get(self, profile: ClusterProfile, fit: Callable[[ClusterProfile], Fitted]) -> Fitted:
        kept = self._newest
        if kept is not None and kept[0] == profile.revision:
            return kept[1]
        fitted = fit(profile)
        self._newest = (profile.revision, fitted)
        return fitted


class Unsatisfiable:
    """Why no device of a profile can satisfy a claim (None: some can).  Claim names are derived
    from their content, so (profile revision, name) identifies the answer."""

    def __init__(self, size: int = MAX_UNSATISFIABLE) -> None:
        self.size = size
        self._reasons: OrderedDict[tuple[str, str], str | None] = OrderedDict()

    def get(self, revision: str, name: str, judge: Callable[[], str | None]) -> str | None:
        key = (revision, name)
        if key in self._reasons:
            return self._reasons[key]
        reason = self._reasons[key] = judge()
        if len(self._reasons) > self.size:
            self._reasons.popitem(last=False)
        return reason


T = TypeVar("T")


@dataclass(eq=False)
class RequestAnswers(Generic[T]):
    """What one Admission decided from a request's content alone, kept with its parse: the reused
    parses of one controller's pods share it, so their reading and plans are made once."""

    reading: T | None = None
    plans: dict[bool, MutationPlan] = field(default_factory=dict)  # by skip, with the owner's configuration
    fitted: dict[bool, tuple[str, Any]] = field(default_factory=dict)  # by skip: (profile revision, answer)

    def fitted_for(self, skip: bool, revision: str, make: Callable[[], Any]) -> Any:
        """``make()``, kept for one profile revision: a body reused for days while drivers
        republish their slices does not pile up old answers."""
        kept = self.fitted.get(skip)
        if kept is not None and kept[0] == revision:
            return kept[1]
        value = make()
        self.fitted[skip] = (revision, value)
        return value


@dataclass(eq=False)
class Caches:
    """One Admission's caches (see the table above).  Hashed by identity: a request's answers are
    kept under this object itself, which the request then holds, so no other Admission (even
    one made later at the same address) can read them."""

    plans: PlanCache = field(default_factory=PlanCache)
    fitted: FittedConfigs = field(default_factory=FittedConfigs)
    unsatisfiable: Unsatisfiable = field(default_factory=Unsatisfiable)

    def answers(self, request: AdmissionRequest) -> RequestAnswers[Any]:
        kept = request.derived.get(self)
        if kept is None:
            kept = request.derived[self] = RequestAnswers()
        return kept
