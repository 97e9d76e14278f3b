"""The CLI's transport (kubectl_gpu/k8s/blocking_transport.py), where the API double cannot show it:
gzip answers (client-go asks for them), the request timeout over the whole exchange (Go's
http.Client.Timeout: "includes connection time, any redirects, and reading the response body"),
a kept-alive connection the server closed, and a proxy's credentials (Proxy-Authorization on
CONNECT, as Go's http.Transport sends the proxy URL's user:password)."""

from __future__ import annotations

import gzip
import http.server
import json
import socket
import threading
import time
from typing import Any, Callable

import pytest

from kubectl_gpu.k8s import ApiError, Client
from kubectl_gpu.k8s.access import BearerToken, ClusterAccess


class _Server:
    """A local HTTP/1.1 server whose handler is a function of the request; records what it saw."""

    def __init__(self, respond: Callable[[http.server.BaseHTTPRequestHandler], None]) -> None:
        self.seen: list[dict[str, Any]] = []
        seen = self.seen

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                seen.append({"path": self.path, "headers": dict(self.headers)})
                respond(self)

            do_CONNECT = do_GET  # noqa: N815

            def log_message(self, *_: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _head(handler: http.server.BaseHTTPRequestHandler, status: int, length: int, **headers: str) -> None:
    """An answer's status line and headers, saying `length` bytes of body follow."""
    handler.send_response(status)
    handler.send_header("Content-Length", str(length))
    for name, value in headers.items():
        handler.send_header(name.replace("_", "-"), value)
    handler.end_headers()


def _json(handler: http.server.BaseHTTPRequestHandler, body: bytes, **headers: str) -> None:
    _head(handler, 200, len(body), Content_Type="application/json", **headers)
    handler.wfile.write(body)


def client(url: str, timeout: float = 5, proxy: str | None = None) -> Client:
    return Client(ClusterAccess(url, proxy=proxy, credentials=BearerToken("t")), timeout)


def test_a_gzip_answer_is_decoded_and_gzip_is_asked_for():
    def respond(handler: http.server.BaseHTTPRequestHandler) -> None:
        _json(handler, gzip.compress(json.dumps({"kind": "Status", "n": 1}).encode()), Content_Encoding="gzip")

    server = _Server(respond)
    try:
        assert client(server.url).get_json("/version") == {"kind": "Status", "n": 1}
        assert server.seen[0]["headers"]["Accept-Encoding"] == "gzip"
        assert server.seen[0]["headers"]["Authorization"] == "Bearer t"
    finally:
        server.close()


def test_an_answer_that_trickles_past_the_request_timeout_is_a_timeout():
    def respond(handler: http.server.BaseHTTPRequestHandler) -> None:
        _head(handler, 200, 100)
        for _ in range(20):  # a byte every 0.1 s: never silent for a whole second, done after 2 s
            handler.wfile.write(b" ")
            handler.wfile.flush()
            time.sleep(0.1)

    server = _Server(respond)
    started = time.monotonic()
    try:
        with pytest.raises(ApiError) as late:
            client(server.url, timeout=1).get_json("/api/v1/pods")
        assert late.value.status == 0 and "did not answer GET /api/v1/pods within 1s" in str(late.value)
        assert time.monotonic() - started < 1.9
    finally:
        server.close()


def test_a_kept_alive_connection_the_server_closed_is_replaced_once():
    answers = iter([b'{"n": 1}', b'{"n": 2}'])

    def respond(handler: http.server.BaseHTTPRequestHandler) -> None:
        _json(handler, next(answers))
        handler.close_connection = True  # closed after answering, without saying so

    server = _Server(respond)
    try:
        api = client(server.url)
        assert api.get_json("/a") == {"n": 1}
        time.sleep(0.05)
        assert api.get_json("/b") == {"n": 2}
        assert [seen["path"] for seen in server.seen] == ["/a", "/b"]
    finally:
        server.close()


def test_a_proxy_url_with_credentials_sends_them_on_connect():
    def refuse(handler: http.server.BaseHTTPRequestHandler) -> None:
        _head(handler, 407, 0)

    proxy = _Server(refuse)
    try:
        port = proxy.server.server_address[1]
        with pytest.raises(ApiError) as refused:
            client("https://kube-api.internal:6443", proxy=f"http://ada:s%40me@127.0.0.1:{port}").get_json("/version")
        assert refused.value.status == 0 and "proxy" in str(refused.value)
        [connect] = proxy.seen
        assert connect["path"] == "kube-api.internal:6443"
        assert connect["headers"]["Proxy-Authorization"] == "Basic YWRhOnNAbWU="  # ada:s@me
    finally:
        proxy.close()


def test_a_server_that_refuses_connections_is_unreachable():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ApiError) as down:
        client(f"http://127.0.0.1:{port}").get_json("/version")
    assert down.value.status == 0 and f"cannot reach the API server http://127.0.0.1:{port} (GET /version)" \
        in str(down.value)
