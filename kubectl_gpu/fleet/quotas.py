"""A namespace's ResourceQuotas before and after its workloads move: read them, add the DRA entries
that carry their GPU caps (kubectl_gpu.core.quota) before the first workload of the namespace is
rewritten, and take exactly those entries away again on rollback.

Writes are server-side applies by the field manager kubectl-gpu holding only what it adds (the
entries and an annotation naming them), so the entries others own are never touched and rollback
is an apply of nothing: the API server removes the fields kubectl-gpu alone owned.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubectl_gpu.core import QuotaPlan, QuotaTarget, TranslateOptions, plan_quota
from kubectl_gpu.dra.facts import QUOTA_ENTRIES_ANNOTATION
from kubectl_gpu.k8s.client import Client
from kubectl_gpu.k8s.lists import list_objects
from kubectl_gpu.k8s.paths import PLURALS, collection_path

from .cluster_io import object_path, send

APPLY = "application/apply-patch+yaml"


def list_quotas(api: Client, namespace: str | None) -> list[dict[str, Any]]:
    """The ResourceQuotas of ``namespace`` (None: every namespace)."""
    quotas = list_objects(api, collection_path("", "v1", PLURALS["ResourceQuota"], namespace))
    for quota in quotas:
        quota.setdefault("apiVersion", "v1")
        quota.setdefault("kind", "ResourceQuota")
    return quotas


def plan_quotas(quotas: list[Mapping[str, Any]], options: TranslateOptions, target: QuotaTarget) -> list[QuotaPlan]:
    """The plan of every quota that caps a legacy GPU resource."""
    return [plan for plan in (plan_quota(q, options, target) for q in quotas) if plan.notes]


def _path(namespace: str, name: str) -> str:
    return object_path("v1", PLURALS["ResourceQuota"], namespace, name)


def _query(manager: str, dry_run: bool) -> list[tuple[str, str]]:
    return [("fieldManager", manager), *([("dryRun", "All")] if dry_run else [])]


def apply_quota(api: Client, plan: QuotaPlan, manager: str, dry_run: bool) -> str:
    """Add the plan's entries (none: nothing is written)."""
    ref = f"ResourceQuota/{plan.namespace}/{plan.name}"
    if not plan.entries:
        return f"{ref}: unchanged"
    config = {"apiVersion": "v1", "kind": "ResourceQuota",
              "metadata": {"name": plan.name, "namespace": plan.namespace,
                           "annotations": {QUOTA_ENTRIES_ANNOTATION: ",".join(e.key for e in plan.entries)}},
              "spec": {"hard": {e.key: e.value for e in plan.entries}}}
    send(api, "PATCH", _path(plan.namespace, plan.name), config, content_type=APPLY, query=_query(manager, dry_run))
    added = ", ".join(f"{e.key}: {e.value}" for e in plan.entries)
    return f"{ref}: {'would add' if dry_run else 'added'} {added}"


def rollback_quota(api: Client, quota: Mapping[str, Any], manager: str, dry_run: bool) -> str | None:
    """Take away the entries migrate added (those its annotation names); None for a quota it never changed."""
    meta = quota.get("metadata") or {}
    entries = (meta.get("annotations") or {}).get(QUOTA_ENTRIES_ANNOTATION)
    if not entries:
        return None
    config = {"apiVersion": "v1", "kind": "ResourceQuota",
              "metadata": {"name": meta["name"], "namespace": meta["namespace"]}}
    send(api, "PATCH", _path(meta["namespace"], meta["name"]), config, content_type=APPLY,
         query=_query(manager, dry_run))
    return (f"ResourceQuota/{meta['namespace']}/{meta['name']}: {'would remove' if dry_run else 'removed'} "
            f"{entries.replace(',', ', ')}")

