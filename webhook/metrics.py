"""Prometheus metrics, in a registry owned by one app (tests run several servers in one process)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.metrics import MetricWrapperBase

from kubectl_gpu.k8s.paths import POD, WORKLOAD_RESOURCES

# Admission latency budget is milliseconds; the API server's timeout is 10 s by default.
_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# Label sets whose series are looked up once and kept (bounded all the same; past it, lookups go
# through the metric as before).
_MAX_REMEMBERED_SERIES = 4096


# Label values come from closed sets, never from request text: a lone surrogate or a million
# made-up kinds must not break /metrics (the text format is UTF-8) or grow it without bound.
KIND_LABELS = frozenset({
    POD.kind, *(resource.kind for resource in WORKLOAD_RESOURCES), "Node", "ResourceClaim", "ResourceClaimTemplate",
})
OPERATION_LABELS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})
OTHER = "other"


def kind_label(kind: str) -> str:
    """``kind`` when it is one this webhook is registered for, else "other" ("" when absent)."""
    return kind if kind in KIND_LABELS or not kind else OTHER


def operation_label(operation: str) -> str:
    return operation if operation in OPERATION_LABELS or not operation else OTHER


@dataclass
class Metrics:
    registry: CollectorRegistry
    reviews: Counter
    latency: Histogram
    rewrites: Counter
    templates_created: Counter
    api_errors: Counter
    double_counting: Counter
    tls_reloads: Counter
    # The transport's guard (webhook/transport.py).
    open_connections: Gauge
    connections_closed: Counter
    _series: dict[tuple[int, tuple[str, ...]], Any] = field(default_factory=dict, repr=False, compare=False)

    def series(self, metric: MetricWrapperBase, *values: str) -> Any:
        """``metric.labels(*values)``, remembered: every review counts a few series, and looking a
        series up validates and locks each time."""
        key = (id(metric), values)
        found = self._series.get(key)
        if found is None:
            found = metric.labels(*values)
            if len(self._series) < _MAX_REMEMBERED_SERIES:
                self._series[key] = found
        return found

    @classmethod
    def create(cls) -> "Metrics":
        r = CollectorRegistry(auto_describe=True)
        return cls(
            registry=r,
            reviews=Counter(
                "kubectl_gpu_webhook_reviews",
                "AdmissionReviews answered, by endpoint, object kind, operation and result "
                "(allowed, patched, denied, warned, invalid).",
                ["endpoint", "kind", "operation", "result"],
                registry=r,
            ),
            latency=Histogram(
                "kubectl_gpu_webhook_review_duration_seconds",
                "Time from request body read to response, by endpoint.",
                ["endpoint"],
                buckets=_BUCKETS,
                registry=r,
            ),
            rewrites=Counter(
                "kubectl_gpu_webhook_rewrites",
                "Pod templates rewritten to DRA, by legacy family (audit mode counts what it would rewrite).",
                ["family", "audit"],
                registry=r,
            ),
            templates_created=Counter(
                "kubectl_gpu_webhook_templates_created",
                "DRA objects the webhook created, by kind.",
                ["kind"],
                registry=r,
            ),
            api_errors=Counter(
                "kubectl_gpu_webhook_api_errors",
                "Failed Kubernetes API calls, by operation.",
                ["operation"],
                registry=r,
            ),
            double_counting=Counter(
                "kubectl_gpu_webhook_double_counting_findings",
                "Double-counting guards that fired: fenced (affinity added), pinned (denied), "
                "unfenced (denied: no fence reached /validate), same_gpus_twice (denied), node_status_stripped.",
                ["finding"],
                registry=r,
            ),
            tls_reloads=Counter(
                "kubectl_gpu_webhook_tls_reloads",
                "Serving certificate reloads after the files changed.",
                registry=r,
            ),
            open_connections=Gauge(
                "kubectl_gpu_webhook_open_connections",
                "Connections open on the HTTPS port (at most transport.maxConnections).",
                registry=r,
            ),
            connections_closed=Counter(
                "kubectl_gpu_webhook_connections_closed",
                "Connections the server ended, by reason: refused (all answering), displaced (at the cap), "
                "certificate (a client common name not allowed), or the phase whose deadline passed "
                "(handshake, headers, body).",
                ["reason"],
                registry=r,
            ),
        )
