"""Shared fixtures: the Kubernetes API double, and a real webhook server over TLS on loopback."""

from __future__ import annotations

import asyncio
import base64
import http.client
import io
import json
import logging
import os
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import settings

from tests.k8sdouble.fixtures import k8s_double  # noqa: F401  (re-exported fixture)

# CI replays the same examples every run, so a red build is about the change under test; on a
# developer's machine Hypothesis keeps exploring new inputs (and remembers the ones that failed).
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(scope="session")
def webhook_certs(tmp_path_factory: pytest.TempPathFactory):
    from webhook.certs import write_certs

    return write_certs(tmp_path_factory.mktemp("tls"), ["localhost"], ["127.0.0.1"])


@dataclass
class RunningWebhook:
    """A WebhookServer on its own event loop thread; tests talk to it with plain HTTPS."""

    server: Any
    loop: asyncio.AbstractEventLoop
    ca_file: str
    _connections: dict[int, http.client.HTTPSConnection] = field(default_factory=dict)

    @property
    def port(self) -> int:
        return self.server.port

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=self.ca_file)

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        # One keep-alive connection per calling thread, as the API server would hold.
        key = threading.get_ident()
        for attempt in (1, 2):
            conn = self._connections.get(key)
            if conn is None:
                conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ssl_context(), timeout=30)
                self._connections[key] = conn
            try:
                conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
                response = conn.getresponse()
                return response.status, response.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                conn.close()
                del self._connections[key]
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def review(self, endpoint: str, review: dict[str, Any] | bytes) -> dict[str, Any]:
        """POST an AdmissionReview and return the response object; fails the test on non-200."""
        body = review if isinstance(review, bytes) else json.dumps(review).encode()
        status, data = self.request("POST", endpoint, body)
        assert status == 200, (status, data[:500])
        return json.loads(data)["response"]

    def metrics_text(self) -> str:
        status, data = self.request("GET", "/metrics")
        assert status == 200
        return data.decode()

    def close(self) -> None:
        for conn in self._connections.values():
            conn.close()
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)


def write_config(directory: Path, certs: Any, settings: dict[str, Any]) -> str:
    tls = {"certFile": str(certs.cert), "keyFile": str(certs.key), **settings.get("tls", {})}
    document = {"port": 8443, **settings, "tls": tls}
    path = directory / "webhook-config.yaml"
    path.write_text(yaml.safe_dump(document))
    return str(path)


@pytest.fixture
def webhook_on(webhook_certs, tmp_path) -> Iterator[Any]:
    """``webhook_on(double, **settings)``: a running webhook whose config file holds ``settings``
    (keys as in docs/design.md), talking to that API double."""
    from webhook.config import load_config
    from kubectl_gpu.k8s import AsyncClient
    from webhook.server import Timings, WebhookServer

    started: list[tuple[RunningWebhook, threading.Thread]] = []

    def start(double: Any, env: dict[str, str] | None = None, timings: Timings | None = None,
              **settings: Any) -> RunningWebhook:
        config = load_config(write_config(tmp_path, webhook_certs, settings), env or {}, {})
        api = AsyncClient(double.api_client().configuration, config.api_timeout_seconds)
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, daemon=True)
        thread.start()
        server = WebhookServer(config, api, timings or Timings(tls_poll=0.2))
        asyncio.run_coroutine_threadsafe(server.start("127.0.0.1", 0), loop).result(10)
        running = RunningWebhook(server, loop, str(webhook_certs.ca_cert))
        started.append((running, thread))
        return running

    yield start
    for running, thread in started:
        running.close()
        thread.join(10)


@pytest.fixture
def start_webhook(k8s_double, webhook_on) -> Any:  # noqa: F811
    """``start_webhook(**settings)``: ``webhook_on`` talking to the session's API double."""
    return lambda **kwargs: webhook_on(k8s_double, **kwargs)


def admission_review(obj: dict[str, Any], *, operation: str = "CREATE", namespace: str = "default",
                     dry_run: bool = False, uid: str = "11111111-2222-3333-4444-555555555555",
                     sub_resource: str | None = None, old: dict[str, Any] | None = None) -> dict[str, Any]:
    """Wrap an object in the AdmissionReview the API server would send for it."""
    api_version = obj.get("apiVersion", "v1")
    group, _, version = api_version.rpartition("/")
    kind = obj.get("kind", "Pod")
    plural = kind.lower() + ("es" if kind.endswith("s") else "s")
    request: dict[str, Any] = {
        "uid": uid,
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": plural},
        "requestKind": {"group": group, "version": version, "kind": kind},
        "name": (obj.get("metadata") or {}).get("name", ""),
        "namespace": namespace,
        "operation": operation,
        "userInfo": {"username": "tester"},
        "object": obj,
        "oldObject": old,
        "dryRun": dry_run,
    }
    if sub_resource:
        request["subResource"] = sub_resource
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def fenced(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod as /mutate leaves one that keeps a device-plugin GPU: kept off DRA nodes (the
    default marker), as /validate then receives it."""
    import jsonpatch

    from webhook.fencing import DEFAULT_DRA_NODE_SELECTORS, fence_legacy_pod

    return jsonpatch.apply_patch(pod, fence_legacy_pod(pod, DEFAULT_DRA_NODE_SELECTORS))


def patch_of(response: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON Patch an AdmissionResponse carries ([] when it has none)."""
    if "patch" not in response:
        return []
    assert response["patchType"] == "JSONPatch"
    return json.loads(base64.b64decode(response["patch"]))


@contextmanager
def captured_logs() -> Iterator[io.StringIO]:
    """The webhook's logging as ``serve`` configures it, written to a string; the root logger is
    restored afterwards."""
    from webhook import logs

    stream = io.StringIO()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    logs.configure("info", stream=stream)
    try:
        yield stream
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def eventually(condition: Callable[[], bool], seconds: float = 15.0) -> None:
    """Wait for something the webhook does on its own (a watch event, a renewal): a bound against
    a hang, not a speed check."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "it did not happen"
        time.sleep(0.01)


@pytest.fixture(autouse=True)
def _reports_follow_their_schemas(monkeypatch):
    """Every `-o json|yaml` report a test prints through click's CliRunner is held to its JSON
    Schema (docs/schemas/, tests/output_schemas.py): the schemas are checked against all the suite shows."""
    from click.testing import CliRunner

    from tests.output_schemas import asked_output, check_output

    invoke = CliRunner.invoke

    def invoke_and_check(self, cli, args=None, *rest, **options):
        result = invoke(self, cli, args, *rest, **options)
        output = asked_output(args)
        if output in ("json", "yaml"):
            check_output(result.stdout, output)
        return result

    monkeypatch.setattr(CliRunner, "invoke", invoke_and_check)
