"""A rewrite in a namespace whose ResourceQuota caps the legacy GPU resource but not the DRA one.

Once the webhook turns a pod's ``nvidia.com/gpu`` into a claim, ``requests.nvidia.com/gpu`` stops
counting it (kubectl_gpu.core.quota cites the quota evaluators): the tenant's cap is gone unless
the quota also holds the DRA entry.  ``quota: warn`` (the default) admits the rewrite with a
warning, ``deny`` refuses it (403; audit mode only warns), ``ignore`` reads no quota.  Every such
rewrite is counted in ``kubectl_gpu_webhook_uncapped_rewrites_total{mode}``.

The namespace's quotas are listed on demand and kept ``ttl`` seconds (as labelcache.py keeps
labels): key namespace, one list per namespace per ``ttl``, a quota change seen within ``ttl``.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from kubectl_gpu.core import QuotaTarget, TranslateOptions, plan_quota
from kubectl_gpu.k8s import ApiError, AsyncClient, Resource

from .mutation import MESSAGE_PREFIX
from .singleflight import SingleFlight

QUOTA_MODES = ("warn", "deny", "ignore")


def uncapped(quotas: Sequence[Mapping[str, Any]], options: TranslateOptions,
             target: QuotaTarget) -> list[tuple[str, str]]:
    """(short warning, full reason) per cap the rewritten pods escape: a DRA entry a quota lacks, or
    a cap no entry can carry.  Warnings stay short (the API server may cut them at 120 characters)."""
    found = []
    for quota in quotas:
        plan = plan_quota(quota, options, target)
        where = f"ResourceQuota {plan.namespace}/{plan.name}"
        for entry in plan.entries:
            found.append((f"ResourceQuota {plan.name} does not count these GPUs: add {entry.key}",
                          f"{where} caps {', '.join(entry.carries)} but not {entry.key}, so the rewritten pods' "
                          f"GPUs are not counted: add {entry.key}: \"{entry.value}\" (kubectl gpu migrate does)"))
        for key in plan.uncapped:
            found.append((f"ResourceQuota {plan.name}: no DRA quota entry counts {key}",
                          f"{where} caps {key}, which no DRA quota entry can count"))
    return found


class QuotaGuard:
    def __init__(self, api: AsyncClient, registry: CollectorRegistry, mode: str = "warn", ttl_seconds: float = 30.0,
                 clock: Callable[[], float] = time.monotonic,
                 on_api_error: Callable[[str], None] = lambda operation: None) -> None:
        self.api = api
        self.mode = mode
        self.ttl = ttl_seconds
        self.clock = clock
        self.on_api_error = on_api_error
        self.counter = Counter("kubectl_gpu_webhook_uncapped_rewrites",
                               "Rewrites in a namespace whose ResourceQuota caps the legacy GPU resource but not the "
                               "DRA one, by what was done (warn, deny, audit).", ["mode"], registry=registry)
        self._entries: dict[str, tuple[float, list[dict[str, Any]]]] = {}
        self._flights: SingleFlight[str, list[dict[str, Any]]] = SingleFlight()

    async def quotas(self, namespace: str) -> list[dict[str, Any]]:
        entry = self._entries.get(namespace)
        if entry is not None and entry[0] > self.clock():
            return entry[1]
        return await self._flights.run(namespace, lambda: self._refresh(namespace))

    async def _refresh(self, namespace: str) -> list[dict[str, Any]]:
        try:
            quotas = await self.api.list(Resource("v1", "ResourceQuota"), namespace)
        except ApiError:
            self.on_api_error("list_resourcequotas")
            raise
        self._entries[namespace] = (self.clock() + self.ttl, quotas)
        if len(self._entries) > 10_000:  # bounded: drop the oldest half
            for key in list(self._entries)[: len(self._entries) // 2]:
                del self._entries[key]
        return quotas

    async def review(self, namespace: str, options: TranslateOptions, target: QuotaTarget,
                     audit: bool) -> tuple[tuple[str, ...], str | None]:
        """(warnings, denial message or None) for a rewrite in ``namespace``."""
        if self.mode == "ignore":
            return (), None
        try:
            found = uncapped(await self.quotas(namespace), options, target)
        except ApiError as exc:
            return (f"{MESSAGE_PREFIX}cannot read ResourceQuotas ({exc.status or exc.reason}): a GPU cap may miss "
                    "these pods",), None
        if not found:
            return (), None
        deny = self.mode == "deny" and not audit
        self.counter.labels("audit" if audit else self.mode).inc()
        if deny:
            return (), MESSAGE_PREFIX + "; ".join(reason for _, reason in found)
        return tuple(MESSAGE_PREFIX + warning for warning, _ in found), None
