"""Make sure the DRA objects a rewritten pod points at exist before the pod is admitted.

A pod naming a ResourceClaimTemplate that does not exist stays Pending until it does, so
admission gets or creates every object the pod needs.  Names are derived from content, so one
object serves every equal request in a namespace.

What exists is read from a watch of the objects kubectl-gpu manages (`kubectl_gpu.k8s.Informer`,
the label selector `app.kubernetes.io/managed-by=kubectl-gpu`, every namespace): in the steady
state a review costs no API round trip.  The copy is as fresh as the watch (milliseconds), and the
watch closes the gap it leaves: when an object a review needed in the last
`RECENTLY_NEEDED_SECONDS` is deleted (by hand, or with its namespace), it is created again at once,
so a pod admitted just before the deletion reached the watch is not left waiting.  While the watch
is not current (not listed yet, or failing), each review GETs its objects as before, and the
reviews that need the same object at the same time share one check.

An existing object is used only if kubectl-gpu manages it and its spec is exactly what the webhook
would create, as the API server stores it (`as_stored`); anything else is a conflict the user must
resolve.  A same-named object the webhook may not use is not worked around under another name: a
name nobody could take first would have to be random, one new object per pod; the object can only
have been created by someone with rights in that namespace, which alone is affected, and the denial
names it and says what to do.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import math
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

from kubectl_gpu.core import ClaimObject
from kubectl_gpu.core.constants import MANAGED_BY_LABEL, MANAGED_BY_VALUE, OPT_OUT_LABEL
from kubectl_gpu.k8s import ApiError, AsyncClient, Informer, Resource

from .ratelimit import PerKeyRate
from .singleflight import SingleFlight

# Set by `kgpu-webhook cleanup` on a managed object nothing references; it deletes the
# object on a later run.  The webhook removes the mark when a new pod needs the object again.
UNUSED_SINCE_ANNOTATION = "kubectl-gpu.io/unused-since"
# On every object the webhook creates, and on nothing else: `kubectl gpu migrate` writes the same
# managed-by label on the objects users apply, which the clean-up must never delete.
CREATED_BY_WEBHOOK = {"kubectl-gpu.io/created-by": "webhook"}
# An object a review needed this recently is created again when the watch reports it deleted: the
# pods admitted against it get their ResourceClaims from it within seconds.  Far below the clean-up
# job's grace (600 s by default), so an object it deletes (unused for longer) is not re-created.
RECENTLY_NEEDED_SECONDS = 60.0
REPAIR_BACKOFF_SECONDS = (0.2, 5.0)
# When an object was last needed is recorded at most this often (each review of a rollout's pods
# would otherwise rewrite it): the re-create window above is accurate to this much.
NOTE_NEEDED_EVERY_SECONDS = 1.0
MAX_ACCEPTED = 100_000  # remembered acceptances (one per object; forgotten all at once beyond)

log = logging.getLogger("webhook.templates")

ObjectKey = tuple[str, str, str, str]  # apiVersion, kind, namespace, name


class TemplateConflict(Exception):
    """An object with the wanted name exists and must not be used; the message says what to do."""

    code = 409  # the admission response's status: the pod conflicts with an existing object


class TemplateUnavailable(Exception):
    """The API server could not be asked; admitting the pod now would strand it."""

    code = 503  # the admission response's status: retry later


def as_stored(spec: Any) -> Any:
    """``spec`` (a ResourceClaimSpec, or a template's ``{spec: ResourceClaimSpec}``) as the API
    server stores it: with the defaults it sets on every write (kubernetes
    pkg/apis/resource/v1/defaults.go SetDefaults_ExactDeviceRequest/SetDefaults_DeviceSubRequest at
    16913111deb1a4c4ff76f4ba7ffd9ebef397a303; the generated toleration operator "Equal" in
    pkg/apis/resource/v1beta2/zz_generated.defaults.go at 1f2f433f76dbc28d1fd6602f96e6dd871893601b;
    v1beta1's flat request is defaulted the same when it names a class, v1beta1/defaults.go at
    060ff21ecb445ef760239b390fb279fd88d3554e).  An existing object is used only when it equals this exactly: an extra selector,
    toleration or adminAccess would give pods another claim than the one they were rewritten for."""
    spec = copy.deepcopy(spec)
    claim_spec = spec.get("spec") if isinstance(spec, dict) and "devices" not in spec else spec
    devices = claim_spec.get("devices") if isinstance(claim_spec, dict) else None
    for request in (devices.get("requests") if isinstance(devices, dict) else None) or ():
        if not isinstance(request, dict):
            continue
        for exact in (request.get("exactly"), request if request.get("deviceClassName") else None,
                      *(request.get("firstAvailable") or ())):
            if isinstance(exact, dict):
                _default_exact(exact)
    return spec


def _default_exact(request: dict[str, Any]) -> None:
    request.setdefault("allocationMode", "ExactCount")
    if request["allocationMode"] == "ExactCount" and not request.get("count"):
        request["count"] = 1
    for toleration in request.get("tolerations") or ():
        if isinstance(toleration, dict) and not toleration.get("operator"):
            toleration["operator"] = "Equal"


def _spec_of(obj: dict[str, Any]) -> Any:
    return obj.get("spec")


class TemplateRateLimited(TemplateUnavailable):
    """The namespace had as many claim objects created as the webhook allows per minute."""

    code = 429  # the admission response's status: too many requests, retry later


class TemplateStore:
    """Get-or-create of the claim objects admitted pods point at, read from a watch of the managed
    objects (see the module docstring); a GET per review only while that watch is not current."""

    def __init__(
        self,
        api: AsyncClient,
        opt_out_label: str = OPT_OUT_LABEL,
        on_created: Callable[[str], None] = lambda kind: None,
        on_api_error: Callable[[str], None] = lambda operation: None,
        watch: bool = True,
        recently_needed_seconds: float = RECENTLY_NEEDED_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        creates_per_minute: int | None = None,
    ) -> None:
        self.api = api
        # Creations per namespace and minute (templateCreatesPerNamespacePerMinute); None: unbounded.
        self._creates = None if creates_per_minute is None else PerKeyRate(creates_per_minute, clock)
        self.opt_out_label = opt_out_label
        self.on_created = on_created
        self.on_api_error = on_api_error
        self.watch = watch
        self.recently_needed_seconds = recently_needed_seconds
        self.clock = clock
        self._flights: SingleFlight[ObjectKey, None] = SingleFlight()
        self._informers: dict[tuple[str, str], Informer] = {}
        # What reviews needed lately, oldest first: (when, the claim object) per object.
        self._needed: OrderedDict[ObjectKey, tuple[float, ClaimObject]] = OrderedDict()
        self._repairs: set[asyncio.Task[None]] = set()
        # The resourceVersion of each watched object last found fit for its pods.
        self._accepted: dict[ObjectKey, str] = {}

    def _key(self, claim: ClaimObject, namespace: str) -> ObjectKey:
        return (claim.api_version.value, claim.kind, namespace, claim.name)

    async def ensure(self, claims: tuple[ClaimObject, ...], namespace: str, dry_run: bool) -> None:
        """Get or create every claim object in ``namespace``.  With ``dry_run`` nothing is
        written: conflicts are still reported, missing objects are not created."""
        for claim in claims:
            if dry_run:
                await self._check(claim, namespace)
                continue
            key = self._key(claim, namespace)
            self._note_needed(key, claim)
            informer = self._informers.get((key[0], key[1]))
            if informer is None or not informer.current:
                informer = await self._watched(claim)
            existing = informer.get(namespace, claim.name) if informer is not None else None
            if existing is not None:
                # The steady state: known to exist, no round trip; checked once per version of it.
                version = (existing.get("metadata") or {}).get("resourceVersion")
                if not version or self._accepted.get(key) != version:
                    self._accept(existing, claim.manifest(namespace), claim, namespace)
                    if len(self._accepted) >= MAX_ACCEPTED:
                        self._accepted.clear()
                    self._accepted[key] = version
                if UNUSED_SINCE_ANNOTATION in ((existing.get("metadata") or {}).get("annotations") or {}):
                    await self._flights.run(key, lambda: self._revive(Resource(claim.api_version.value, claim.kind),
                                                                      namespace, claim))
                continue
            # Many pods of one rollout arrive together: one API round trip serves them all.
            await self._flights.run(key, lambda: self._ensure_one(claim, namespace, informer))

    async def close(self) -> None:
        """Stop the watches and any re-creation under way."""
        for task in list(self._repairs):
            task.cancel()
        informers, self._informers = list(self._informers.values()), {}
        for informer in informers:
            await informer.stop()

    # --- the watch --------------------------------------------------------------------------

    async def _watched(self, claim: ClaimObject) -> Informer | None:
        """The watch of managed objects of this kind and version, when it is current."""
        if not self.watch:
            return None
        informer = self._informers.get((claim.api_version.value, claim.kind))
        if informer is not None and informer.current:
            return informer  # the steady state: one lookup per review
        resource = Resource(claim.api_version.value, claim.kind)
        if informer is None:
            informer = Informer(self.api, resource.path(None),
                                label_selector=f"{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}",
                                on_change=lambda change, obj: self._changed(resource, change, obj))
            self._informers[(resource.api_version, resource.kind)] = informer
            informer.start()
        if not informer.synced and informer.last_error is None:
            # The first reviews of a kind wait for the first list (at most one API timeout); once
            # a list has failed, reviews GET until one succeeds.
            await informer.wait_synced(self.api.timeout)
        return informer if informer.current else None

    def _note_needed(self, key: ObjectKey, claim: ClaimObject) -> None:
        now = self.clock()
        noted = self._needed.get(key)
        if noted is not None and now - noted[0] < NOTE_NEEDED_EVERY_SECONDS:
            return  # noted a moment ago (a rollout's pods): the 60 s window is not that precise
        self._needed[key] = (now, claim)
        self._needed.move_to_end(key)
        while self._needed:
            oldest, (when, _) = next(iter(self._needed.items()))
            if now - when <= self.recently_needed_seconds:
                break
            del self._needed[oldest]

    def _changed(self, resource: Resource, change: str, obj: dict[str, Any]) -> None:
        if change != "DELETED":
            return
        metadata = obj.get("metadata") or {}
        key = (resource.api_version, resource.kind, str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))
        needed = self._needed.get(key)
        if needed is None or self.clock() - needed[0] > self.recently_needed_seconds:
            return
        claim, namespace = needed[1], key[2]
        log.info("re-creating a deleted %s that pods need", resource.kind,
                 extra={"namespace": namespace, "object": claim.name})
        task = asyncio.get_running_loop().create_task(self._repair(key, claim, namespace))
        self._repairs.add(task)
        task.add_done_callback(self._repairs.discard)

    async def _repair(self, key: ObjectKey, claim: ClaimObject, namespace: str) -> None:
        # Retried while pods may still need it: the API failing now must not leave them waiting.
        delay = REPAIR_BACKOFF_SECONDS[0]
        while True:
            try:
                await self._flights.run(key, lambda: self._ensure_one(claim, namespace, None))
                return
            except TemplateConflict as exc:
                log.info("not re-creating %s %s/%s: %s", claim.kind, namespace, claim.name, exc)
                return
            except TemplateUnavailable as exc:
                needed = self._needed.get(key)
                if needed is None or self.clock() - needed[0] > self.recently_needed_seconds:
                    # A namespace being deleted refuses new objects: nothing left to repair there.
                    log.info("gave up re-creating %s %s/%s: %s", claim.kind, namespace, claim.name, exc)
                    return
                await asyncio.sleep(delay)
                delay = min(delay * 2, REPAIR_BACKOFF_SECONDS[1])

    # --- get or create ----------------------------------------------------------------------

    async def _ensure_one(self, claim: ClaimObject, namespace: str, informer: Informer | None) -> None:
        resource = Resource(claim.api_version.value, claim.kind)
        wanted = claim.manifest(namespace)
        wanted["metadata"].setdefault("labels", {}).update(CREATED_BY_WEBHOOK)
        # Known missing from a current watch: create straight away; otherwise ask first.
        existing = None if informer is not None else await self._get(resource, namespace, claim.name)
        if existing is None:
            if self._creates is not None and not self._creates.take(namespace):
                raise TemplateRateLimited(
                    f"{claim.kind} {namespace}/{claim.name} not created: {self._creates.per_minute} claim objects "
                    f"were created in {namespace} within the last minute (templateCreatesPerNamespacePerMinute); "
                    f"retry in {math.ceil(self._creates.retry_after(namespace))} s")
            try:
                created = await self.api.create(resource, namespace, wanted)
                self.on_created(claim.kind)
                if informer is not None:
                    informer.assume(created)
                return
            except ApiError as exc:
                if not exc.conflict:
                    raise self._unavailable("create", claim, namespace, exc) from exc
            # Another replica (or pod) created it first, or a same-named object kubectl-gpu does
            # not manage is there: use it only if it is the same.
            existing = await self._get(resource, namespace, claim.name)
            if existing is None:
                raise TemplateUnavailable(
                    f"{claim.kind} {namespace}/{claim.name} was created and deleted concurrently; retry"
                )
        self._accept(existing, wanted, claim, namespace)
        if UNUSED_SINCE_ANNOTATION in ((existing.get("metadata") or {}).get("annotations") or {}):
            await self._revive(resource, namespace, claim)

    async def _check(self, claim: ClaimObject, namespace: str) -> None:
        informer = await self._watched(claim)
        existing = informer.get(namespace, claim.name) if informer is not None else None
        if existing is None:  # absent, or there but not managed by kubectl-gpu (not watched)
            existing = await self._get(Resource(claim.api_version.value, claim.kind), namespace, claim.name)
        if existing is not None:
            self._accept(existing, claim.manifest(namespace), claim, namespace)

    async def _get(self, resource: Resource, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return await self.api.get(resource, namespace, name)
        except ApiError as exc:
            if exc.not_found:
                return None
            raise self._unavailable("get", ClaimRef(resource.kind, name), namespace, exc) from exc

    async def _revive(self, resource: Resource, namespace: str, claim: ClaimObject) -> None:
        # Changing the object also changes its resourceVersion, which makes a pending clean-up
        # delete (guarded by a precondition on the old version) fail instead of removing it.
        try:
            await self.api.merge_patch(
                resource, namespace, claim.name, {"metadata": {"annotations": {UNUSED_SINCE_ANNOTATION: None}}}
            )
        except ApiError as exc:
            raise self._unavailable("patch", claim, namespace, exc) from exc

    def _accept(self, existing: dict[str, Any], wanted: dict[str, Any], claim: ClaimObject, namespace: str) -> None:
        where = f"{claim.kind} {namespace}/{claim.name}"
        labels = (existing.get("metadata") or {}).get("labels") or {}
        if labels.get(MANAGED_BY_LABEL) != MANAGED_BY_VALUE:
            raise TemplateConflict(
                f"{where} exists but is not managed by kubectl-gpu ({MANAGED_BY_LABEL}={MANAGED_BY_VALUE} "
                f"missing): rename or delete it, or opt the pod out with label {self.opt_out_label}=true"
            )
        if _spec_of(existing) != as_stored(_spec_of(wanted)):
            raise TemplateConflict(
                f"{where} is managed by kubectl-gpu but its spec was changed: delete it "
                f"(kubectl delete {claim.kind.lower()} -n {namespace} {claim.name}) so it can be re-created"
            )

    def _unavailable(self, operation: str, claim: Any, namespace: str, exc: ApiError) -> TemplateUnavailable:
        self.on_api_error(operation)
        return TemplateUnavailable(
            f"could not {operation} {claim.kind} {namespace}/{claim.name} ({exc.status or 'no answer'} "
            f"{exc.reason}{': ' + exc.message[:200] if exc.message else ''}); the pod was not admitted because it would wait forever for it: retry"
        )


@dataclass(frozen=True)
class ClaimRef:
    kind: str
    name: str
