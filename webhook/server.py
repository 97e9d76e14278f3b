"""The HTTPS server: endpoints, per-review logging and metrics, readiness, TLS reloading.

Every request gets an answer the API server can use: a body that is not an AdmissionReview is a
400 with a message (nesting deeper than 256 levels too), a body over 7 MiB a 413, and an unexpected failure while deciding is a
well-formed denial that says so, never an HTTP 500 or a dropped connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from dataclasses import dataclass
from typing import Awaitable, Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from kubectl_gpu.k8s import WORKLOAD_RESOURCES, AsyncClient, Resource

from . import logs, transport
from .admission import Admission
from .caches import ReviewParser
from .cluster_profile import ProfileCache
from .config import WebhookConfig
from .labelcache import LabelCache
from .metrics import Metrics, kind_label, operation_label
from .quota_guard import QuotaGuard
from .review import (
    MAX_BODY_BYTES,
    body_limit,
    AdmissionRequest,
    BadReview,
    Verdict,
    deny,
    encode_response,
)
from .templates import TemplateStore
from .tls import ReloadingTLS

log = logging.getLogger("webhook")

READY_RECHECK_SECONDS = 5.0
LINGER_SECONDS = 2.0


@dataclass
class Timings:
    label_ttl: float = 30.0
    tls_poll: float = 2.0
    # After SIGTERM the pod keeps serving, not ready, this long: the endpoints controller and the
    # API server's webhook client must stop sending here before the port closes.
    shutdown_delay: float = 5.0
    # Then reviews already being answered get this long to finish (the API server waits at most
    # the webhook's timeoutSeconds, 30 s at most).
    shutdown_grace: float = 30.0
    # How often a self-signed serving certificate is checked for renewal (tls.selfSigned).
    cert_check: float = 3600.0


@dataclass
class _ApiState:
    """Whether the Kubernetes API answered lately: said in /readyz's body, never waited for there
    (the kubelet's probe gives up after its own timeout), refreshed in the background."""

    api: AsyncClient
    checked_at: float = -1e9
    api_ok: bool = True  # until a check says otherwise: nothing is known to be wrong
    _checking: asyncio.Task[None] | None = None

    def last_known(self) -> bool:
        if time.monotonic() - self.checked_at >= READY_RECHECK_SECONDS and self._checking is None:
            self._checking = asyncio.get_running_loop().create_task(self._check())
        return self.api_ok

    async def _check(self) -> None:
        try:
            self.api_ok = await asyncio.wait_for(self.api.reachable(), timeout=self.api.timeout + 1)
        except Exception:  # noqa: BLE001 - a check never raises; it says unreachable
            self.api_ok = False
        finally:
            self.checked_at = time.monotonic()
            self._checking = None

    async def close(self) -> None:
        if self._checking is not None:
            self._checking.cancel()


class WebhookServer:
    """One webhook process: the aiohttp app, its caches and metrics."""

    def __init__(self, config: WebhookConfig, api: AsyncClient, timings: Timings | None = None) -> None:
        self.config = config
        self.api = api
        self.timings = timings or Timings()
        self.metrics = Metrics.create()
        self.tls: ReloadingTLS | None = None
        self.guard: transport.ConnectionGuard | None = None  # the HTTPS port's connections, once started
        self._api_state = _ApiState(api)
        self._parser = ReviewParser()
        self._runner: web.AppRunner | None = None
        self._metrics_runner: web.AppRunner | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._rotating: asyncio.Task[None] | None = None
        self.port: int | None = None
        self.metrics_port: int | None = None
        self.draining = False
        on_error = lambda operation: self.metrics.series(self.metrics.api_errors, operation).inc()  # noqa: E731
        self.admission = Admission(
            config=config,
            templates=TemplateStore(
                api,
                opt_out_label=config.opt_out_label,
                on_created=lambda kind: self.metrics.series(self.metrics.templates_created, kind).inc(),
                on_api_error=on_error,
                creates_per_minute=config.template_creates_per_minute,
            ),
            namespaces=LabelCache(api, Resource("v1", "Namespace"), self.timings.label_ttl, on_api_error=on_error),
            nodes=LabelCache(api, Resource("v1", "Node"), self.timings.label_ttl, on_api_error=on_error),
            owners={
                resource.kind: LabelCache(api, resource, self.timings.label_ttl, on_api_error=on_error)
                for resource in WORKLOAD_RESOURCES
            },
            metrics=self.metrics,
            profiles=ProfileCache(api, config.profile_ttl_seconds, config.feature_gates, on_api_error=on_error),
            quota=None if config.quota == "ignore" else QuotaGuard(api, self.metrics.registry, config.quota,
                                                                  self.timings.label_ttl, on_api_error=on_error),
        )

    # --- app ------------------------------------------------------------------------------

    def app(self) -> web.Application:
        # Every body over the limit is a 413, as docs/webhook.md says (tests/test_chart_server.py sends
        # the largest review the API server can, and one byte more).
        application = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[transport.middleware])
        application.add_routes(
            [
                web.post("/mutate", self._mutate),
                web.post("/validate", self._validate),
                web.get("/healthz", self._healthz),
                web.get("/readyz", self._readyz),
                web.get("/metrics", self._metrics),
            ]
        )
        return application

    def metrics_app(self) -> web.Application:
        """/metrics (and /healthz) alone, for a plain-HTTP metrics port Prometheus scrapes
        without the webhook's CA."""
        application = web.Application()
        application.add_routes([web.get("/metrics", self._metrics), web.get("/healthz", self._healthz)])
        return application

    async def start(self, host: str = "0.0.0.0", port: int | None = None, metrics_port: int | None = None) -> int:
        self.tls = ReloadingTLS(self.config.cert_file, self.config.key_file, self.config.tls_policy)
        if metrics_port is not None:
            self._metrics_runner = web.AppRunner(self.metrics_app(), access_log=None, handle_signals=False)
            await self._metrics_runner.setup()
            metrics_site = web.TCPSite(self._metrics_runner, host, metrics_port)
            await metrics_site.start()
            self.metrics_port = metrics_site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        limits = self.config.transport
        # aiohttp's own keep-alive timer is a second bound behind the guard's idle deadline.
        self._runner = web.AppRunner(self.app(), access_log=None, handle_signals=False,
                                     shutdown_timeout=self.timings.shutdown_grace,
                                     keepalive_timeout=limits.idle_timeout + limits.header_timeout,
                                     # A body left unread (refused) is drained this long, not aiohttp's 10 s.
                                     lingering_time=LINGER_SECONDS)
        await self._runner.setup()
        self.guard = transport.ConnectionGuard(
            limits, self.tls.server_context, self._runner.server, self.config.tls_policy.peer_allowed,
            on_closed=lambda reason: self.metrics.series(self.metrics.connections_closed, reason).inc())
        self.metrics.open_connections.set_function(lambda: len(self.guard.open) if self.guard else 0)
        site = transport.GuardedSite(self._runner, self.guard, host, self.config.port if port is None else port,
                                     backlog=1024)
        await site.start()
        self.port = site.port
        self._watcher = asyncio.create_task(self._watch_tls())
        if self.config.self_signed is not None:
            from .rotation import CertRotator

            self.rotator = CertRotator(self.api, self.config.self_signed)
            self._rotating = asyncio.create_task(self.rotator.run(self.timings.cert_check))
        log.info("webhook listening", extra={"port": self.port, "audit": self.config.audit})
        return self.port

    async def _watch_tls(self) -> None:
        assert self.tls is not None
        while True:
            await asyncio.sleep(self.timings.tls_poll)
            if self.tls.reload_if_changed():
                self.metrics.tls_reloads.inc()

    async def shutdown(self) -> None:
        """What SIGTERM does: readiness goes false at once (the endpoints controller removes the
        pod), reviews keep being answered for ``shutdown_delay``, then the port closes and the
        reviews in flight finish (up to ``shutdown_grace``).  A rolling restart loses no review."""
        self.draining = True
        log.info("draining", extra={"seconds": self.timings.shutdown_delay})
        await asyncio.sleep(self.timings.shutdown_delay)
        await self.stop()

    async def stop(self) -> None:
        self.draining = True
        for task in (self._watcher, self._rotating):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        runners, self._runner, self._metrics_runner = (self._runner, self._metrics_runner), None, None
        for runner in runners:
            if runner is not None:
                await runner.cleanup()  # stops listening, then waits for the handlers in flight
        await self._api_state.close()
        await self.admission.templates.close()
        if self.admission.profiles is not None:
            await self.admission.profiles.close()
        await self.api.close()

    # --- endpoints ------------------------------------------------------------------------

    async def _mutate(self, request: web.Request) -> web.Response:
        return await self._review(request, "mutate", self.admission.mutate)

    async def _validate(self, request: web.Request) -> web.Response:
        return await self._review(request, "validate", self.admission.validate)

    async def _review(
        self, http: web.Request, endpoint: str, decide: Callable[[AdmissionRequest], Awaitable[Verdict]]
    ) -> web.Response:
        started = time.perf_counter()
        metrics = self.metrics
        if not self.config.tls_policy.may_send_reviews(http.transport):
            metrics.series(metrics.reviews, endpoint, "", "", "invalid").inc()
            return _error(403, "reviews are served only to the API server: present its client certificate "
                               "(tls.clientAuth)")
        try:
            body = await transport.read_body(http, MAX_BODY_BYTES)
            review = self._parser.parse(body)
            # The operation is known only once parsed: a CREATE that large is refused before
            # anything is decided on it (deciding costs several times the body).
            if len(body) > body_limit(review.operation):
                raise transport.BodyRefused(413, f"body larger than {body_limit(review.operation)} bytes")
        except transport.BodyRefused as exc:
            metrics.series(metrics.reviews, endpoint, "", "", "invalid").inc()
            if exc.status != 413:
                return _error(exc.status, str(exc))
            return _error(413, f"{exc}: an AdmissionReview (an object and its oldObject of at most 3 MiB "
                               "each, a CREATE only the object) is never that large")
        except BadReview as exc:
            metrics.series(metrics.reviews, endpoint, "", "", "invalid").inc()
            log.warning("bad review", extra={"endpoint": endpoint, "error": str(exc)})
            return _error(400, str(exc))
        budget = self.config.review_deadline_seconds
        try:
            # One deadline for the whole review, all its API calls together: the API server stops
            # waiting after timeoutSeconds, and an answer after that is lost (a template created
            # then serves no pod).  Work shared with other reviews goes on (singleflight.py).
            async with asyncio.timeout(budget - (time.perf_counter() - started)):
                verdict = await decide(review)
        except TimeoutError:
            metrics.series(metrics.api_errors, "review_deadline").inc()
            verdict = deny(
                f"kubectl-gpu: the Kubernetes API did not answer this review's calls within {budget:g}s (the API "
                f"server waits {self.config.admission_timeout_seconds:g}s for this webhook); the request was not "
                "admitted, retry it", 503)
        except Exception:  # noqa: BLE001 - a bug must produce a clear denial, not a dropped request
            log.exception("review failed", extra={"uid": review.uid, "endpoint": endpoint})
            verdict = deny(
                f"kubectl-gpu: internal error while reviewing this {review.kind or 'object'} (see webhook logs, "
                f"uid {review.uid}); retry, or label it {self.config.opt_out_label}=true",
                500,
            )
        payload = encode_response(review.uid, verdict, review.strict_json)
        result = "denied" if not verdict.allowed else "patched" if verdict.patch else "warned" if verdict.warnings else "allowed"
        metrics.series(metrics.reviews, endpoint, kind_label(review.kind), operation_label(review.operation), result).inc()
        elapsed = time.perf_counter() - started
        metrics.series(metrics.latency, endpoint).observe(elapsed)
        if result != "allowed" or log.isEnabledFor(logging.DEBUG):
            logs.emit(
                log,
                logging.DEBUG if result == "allowed" else logging.INFO,
                "review",
                {
                    "uid": review.uid, "endpoint": endpoint, "kind": review.kind, "operation": review.operation,
                    "namespace": review.namespace, "object": review.name, "dryRun": review.dry_run,
                    "result": result, "reason": verdict.message or None, "warnings": list(verdict.warnings) or None,
                    "ms": round(elapsed * 1000, 3),
                },
            )
        return web.Response(body=payload, content_type="application/json")

    async def _healthz(self, _request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _readyz(self, _request: web.Request) -> web.Response:
        """Ready means able to answer reviews: a serving certificate, and not shutting down.  Not the
        Kubernetes API: every replica shares it, so failing on it would empty the Service at once,
        and then failurePolicy Fail rejects every GPU pod with a bare connection error and Ignore
        admits every one unrewritten and unfenced.  Ready, a replica answers what needs no API call
        (fences, opted-out pods, DRA object checks, cached templates and labels) and denies the rest
        with a retryable message."""
        if self.draining:
            return web.Response(status=503, text="not ready: shutting down\n")
        if self.tls is None or not self.tls.loaded:
            return web.Response(status=503, text="not ready: serving certificate not loaded\n")
        if not self._api_state.last_known():
            return web.Response(text="ok; Kubernetes API not reachable: reviews that need it are denied, "
                                     "retryable (503), the others are answered\n")
        return web.Response(text="ok\n")

    async def _metrics(self, _request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(self.metrics.registry), headers={"Content-Type": CONTENT_TYPE_LATEST})


def _error(status: int, message: str) -> web.Response:
    return web.Response(
        status=status,
        body=json.dumps({"error": message}).encode(),
        content_type="application/json",
    )
