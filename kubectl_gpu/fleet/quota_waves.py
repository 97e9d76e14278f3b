"""Which ResourceQuota changes each wave of a plan needs, and the waves that would leave a capped
namespace uncapped.

A wave that moves a namespace's first workloads to DRA needs that namespace's quota entries
(kubectl_gpu.core.quota) first; ``migrate --from-cluster --apply`` writes them before the
workloads.  A cap no entry can carry (the memory or cores of shared GPUs) would be gone for the
pods that move, so such a wave is refused unless the person accepts it (``--allow-uncapped``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubectl_gpu.core import QuotaPlan, QuotaTarget, TranslateOptions

from .migration_plan import MigrationPlan
from .quotas import plan_quotas


def _namespace(ref: str) -> str:
    """``Deployment/team-a/train`` -> ``team-a``."""
    parts = ref.split("/")
    return parts[1] if len(parts) == 3 else ""


def _describe(plan: QuotaPlan) -> str:
    where = f"{plan.namespace}/{plan.name}"
    if plan.entries:
        return f"ResourceQuota {where}: add " + ", ".join(f"{e.key}: {e.value}" for e in plan.entries)
    if plan.uncapped:
        return f"ResourceQuota {where}: no DRA entry can carry " + ", ".join(plan.uncapped)
    return f"ResourceQuota {where}: unchanged (its caps keep counting)"


def add_quota_changes(plan: MigrationPlan, quotas: Sequence[Mapping[str, Any]], options: TranslateOptions,
                      target: QuotaTarget, allow_uncapped: bool = False) -> None:
    """Fill each wave's ``quotas`` (the first wave to move workloads of a namespace carries its changes)
    and refuse the waves that would leave a namespace's GPU cap behind."""
    by_namespace: dict[str, list[QuotaPlan]] = {}
    for quota_plan in plan_quotas(list(quotas), options, target):
        by_namespace.setdefault(quota_plan.namespace, []).append(quota_plan)
    seen: set[str] = set()
    for wave in plan.waves:
        for namespace in dict.fromkeys(_namespace(ref) for ref in wave.workloads):
            if namespace in seen:
                continue
            seen.add(namespace)
            for quota_plan in by_namespace.get(namespace, ()):
                wave.quotas.append(_describe(quota_plan))
                if quota_plan.uncapped and not allow_uncapped:
                    wave.refused.append(
                        f"namespace {namespace}: ResourceQuota {quota_plan.name} caps "
                        f"{', '.join(quota_plan.uncapped)}, which no DRA quota entry can count: its workloads "
                        "would run uncapped after this wave; cap their devices instead, or pass --allow-uncapped "
                        "to accept it")
