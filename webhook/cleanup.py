"""`kubectl-gpu-webhook cleanup`: delete managed DRA objects that nothing references any more.

Deleting a template a pod is about to use would strand that pod (the webhook checks the template
for every review, but a pod admitted a moment ago may not be visible to a list yet).  So clean-up works in two passes separated by a grace period:

1. an unreferenced managed object is marked (annotation ``kubectl-gpu.io/unused-since``);
2. a later run deletes it if the mark is older than the grace period AND a fresh look at the
   namespace's pods and workloads still finds no reference, with a resourceVersion precondition.

A webhook that needs a marked object again removes the mark, which changes the resourceVersion,
so a delete racing with it fails with 409 instead of removing the object.  The grace period must
exceed the admission timeout.

Planning is pure (:func:`plan_cleanup`); :func:`run_cleanup` does the API calls.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Iterable

from kubectl_gpu.core.constants import MANAGED_BY_LABEL, MANAGED_BY_VALUE

from kubectl_gpu.k8s import POD, WORKLOAD_RESOURCES, ApiError, Client, Resource

from .mutation import POD_TEMPLATE_PATHS
from .templates import UNUSED_SINCE_ANNOTATION

DEFAULT_GRACE_SECONDS = 600.0
MANAGED_SELECTOR = f"{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}"
CLAIM_KINDS = ("ResourceClaimTemplate", "ResourceClaim")


@dataclass(frozen=True)
class ObjectKey:
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


@dataclass
class CleanupPlan:
    mark: list[ObjectKey] = field(default_factory=list)
    unmark: list[ObjectKey] = field(default_factory=list)
    delete: list[tuple[ObjectKey, str]] = field(default_factory=list)  # (object, resourceVersion)
    keep: list[ObjectKey] = field(default_factory=list)


@dataclass
class CleanupReport:
    marked: list[str] = field(default_factory=list)
    unmarked: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # with the reason
    dry_run: bool = False


def references(pod_specs: Iterable[dict[str, Any]], namespace: str) -> set[ObjectKey]:
    """The claim objects pod specs point at."""
    found = set()
    for spec in pod_specs:
        for entry in (spec or {}).get("resourceClaims") or []:
            if not isinstance(entry, dict):
                continue
            if entry.get("resourceClaimTemplateName"):
                found.add(ObjectKey("ResourceClaimTemplate", namespace, entry["resourceClaimTemplateName"]))
            if entry.get("resourceClaimName"):
                found.add(ObjectKey("ResourceClaim", namespace, entry["resourceClaimName"]))
    return found


def pod_specs_of(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod spec of a Pod or of a workload's pod template."""
    kind = obj.get("kind") or ""
    group = (obj.get("apiVersion") or "").rpartition("/")[0] if "/" in (obj.get("apiVersion") or "") else ""
    path = POD_TEMPLATE_PATHS.get((group, kind), ())
    node: Any = obj
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    spec = node.get("spec") if isinstance(node, dict) else None
    return [spec] if isinstance(spec, dict) else []


def _parse_time(text: str) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None


def format_time(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _key(obj: dict[str, Any]) -> ObjectKey:
    meta = obj.get("metadata") or {}
    return ObjectKey(obj.get("kind") or "", meta.get("namespace") or "", meta.get("name") or "")


def _in_use(obj: dict[str, Any], referenced: set[ObjectKey]) -> bool:
    if _key(obj) in referenced:
        return True
    # A ResourceClaim reserved for a pod is in use even if no spec names it any more.
    return bool(((obj.get("status") or {}).get("reservedFor")))


def plan_cleanup(
    managed: list[dict[str, Any]], referenced: set[ObjectKey], now: dt.datetime, grace_seconds: float
) -> CleanupPlan:
    plan = CleanupPlan()
    for obj in managed:
        key = _key(obj)
        meta = obj.get("metadata") or {}
        mark = (meta.get("annotations") or {}).get(UNUSED_SINCE_ANNOTATION)
        if _in_use(obj, referenced):
            (plan.unmark if mark else plan.keep).append(key)
            continue
        since = _parse_time(mark) if mark else None
        if since is None:
            plan.mark.append(key)
        elif (now - since).total_seconds() >= grace_seconds:
            plan.delete.append((key, meta.get("resourceVersion") or ""))
        else:
            plan.keep.append(key)
    return plan


def _namespace_references(api: Client, namespace: str | None) -> set[ObjectKey]:
    found: set[ObjectKey] = set()
    for resource in (POD, *WORKLOAD_RESOURCES):
        try:
            items = api.list(resource, namespace)
        except ApiError as exc:
            if exc.not_found:
                continue  # the kind is not served here, so nothing of it can hold a reference
            raise  # anything else (403...): references unknown, so nothing may be deleted
        for item in items:
            item.setdefault("kind", resource.kind)
            item.setdefault("apiVersion", resource.api_version)
            ns = (item.get("metadata") or {}).get("namespace") or namespace or ""
            found |= references(pod_specs_of(item), ns)
    return found


def run_cleanup(
    api: Client,
    dra_api_version: str,
    namespace: str | None = None,
    dry_run: bool = False,
    grace_seconds: float = DEFAULT_GRACE_SECONDS,
    now: dt.datetime | None = None,
) -> CleanupReport:
    now = now or dt.datetime.now(dt.timezone.utc)
    report = CleanupReport(dry_run=dry_run)
    managed: list[dict[str, Any]] = []
    for kind in CLAIM_KINDS:
        for item in api.list(Resource(dra_api_version, kind), namespace, label_selector=MANAGED_SELECTOR):
            item.setdefault("kind", kind)
            managed.append(item)
    if not managed:
        return report
    plan = plan_cleanup(managed, _namespace_references(api, namespace), now, grace_seconds)
    for key in plan.mark:
        report.marked.append(str(key))
        if not dry_run:
            _annotate(api, dra_api_version, key, format_time(now), report)
    for key in plan.unmark:
        report.unmarked.append(str(key))
        if not dry_run:
            _annotate(api, dra_api_version, key, None, report)
    fresh: dict[str, set[ObjectKey]] = {}
    for key, version in plan.delete:
        # Look again before deleting: a pod may have been created since the first listing.  Once
        # per namespace, not per object: each look lists every pod and workload there.
        if key.namespace not in fresh:
            fresh[key.namespace] = _namespace_references(api, key.namespace)
        if key in fresh[key.namespace]:
            report.skipped.append(f"{key}: referenced again")
            continue
        if dry_run:
            report.deleted.append(str(key))
            continue
        try:
            api.delete(Resource(dra_api_version, key.kind), key.namespace, key.name, version or None)
            report.deleted.append(str(key))
        except ApiError as exc:
            if exc.not_found:
                continue
            why = "changed since it was checked (a webhook revived it)" if exc.conflict else str(exc)
            report.skipped.append(f"{key}: {why}")
    return report


def _annotate(api: Client, api_version: str, key: ObjectKey, value: str | None, report: CleanupReport) -> None:
    try:
        api.merge_patch(
            Resource(api_version, key.kind), key.namespace, key.name,
            {"metadata": {"annotations": {UNUSED_SINCE_ANNOTATION: value}}},
        )
    except ApiError as exc:
        if not exc.not_found:
            report.skipped.append(f"{key}: {exc}")
