"""The client's transport for the CLI: the standard library's http.client, one keep-alive
connection per thread, no event loop.

The CLI waits for every answer anyway, and aiohttp with asyncio costs ~0.25 s to import, a
fifth of a `describe` of 1,000 nodes.  A request here blocks its thread (describe's lists run on
four, and each asks for its next page on another while it reads one), but its `send` is a
coroutine like the aiohttp transport's, so the one client's methods (client.py) run unchanged on
it: a coroutine that never suspends is run to its end without a loop (`client._complete`).
Kept-alive connections wait in an idle pool for the next request, whichever thread sends it, as
Go's http.Transport keeps them.

What kubectl does on the way, done here too: the kubeconfig's proxy-url (else HTTPS_PROXY/
HTTP_PROXY and NO_PROXY, proxy.py) with CONNECT for https servers and the proxy's own user:password
as Proxy-Authorization; TLS checked against tls-server-name; gzip answers (client-go asks for
them unless disable-compression).  A socks5:// proxy-url takes the aiohttp transport.  The request
timeout bounds the whole exchange, connection to last byte."""

from __future__ import annotations

import base64
import http.client
import socket
import ssl
import threading
import time
import zlib
from typing import Sequence
from urllib.parse import quote, unquote, urlencode, urlsplit

from kubectl_gpu.k8s.errors import TransportFailure, TransportTimeout, root_cause
from kubectl_gpu.k8s.route import Route

_CHUNK = 1 << 18
# Failures of a kept-alive connection the server closed meanwhile: the request is sent again once
# on a new connection, as Go's http.Transport does for a request that never reached the server.
_STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError, http.client.CannotSendRequest)


class BlockingTransport:
    blocking = True

    def __init__(self, route: Route) -> None:
        if route.socks:
            raise ValueError("a socks5:// proxy needs the aiohttp transport")
        self.route = route
        parts = urlsplit(route.server)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port or (443 if self._https else 80)
        self._netloc = parts.netloc.rpartition("@")[2]  # the Host header
        self._base_path = parts.path.rstrip("/")
        self._context = self._tls_context() if self._https else None
        proxy = urlsplit(route.http_proxy) if route.http_proxy else None
        self._proxy = proxy
        self._proxy_headers = {}
        if proxy is not None and proxy.username is not None:
            pair = f"{unquote(proxy.username)}:{unquote(proxy.password or '')}"
            self._proxy_headers["Proxy-Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        self._lock = threading.Lock()
        self._connections: list[http.client.HTTPConnection] = []  # every open one, to close at the end
        self._idle: list[http.client.HTTPConnection] = []  # kept alive, waiting for a request

    async def send(self, method: str, url: str, params: Sequence[tuple[str, str]], data: bytes | None,
                   headers: dict[str, str], timeout: float | None) -> tuple[int, bytes]:
        deadline = None if timeout is None else time.monotonic() + timeout
        target = self._target(url, params)
        for attempt in (1, 2):
            connection, reused = self._connection(deadline)
            try:
                answer = self._exchange(connection, method, target, data, headers, deadline)
            except socket.timeout as exc:
                self._drop(connection)
                raise TransportTimeout() from exc
            except _STALE as exc:
                self._drop(connection)
                if reused and attempt == 1:
                    continue
                raise TransportFailure(self._why(exc)) from exc
            except (OSError, http.client.HTTPException, ValueError) as exc:
                self._drop(connection)
                raise TransportFailure(self._why(exc)) from exc
            if connection.sock is not None:  # not closed by the server's `Connection: close`
                with self._lock:
                    self._idle.append(connection)
            return answer
        raise AssertionError("unreachable")

    async def close(self) -> None:
        self.close_all()

    def close_all(self) -> None:
        with self._lock:
            connections, self._connections, self._idle = self._connections, [], []
        for connection in connections:
            connection.close()

    @property
    def has_connections(self) -> bool:
        return bool(self._connections)

    # ------------------------------------------------------------------ one exchange

    def _exchange(self, connection: http.client.HTTPConnection, method: str, target: str, data: bytes | None,
                  headers: dict[str, str], deadline: float | None) -> tuple[int, bytes]:
        if connection.sock is None:
            connection.timeout = _remaining(deadline)
            connection.connect()
        sock = connection.sock
        sock.settimeout(_remaining(deadline))
        connection.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        connection.putheader("Host", self._netloc)
        connection.putheader("User-Agent", "kubectl-gpu")
        connection.putheader("Accept-Encoding", "gzip")
        for name, value in headers.items():
            connection.putheader(name, value)
        if self._proxy is not None and not self._https:  # no tunnel: the proxy reads every request
            for name, value in self._proxy_headers.items():
                connection.putheader(name, value)
        if data is not None:
            connection.putheader("Content-Length", str(len(data)))
        connection.endheaders(data)
        response = connection.getresponse()
        chunks = []
        while True:
            sock.settimeout(_remaining(deadline))
            chunk = response.read1(_CHUNK)  # one receive at most: the deadline is checked between them
            if not chunk:
                break
            chunks.append(chunk)
        response.close()  # the whole body is read: the connection takes the next request
        body = b"".join(chunks)
        if response.getheader("Content-Encoding", "").lower() == "gzip":
            body = zlib.decompress(body, 16 + zlib.MAX_WBITS)
        if response.will_close:
            self._drop(connection)
        return response.status, body

    def _target(self, url: str, params: Sequence[tuple[str, str]]) -> str:
        path = url[len(self.route.server):] if url.startswith(self.route.server) else url
        query = urlencode(list(params), quote_via=quote) if params else ""
        target = self._base_path + path + (f"?{query}" if query else "")
        if self._proxy is not None and not self._https:
            return f"http://{self._netloc}{target}"  # a plain-http server through a proxy: the whole URL
        return target

    # ------------------------------------------------------------------ connections

    def _connection(self, deadline: float | None) -> tuple[http.client.HTTPConnection, bool]:
        """An idle kept-alive connection (True), else a new one (False)."""
        with self._lock:
            if self._idle:
                return self._idle.pop(), True
        connection = self._new_connection(_remaining(deadline))
        with self._lock:
            self._connections.append(connection)
        return connection, False

    def _new_connection(self, timeout: float | None) -> http.client.HTTPConnection:
        proxy = self._proxy
        if proxy is None:
            if self._https:
                return _Https(self._host, self._port, timeout, self._context, self.route.server_name)
            return http.client.HTTPConnection(self._host, self._port, timeout=timeout)
        proxy_port = proxy.port or (443 if proxy.scheme == "https" else 80)
        if not self._https:
            return http.client.HTTPConnection(proxy.hostname or "", proxy_port, timeout=timeout)
        connection = _Https(proxy.hostname or "", proxy_port, timeout, self._context, self.route.server_name)
        connection.set_tunnel(self._host, self._port, headers=self._proxy_headers or None)
        return connection

    def _drop(self, connection: http.client.HTTPConnection) -> None:
        connection.close()
        with self._lock:
            if connection in self._connections:
                self._connections.remove(connection)

    def _tls_context(self) -> ssl.SSLContext:
        if self.route.ssl is not False:
            return self.route.ssl  # type: ignore[return-value]
        # insecure-skip-tls-verify: TLS without checking the certificate, as kubectl does.
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context

    def _why(self, exc: BaseException) -> str:
        reason = root_cause(exc)
        if self._proxy is not None and _at_the_proxy(exc):
            proxy = f"{self._proxy.scheme}://{self._proxy.hostname}:{self._proxy.port or ''}".rstrip(":")
            return f"cannot connect to the proxy {proxy} (proxy-url or HTTPS_PROXY): {reason}"
        return reason


class _Https(http.client.HTTPSConnection):
    """TLS whose certificate check names tls-server-name when the kubeconfig gives one (client-go's
    TLSClientConfig.ServerName), else the server's host, also through a CONNECT tunnel."""

    def __init__(self, host: str, port: int, timeout: float | None, context: ssl.SSLContext,
                 server_name: str | None) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self._server_name = server_name

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)  # TCP, and the proxy's CONNECT tunnel when set
        name = self._server_name or self._tunnel_host or self.host
        self.sock = self._context.wrap_socket(self.sock, server_hostname=name)


def _remaining(deadline: float | None) -> float | None:
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise socket.timeout("the request's time ran out")
    return left


def _at_the_proxy(exc: BaseException) -> bool:
    # http.client words a refused CONNECT as "Tunnel connection failed: 403 ..."; a proxy that is
    # down refuses the TCP connection itself (before any tunnel).
    return isinstance(exc, (ConnectionRefusedError, socket.gaierror)) or "Tunnel connection failed" in str(exc)
