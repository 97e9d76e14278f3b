"""The one Kubernetes client: raw JSON, async first, with a synchronous face.

`AsyncClient` does every call the webhook and the CLI make.  Like kr8s (`_api.py`,
`_async_utils.py`) the synchronous `Client` the CLI uses is derived from it method by method, so
there is one implementation of requests, errors and pagination.  What carries the bytes is a
transport: aiohttp on an event loop (aiohttp_transport.py; as kopf speaks HTTP, so the webhook's
loop never waits on a thread, and for watches and SOCKS proxies), or for the CLI the standard
library's http.client (blocking_transport.py), which needs no event loop and no aiohttp (~0.25 s
to import): a coroutine of the client that never suspends is run to its end in the calling
thread (`_complete`).

Connection settings (server, TLS, credentials, proxy) come from a `ClusterAccess` (access.py), as
kubeconfig.py reads it the way client-go does (exec plugins and token refresh included); a
`kubernetes.client.Configuration` (the API double's clients in tests) is read into one.

Objects come back as plain dicts (the API's own JSON), never as generated models: the webhook must
speak whichever resource.k8s.io version it is configured for and compare objects field by field,
generated models would drop fields they do not know, and building models for 10,000 pods costs
seconds.
"""

from __future__ import annotations

import functools
import json
import os
import threading
import weakref
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable, Coroutine, Generator, Sequence, TypeVar

from kubectl_gpu.json_codec import decode_api_json
from kubectl_gpu.k8s.access import ClusterAccess, from_kubernetes_configuration
from kubectl_gpu.k8s.errors import ApiError, TransportFailure, TransportTimeout
from kubectl_gpu.k8s.timeouts import REQUEST_TIMEOUT_SECONDS
from kubectl_gpu.k8s.lists import DEFAULT_PAGE_SIZE, EachPage, read_all_pages, unmentioned_page
from kubectl_gpu.k8s.paths import Resource
from kubectl_gpu.k8s.route import Route

if TYPE_CHECKING:
    import asyncio

T = TypeVar("T")


class AsyncClient:
    """JSON requests to one API server; every failure is an `ApiError` (see errors.py).

    `transport` carries the bytes (see the module's docstring); by default aiohttp, whose session
    is opened by the first request on the event loop that makes it.
    """

    def __init__(self, configuration: ClusterAccess | Any,
                 timeout: float | None = REQUEST_TIMEOUT_SECONDS, *, transport: Any = None) -> None:
        # `timeout` bounds each request (seconds; None: no limit, as kubectl's --request-timeout 0)
        if not isinstance(configuration, ClusterAccess):
            configuration = from_kubernetes_configuration(configuration)
        self.configuration: ClusterAccess = configuration
        self.timeout = timeout
        if transport is None:
            from kubectl_gpu.k8s.aiohttp_transport import AiohttpTransport

            transport = AiohttpTransport(Route.of(configuration))
        self.transport = transport
        self._host = transport.route.server

    # ------------------------------------------------------------------ raw requests

    async def request(self, method: str, path: str, *, body: Any = None,
                      query: Sequence[tuple[str, Any]] = (),
                      content_type: str = "application/json",
                      timeout: float | None = None, mentioning: Sequence[bytes] = ()) -> dict[str, Any]:
        """Send one request (`path` like /api/v1/nodes) and return its decoded JSON object.

        `mentioning` (a list's page): when the answer's bytes hold none of these texts, its items
        are not decoded, only the list's metadata (lists.py, `unmentioned_page`)."""
        headers = {"Accept": "application/json", **self._auth_headers()}
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = json.dumps(body, separators=(",", ":")).encode()
        status, raw = await self._send(method, path, query, data, headers, self.timeout if timeout is None else timeout)
        if not 200 <= status <= 299:
            raise ApiError.from_response(status, path, raw or b"", method)
        if not raw:
            return {}
        if mentioning:
            page = unmentioned_page(raw, mentioning)
            if page is not None:
                return page
        try:
            doc = decode_api_json(raw)
        except ValueError as exc:
            raise ApiError(status, path, f"the response is not JSON: {exc}", method=method) from exc
        if not isinstance(doc, dict):
            raise ApiError(status, path, "the response is not a JSON object", method=method)
        return doc

    async def _send(self, method: str, path: str, query: Sequence[tuple[str, Any]], data: bytes | None,
                    headers: dict[str, str], seconds: float | None) -> tuple[int, bytes]:
        try:
            return await self.transport.send(method, self._host + path, [(k, str(v)) for k, v in query], data,
                                             headers, seconds)
        except TransportTimeout as exc:
            raise ApiError.from_status(
                0, path, f"the API server {self._host} did not answer {method} {path} within "
                f"{seconds:g}s (--request-timeout); check that it is up and reachable, or raise "
                "--request-timeout", method=method) from exc
        except TransportFailure as exc:
            raise ApiError.from_status(
                0, path, f"cannot reach the API server {self._host} ({method} {path}): {exc}",
                method=method) from exc

    async def get_json(self, path: str, query: Sequence[tuple[str, Any]] = (), *,
                       mentioning: Sequence[bytes] = ()) -> dict[str, Any]:
        return await self.request("GET", path, query=query, mentioning=mentioning)

    async def get_text(self, path: str) -> str:
        """GET a text resource, e.g. pods/NAME/log (what `kubectl logs` reads)."""
        headers = {"Accept": "text/plain, */*", **self._auth_headers()}
        status, raw = await self._send("GET", path, (), None, headers, self.timeout)
        if not 200 <= status <= 299:
            raise ApiError.from_response(status, path, raw or b"", "GET")
        return raw.decode("utf-8", "replace")

    async def get_object(self, path: str) -> dict[str, Any] | None:
        """GET one object; None when it does not exist."""
        try:
            return await self.request("GET", path)
        except ApiError as exc:
            if exc.not_found:
                return None
            raise

    async def list_objects(self, path: str, *, label_selector: str | None = None,
                           field_selector: str | None = None,
                           page_size: int = DEFAULT_PAGE_SIZE,
                           mentioning: Sequence[bytes] = (),
                           each_page: EachPage | None = None) -> list[dict[str, Any]]:
        """Every item of the collection at `path`, page by page (see lists.py), each page asked
        for while the one before it is read; with `mentioning`, only the items of pages whose JSON
        holds one of those texts; `each_page` is handed each page's items as they come."""
        get_json = functools.partial(self.get_json, mentioning=mentioning) if mentioning else self.get_json
        return await read_all_pages(get_json, path, label_selector=label_selector, field_selector=field_selector,
                                    page_size=page_size, begin=self._begin, each_page=each_page)

    def _begin(self, request: Coroutine[Any, Any, T]) -> Awaitable[T]:
        """`request` begun now, to be awaited later: on a thread of its own over the blocking
        transport (whose requests never suspend), else as a task on the running loop."""
        if getattr(self.transport, "blocking", False):
            return _OnItsOwnThread(request)
        import asyncio

        return asyncio.ensure_future(request)

    async def reachable(self) -> bool:
        """True when the API server answers (any answer short of a server error)."""
        try:
            await self.request("GET", "/version")
        except ApiError as exc:
            return not exc.unreachable and exc.status < 500
        return True

    # ------------------------------------------------------------------ by resource

    async def get(self, resource: Resource, namespace: str | None, name: str) -> dict[str, Any]:
        return await self.request("GET", resource.path(namespace, name))

    async def create(self, resource: Resource, namespace: str | None,
                     obj: dict[str, Any]) -> dict[str, Any]:
        return await self.request("POST", resource.path(namespace), body=obj)

    async def merge_patch(self, resource: Resource, namespace: str | None, name: str,
                          patch: dict[str, Any]) -> dict[str, Any]:
        return await self.request("PATCH", resource.path(namespace, name), body=patch,
                                  content_type="application/merge-patch+json")

    async def delete(self, resource: Resource, namespace: str | None, name: str,
                     resource_version: str | None = None) -> None:
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if resource_version:
            # Delete only the version that was checked: a concurrent change turns the delete
            # into a 409 instead of a lost object.
            body["preconditions"] = {"resourceVersion": resource_version}
        await self.request("DELETE", resource.path(namespace, name), body=body)

    async def list(self, resource: Resource, namespace: str | None = None,
                   label_selector: str | None = None,
                   page_size: int = DEFAULT_PAGE_SIZE) -> list[dict[str, Any]]:
        return await self.list_objects(resource.path(namespace), label_selector=label_selector,
                                       page_size=page_size)

    async def watch(self, path: str, *, resource_version: str = "",
                    label_selector: str | None = None, field_selector: str | None = None,
                    timeout_seconds: int = 300, bookmarks: bool = True
                    ) -> AsyncIterator[dict[str, Any]]:
        """One watch of the collection at `path` from `resource_version`: its events
        (`{"type": ADDED|MODIFIED|DELETED|BOOKMARK, "object": {...}}`) until the server ends it.

        An `ERROR` event raises its Status as an `ApiError`: 410 `Expired` ("too old resource
        version") means the history is compacted and the caller must list again (the Kubernetes
        API concepts page, "Efficient detection of changes").  Keeping a watch going across
        timeouts, bookmarks and 410s is `kubectl_gpu.k8s.watch.Informer`'s job.
        """
        query: list[tuple[str, str]] = [("watch", "1"), ("timeoutSeconds", str(timeout_seconds))]
        if resource_version:
            query.append(("resourceVersion", resource_version))
        if bookmarks:
            query.append(("allowWatchBookmarks", "true"))
        if label_selector:
            query.append(("labelSelector", label_selector))
        if field_selector:
            query.append(("fieldSelector", field_selector))
        headers = {"Accept": "application/json", **self._auth_headers()}
        # No total limit (the server ends the watch); a stream silent for longer than its own
        # timeout plus one request timeout is a dead connection.
        try:
            async for line in self.transport.lines(self._host + path, query, headers, self.timeout,
                                                   timeout_seconds + (self.timeout or 30)):
                yield _watch_event(path, line)
        except TransportTimeout as exc:
            raise ApiError.from_status(
                0, path, f"the watch of {path} on {self._host} went silent", method="GET") from exc
        except TransportFailure as exc:
            raise ApiError.from_status(
                0, path, f"the watch of {path} on {self._host} broke: {exc}", method="GET") from exc

    # ------------------------------------------------------------------ lifecycle

    async def close(self) -> None:
        await self.transport.close()

    def _auth_headers(self) -> dict[str, str]:
        # Asked per request, so an exec plugin's expired token or a rotated token file is renewed.
        return self.configuration.auth_headers()


def _watch_event(path: str, line: bytes) -> dict[str, Any]:
    try:
        event = json.loads(line)
    except ValueError as exc:
        raise ApiError(200, path, f"a watch event is not JSON: {exc}") from exc
    if not isinstance(event, dict) or not isinstance(event.get("object"), dict):
        raise ApiError(200, path, "a watch event has no object")
    if event.get("type") == "ERROR":
        status = event["object"]
        raise ApiError.from_status(int(status.get("code") or 500), path,
                                   str(status.get("message") or "the watch failed"),
                                   str(status.get("reason") or ""))
    return event


# ---------------------------------------------------------------------- the synchronous face


class _Portal:
    """One event loop on a daemon thread, shared by every synchronous client of the process whose
    transport needs one (aiohttp: a socks5:// proxy)."""

    _lock = threading.Lock()
    _loop: "asyncio.AbstractEventLoop | None" = None
    _thread: threading.Thread | None = None
    _pid = 0

    @classmethod
    def loop(cls) -> "asyncio.AbstractEventLoop":
        import asyncio

        with cls._lock:
            # A forked child (pytest-xdist, multiprocessing) inherits the loop but not its thread.
            if cls._loop is None or cls._pid != os.getpid():
                loop = asyncio.new_event_loop()
                cls._thread = threading.Thread(target=loop.run_forever, name="kubectl-gpu-client",
                                               daemon=True)
                cls._thread.start()
                cls._loop, cls._pid = loop, os.getpid()
            return cls._loop

    @classmethod
    def close_soon(cls, client: AsyncClient) -> None:
        """Close `client`'s connections on the portal; wait for it unless called from the portal
        itself (a garbage collection there), so a process never ends with unclosed sessions."""
        import asyncio

        loop = cls._loop
        if loop is None or cls._pid != os.getpid() or loop.is_closed() or not client.transport.has_connections:
            return
        future = asyncio.run_coroutine_threadsafe(client.close(), loop)
        if threading.current_thread() is not cls._thread:
            try:
                future.result(5)
            except Exception:  # noqa: BLE001 - closing is best effort: the process is ending
                pass


def run_sync(awaitable: Awaitable[T]) -> T:
    """Run a coroutine on the portal's loop and wait for its result (safe from any thread)."""
    import asyncio

    future = asyncio.run_coroutine_threadsafe(_wrap(awaitable), _Portal.loop())
    try:
        return future.result()
    except BaseException:
        future.cancel()
        raise


async def _wrap(awaitable: Awaitable[T]) -> T:
    return await awaitable


def _complete(coroutine: Coroutine[Any, Any, T]) -> T:
    """The result of a coroutine that never suspends (the client's methods over the blocking
    transport), run in this thread without an event loop."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("a request over the blocking transport waited for an event loop")


class _OnItsOwnThread:
    """A coroutine that never suspends (a request over the blocking transport), run to its end on
    a thread of its own from the moment it is made; awaiting it waits for that thread, without an
    event loop (so `_complete` can run the coroutine that awaits it)."""

    def __init__(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        self._done = threading.Event()
        self._value: Any = None
        self._error: BaseException | None = None
        threading.Thread(target=self._run, args=(coroutine,), name="kubectl-gpu-page", daemon=True).start()

    def _run(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        try:
            self._value = _complete(coroutine)
        except BaseException as exc:  # noqa: BLE001 - raised where it is awaited
            self._error = exc
        finally:
            self._done.set()

    def abandon(self) -> None:
        """Nobody will await it (an error or Ctrl-C before its page was read): it ends on its own."""

    def __await__(self) -> Generator[Any, None, Any]:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value
        yield  # a generator that never suspends: awaiting it only waits for the thread


def _sync(method: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., T]:
    @functools.wraps(method)
    def call(self: "Client", *args: Any, **kwargs: Any) -> T:
        coroutine = method(self.aio, *args, **kwargs)
        return _complete(coroutine) if self.blocking else run_sync(coroutine)
    return call


class Client:
    """The synchronous face of `AsyncClient`: the same methods, same arguments, same errors; over
    the standard library's blocking transport, or aiohttp on the portal's loop where only it can
    go (a socks5:// proxy)."""

    def __init__(self, configuration: ClusterAccess | Any,
                 timeout: float | None = REQUEST_TIMEOUT_SECONDS) -> None:
        if not isinstance(configuration, ClusterAccess):
            configuration = from_kubernetes_configuration(configuration)
        route = Route.of(configuration)
        transport: Any = None
        if not route.socks:
            from kubectl_gpu.k8s.blocking_transport import BlockingTransport

            transport = BlockingTransport(route)
        self.aio = AsyncClient(configuration, timeout, transport=transport)
        self.blocking = transport is not None
        # A client dropped or alive at exit closes its connections (weakref.finalize runs at exit).
        if self.blocking:
            weakref.finalize(self, transport.close_all)
        else:
            weakref.finalize(self, _Portal.close_soon, self.aio)

    @property
    def configuration(self) -> ClusterAccess:
        return self.aio.configuration

    @property
    def timeout(self) -> float | None:
        return self.aio.timeout

    request = _sync(AsyncClient.request)
    get_json = _sync(AsyncClient.get_json)
    get_text = _sync(AsyncClient.get_text)
    get_object = _sync(AsyncClient.get_object)
    list_objects = _sync(AsyncClient.list_objects)
    reachable = _sync(AsyncClient.reachable)
    get = _sync(AsyncClient.get)
    create = _sync(AsyncClient.create)
    merge_patch = _sync(AsyncClient.merge_patch)
    delete = _sync(AsyncClient.delete)
    list = _sync(AsyncClient.list)
    close = _sync(AsyncClient.close)
