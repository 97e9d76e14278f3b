"""`kgpu-webhook cleanup`: delete managed DRA objects that nothing references any more.

Deleting a template a pod is about to use would strand that pod (the webhook checks the template
for every review, but a pod admitted a moment ago may not be visible to a list yet).  So clean-up works in two passes separated by a grace period:

1. an unreferenced object the webhook created is marked (annotation ``kubectl-gpu.io/unused-since``);
2. a later run deletes it if the mark is older than the grace period AND a fresh look at the
   namespace still finds no reference, with a resourceVersion precondition.

Only objects the webhook created (its own label, templates.CREATED_BY_WEBHOOK) are candidates:
those `kubectl gpu migrate` wrote carry the same managed-by label but belong to the user's
manifests.  References are looked for in every object that can hold a pod spec, custom resources
included (references.py).

A webhook that needs a marked object again removes the mark, which changes the resourceVersion,
so a delete racing with it fails with 409 instead of removing the object.  The grace period must
exceed the admission timeout.

Planning is pure (:func:`plan_cleanup`); :func:`run_cleanup` does the API calls.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from kubectl_gpu.core.constants import MANAGED_BY_LABEL, MANAGED_BY_VALUE
from kubectl_gpu.k8s import DRA_GROUP, ApiError, Client, Resource, preferred_dra_version, served_versions

from .references import ObjectKey, is_referenced, pod_holding_resources, referenced
from .templates import CREATED_BY_WEBHOOK, UNUSED_SINCE_ANNOTATION

DEFAULT_GRACE_SECONDS = 600.0
CREATED_SELECTOR = ",".join(f"{k}={v}" for k, v in {MANAGED_BY_LABEL: MANAGED_BY_VALUE, **CREATED_BY_WEBHOOK}.items())
CLAIM_KINDS = ("ResourceClaimTemplate", "ResourceClaim")


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


def _in_use(obj: dict[str, Any], references: set[ObjectKey]) -> bool:
    if is_referenced(_key(obj), references):
        return True
    # A ResourceClaim reserved for a pod is in use even if no spec names it any more.
    return bool(((obj.get("status") or {}).get("reservedFor")))


def plan_cleanup(
    managed: list[dict[str, Any]], references: set[ObjectKey], now: dt.datetime, grace_seconds: float
) -> CleanupPlan:
    plan = CleanupPlan()
    for obj in managed:
        key = _key(obj)
        meta = obj.get("metadata") or {}
        mark = (meta.get("annotations") or {}).get(UNUSED_SINCE_ANNOTATION)
        if _in_use(obj, references):
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


def run_cleanup(
    api: Client,
    dra_api_version: str | None = None,
    namespace: str | None = None,
    dry_run: bool = False,
    grace_seconds: float = DEFAULT_GRACE_SECONDS,
    now: dt.datetime | None = None,
) -> CleanupReport:
    """``dra_api_version``: e.g. resource.k8s.io/v1; None: the newest the cluster serves (any
    served version reads the same stored objects)."""
    now = now or dt.datetime.now(dt.timezone.utc)
    report = CleanupReport(dry_run=dry_run)
    if dra_api_version is None:
        version = preferred_dra_version(served_versions(api, DRA_GROUP))
        if version is None:
            return report  # no DRA served: nothing the webhook could have created
        dra_api_version = f"{DRA_GROUP}/{version}"
    managed: list[dict[str, Any]] = []
    for kind in CLAIM_KINDS:
        for item in api.list(Resource(dra_api_version, kind), namespace, label_selector=CREATED_SELECTOR):
            item.setdefault("kind", kind)
            managed.append(item)
    if not managed:
        return report
    holders = pod_holding_resources(api)
    plan = plan_cleanup(managed, referenced(api, holders, namespace), now, grace_seconds)
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
            fresh[key.namespace] = referenced(api, holders, key.namespace)
        if is_referenced(key, fresh[key.namespace]):
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
