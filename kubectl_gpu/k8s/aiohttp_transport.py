"""The client's transport on an event loop: aiohttp (as kopf speaks HTTP), for the webhook, whose
requests wait on its loop, for watches, and for a socks5:// proxy-url (aiohttp-socks).

Connections are pooled per event loop: the session is opened by the first request, on the loop
that makes it, and serves every later request of that loop (keep-alive)."""

from __future__ import annotations

import asyncio
import re
from typing import Any, AsyncIterator, Sequence

import aiohttp

from kubectl_gpu.k8s.errors import ApiError, TransportFailure, TransportTimeout, root_cause
from kubectl_gpu.k8s.route import Route


class AiohttpTransport:
    blocking = False

    def __init__(self, route: Route) -> None:
        self.route = route
        self._session: aiohttp.ClientSession | None = None
        # aiohttp-socks reports a proxy it cannot reach with its own exceptions (not OSError).
        self._proxy_errors = _socks_errors() if route.socks else ()
        self._options: dict[str, Any] = {}
        if route.http_proxy:
            self._options["proxy"] = route.http_proxy
        if route.server_name:
            self._options["server_hostname"] = route.server_name

    async def send(self, method: str, url: str, params: Sequence[tuple[str, str]], data: bytes | None,
                   headers: dict[str, str], timeout: float | None) -> tuple[int, bytes]:
        try:
            async with self._open_session().request(
                    method, url, params=list(params), data=data, headers=headers,
                    timeout=aiohttp.ClientTimeout(total=timeout), **self._options) as response:
                return response.status, await response.read()
        except asyncio.TimeoutError as exc:
            raise TransportTimeout() from exc
        except (aiohttp.ClientError, OSError, ValueError, *self._proxy_errors) as exc:
            raise TransportFailure(self._why(exc)) from exc

    async def lines(self, url: str, params: Sequence[tuple[str, str]], headers: dict[str, str],
                    connect_timeout: float | None, read_timeout: float) -> AsyncIterator[bytes]:
        """The lines of a streamed answer (a watch: one JSON event each) until the server ends it."""
        limit = aiohttp.ClientTimeout(total=None, connect=connect_timeout, sock_read=read_timeout)
        try:
            async with self._open_session().get(url, params=list(params), headers=headers, timeout=limit,
                                                **self._options) as response:
                if not 200 <= response.status <= 299:
                    path = url[len(self.route.server):]
                    raise ApiError.from_response(response.status, path, await response.read(), "GET")
                # A line (a big object) may span many chunks, so only the new chunk is searched
                # for the end of a line.
                pending = bytearray()
                async for chunk in response.content.iter_any():
                    end = chunk.rfind(b"\n")
                    if end < 0:
                        pending += chunk
                        continue
                    pending += chunk[:end]
                    for line in bytes(pending).split(b"\n"):
                        if line.strip():
                            yield line
                    pending = bytearray(chunk[end + 1:])
                if bytes(pending).strip():
                    yield bytes(pending)
        except asyncio.TimeoutError as exc:
            raise TransportTimeout() from exc
        except (aiohttp.ClientError, OSError, *self._proxy_errors) as exc:
            raise TransportFailure(self._why(exc)) from exc

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    @property
    def has_connections(self) -> bool:
        return self._session is not None

    def _open_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=self._connector(),
                # The kubeconfig and proxy.py decide the proxy; aiohttp's reading of the environment must not.
                trust_env=False,
                skip_auto_headers=("User-Agent",),
                headers={"User-Agent": "kubectl-gpu"},
            )
        return self._session

    def _connector(self) -> aiohttp.BaseConnector:
        if self.route.socks:
            from aiohttp_socks import ProxyConnector  # only a socks5:// proxy-url needs it

            # rdns: the proxy resolves the server's name, as client-go's SOCKS5 dialer has it do.
            return ProxyConnector.from_url(self.route.socks, ssl=self.route.ssl, rdns=True)
        return aiohttp.TCPConnector(ssl=self.route.ssl)

    def _why(self, exc: BaseException) -> str:
        """The innermost reason, and which proxy failed when the request went through one."""
        if isinstance(exc, (aiohttp.ClientProxyConnectionError, *self._proxy_errors)):
            proxy = re.sub(r"//[^@/]*@", "//", str(self.route.socks or self.route.http_proxy))  # no credentials
            return f"cannot connect to the proxy {proxy} (proxy-url or HTTPS_PROXY): {root_cause(exc)}"
        return root_cause(exc)


def _socks_errors() -> tuple[type[Exception], ...]:
    from aiohttp_socks import ProxyConnectionError, ProxyError, ProxyTimeoutError

    return ProxyConnectionError, ProxyError, ProxyTimeoutError
