"""Graceful shutdown: what a rolling restart of the webhook looks like to the API server.

On SIGTERM the kubelet marks the pod terminating; the endpoints controller removes it once it is
not ready, and the API server's webhook client stops sending there.  The server must say "not
ready" at once, keep answering while that propagates, then close its port and let the reviews in
flight finish (https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-termination).
"""

from __future__ import annotations

import asyncio
import http.client
import threading
import time

from tests.conftest import admission_review
from webhook.server import Timings


def gpu_pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def test_readiness_goes_false_at_once_and_reviews_are_still_answered_while_draining(start_webhook):
    hook = start_webhook(timings=Timings(tls_poll=0.2, shutdown_delay=30))
    assert hook.request("GET", "/readyz")[0] == 200
    draining = asyncio.run_coroutine_threadsafe(hook.server.shutdown(), hook.loop)
    deadline = time.monotonic() + 10
    while not hook.server.draining and time.monotonic() < deadline:
        time.sleep(0.01)
    status, body = hook.request("GET", "/readyz")
    assert status == 503 and b"shutting down" in body
    assert hook.review("/mutate", admission_review(gpu_pod("late")))["allowed"] is True
    draining.cancel()


def test_a_review_in_flight_when_the_port_closes_is_still_answered(start_webhook, k8s_double):
    hook = start_webhook()
    k8s_double.delay(0.5, "create", "resourceclaimtemplates")
    answers: list[dict] = []
    sender = threading.Thread(target=lambda: answers.append(hook.review("/mutate", admission_review(gpu_pod("slow")))))
    sender.start()
    deadline = time.monotonic() + 10
    while k8s_double.count(verb="create", resource="resourceclaimtemplates") == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    asyncio.run_coroutine_threadsafe(hook.server.stop(), hook.loop).result(30)
    sender.join(30)
    assert answers and answers[0]["allowed"] is True and answers[0]["patch"]


PROPAGATION_SECONDS = 0.2  # probe period + endpoints update + API server's view, scaled down


def test_a_rolling_restart_under_load_loses_no_review(start_webhook):
    """Two replicas under load; replica A gets SIGTERM.  The stand-in for the kubelet, endpoints
    controller and API server stops sending to A only PROPAGATION_SECONDS after A says not ready,
    and opens a new connection per review (the worst case: every one must be accepted)."""
    replicas = [start_webhook(timings=Timings(tls_poll=0.2, shutdown_delay=2.0)) for _ in range(2)]
    assert _rolling_restart(replicas) == []


def _rolling_restart(replicas) -> list[str]:
    endpoints = list(replicas)
    done = threading.Event()
    failures: list[str] = []
    answered = [0]

    def endpoints_controller() -> None:
        not_ready_since: dict[int, float] = {}
        while not done.is_set():
            for index, replica in enumerate(replicas):
                if _ready(replica):
                    not_ready_since.pop(index, None)
                else:
                    not_ready_since.setdefault(index, time.monotonic())
            endpoints[:] = [r for i, r in enumerate(replicas)
                            if time.monotonic() - not_ready_since.get(i, time.monotonic()) < PROPAGATION_SECONDS]
            time.sleep(0.02)

    def api_server(worker: int) -> None:
        n = 0
        while not done.is_set():
            n += 1
            uid = f"00000000-0000-0000-{worker:04d}-{n:012d}"
            current = list(endpoints)
            if not current:
                failures.append("no endpoint")
                continue
            target = current[n % len(current)]
            connection = http.client.HTTPSConnection("127.0.0.1", target.port, context=target.ssl_context(), timeout=30)
            try:
                connection.request("POST", "/mutate", _body(gpu_pod(f"p{worker}-{n}"), uid),
                                   headers={"Content-Type": "application/json"})
                response = connection.getresponse()
                status, body = response.status, response.read()
            except (OSError, http.client.HTTPException) as exc:
                failures.append(f"{uid}: {exc!r}")
                continue
            finally:
                connection.close()
            if status != 200 or uid.encode() not in body:
                failures.append(f"{uid}: HTTP {status}")
            answered[0] += 1

    threads = [threading.Thread(target=endpoints_controller)] + [
        threading.Thread(target=api_server, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(0.5)
    asyncio.run_coroutine_threadsafe(replicas[0].server.shutdown(), replicas[0].loop).result(30)
    time.sleep(0.3)
    done.set()
    for thread in threads:
        thread.join(30)
    assert answered[0] > 20 and not _ready(replicas[0])
    return failures


def _ready(replica) -> bool:
    """What the kubelet's readiness probe sees (a closed port is not ready)."""
    try:
        return replica.request("GET", "/readyz")[0] == 200
    except (OSError, http.client.HTTPException):
        replica._connections.pop(threading.get_ident(), None)  # a new connection next time
        return False


def _body(pod: dict, uid: str) -> bytes:
    import json

    return json.dumps(admission_review(pod, uid=uid)).encode()


def test_metrics_can_be_served_on_a_separate_plain_http_port(start_webhook):
    import urllib.request

    hook = start_webhook()
    port = asyncio.run_coroutine_threadsafe(_metrics_only(hook), hook.loop).result(10)
    hook.review("/mutate", admission_review(gpu_pod("counted")))
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    assert "kubectl_gpu_webhook_reviews_total" in text


async def _metrics_only(hook) -> int:
    from aiohttp import web

    runner = web.AppRunner(hook.server.metrics_app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    hook.server._metrics_runner = runner  # stopped with the server
    return site._server.sockets[0].getsockname()[1]
