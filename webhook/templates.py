"""Make sure the DRA objects a rewritten pod points at exist before the pod is admitted.

A pod naming a ResourceClaimTemplate that does not exist stays Pending forever, so admission
waits for get-or-create, every time: a cached "it exists" would admit pods pointing at an object
deleted since.  Names are derived from content, so one object serves every equal request in a
namespace, and the reviews that need it at the same time share one check.

An existing object is used only if kubectl-gpu manages it and its spec contains what the pod
needs (the API server may add defaults); anything else is a conflict the user must resolve.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from kubectl_gpu.core import ClaimObject
from kubectl_gpu.core.constants import MANAGED_BY_LABEL, MANAGED_BY_VALUE, OPT_OUT_LABEL
from kubectl_gpu.k8s import ApiError, AsyncClient, Resource

from .singleflight import SingleFlight

# Set by `kubectl-gpu-webhook cleanup` on a managed object nothing references; it deletes the
# object on a later run.  The webhook removes the mark when a new pod needs the object again.
UNUSED_SINCE_ANNOTATION = "kubectl-gpu.io/unused-since"


class TemplateConflict(Exception):
    """An object with the wanted name exists and must not be used; the message says what to do."""

    code = 409  # the admission response's status: the pod conflicts with an existing object


class TemplateUnavailable(Exception):
    """The API server could not be asked; admitting the pod now would strand it."""

    code = 503  # the admission response's status: retry later


def contains(actual: Any, desired: Any) -> bool:
    """True when ``actual`` has every field of ``desired`` with the same value (extra fields are
    API server defaults such as ``allocationMode: ExactCount``)."""
    if isinstance(desired, dict):
        return isinstance(actual, dict) and all(k in actual and contains(actual[k], v) for k, v in desired.items())
    if isinstance(desired, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(desired)
            and all(contains(a, d) for a, d in zip(actual, desired))
        )
    return actual == desired


def _spec_of(obj: dict[str, Any]) -> Any:
    return obj.get("spec")


class TemplateStore:
    """Get-or-create of the claim objects admitted pods point at, checked for every review.

    No answer is remembered: an object deleted by hand, or with its namespace, a second ago must
    be created again before the next pod that needs it is admitted.  The pods of one rollout
    arrive together, so they share one check (one GET in flight per object); the cost is one
    round trip per burst, not per pod.
    """

    def __init__(
        self,
        api: AsyncClient,
        opt_out_label: str = OPT_OUT_LABEL,
        on_created: Callable[[str], None] = lambda kind: None,
        on_api_error: Callable[[str], None] = lambda operation: None,
    ) -> None:
        self.api = api
        self.opt_out_label = opt_out_label
        self.on_created = on_created
        self.on_api_error = on_api_error
        self._flights: SingleFlight[tuple[str, str, str, str], None] = SingleFlight()

    def _key(self, claim: ClaimObject, namespace: str) -> tuple[str, str, str, str]:
        return (claim.api_version.value, claim.kind, namespace, claim.name)

    async def ensure(self, claims: tuple[ClaimObject, ...], namespace: str, dry_run: bool) -> None:
        """Get or create every claim object in ``namespace``.  With ``dry_run`` nothing is
        written: conflicts are still reported, missing objects are not created."""
        for claim in claims:
            if dry_run:
                await self._check(claim, namespace)
                continue
            # Many pods of one rollout arrive together: one API round trip serves them all.
            await self._flights.run(self._key(claim, namespace), lambda: self._ensure_one(claim, namespace))

    async def _ensure_one(self, claim: ClaimObject, namespace: str) -> None:
        resource = Resource(claim.api_version.value, claim.kind)
        wanted = claim.manifest(namespace)
        existing = await self._get(resource, namespace, claim.name)
        if existing is None:
            try:
                await self.api.create(resource, namespace, wanted)
                self.on_created(claim.kind)
                return
            except ApiError as exc:
                if not exc.conflict:
                    raise self._unavailable("create", claim, namespace, exc) from exc
            # Another replica (or pod) created it first: use it if it is the same.
            existing = await self._get(resource, namespace, claim.name)
            if existing is None:
                raise TemplateUnavailable(
                    f"{claim.kind} {namespace}/{claim.name} was created and deleted concurrently; retry"
                )
        self._accept(existing, wanted, claim, namespace)
        if UNUSED_SINCE_ANNOTATION in ((existing.get("metadata") or {}).get("annotations") or {}):
            await self._revive(resource, namespace, claim)

    async def _check(self, claim: ClaimObject, namespace: str) -> None:
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
        if not contains(_spec_of(existing), _spec_of(wanted)):
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
