"""The HTTPS transport's limits: what a client that reaches the port can make the server hold.

Go's ``http.Server`` bounds a connection with ``ReadHeaderTimeout``, ``ReadTimeout`` and
``IdleTimeout`` (Gatekeeper and controller-runtime webhooks rely on them); aiohttp has none of
these, and each TLS connection held by asyncio costs a 256 KiB read buffer (``asyncio.sslproto``'s
``SSLProtocol.max_size``).  Here every connection is accounted for from the moment it is
accepted, before any TLS memory is spent on it:

* at most ``max_connections`` are open; a new one beyond that displaces the connection that has
  waited longest without a request in progress (an API server's idle keep-alive connection only
  costs it a reconnect), and is refused, closed before the TLS handshake, when every connection
  is answering a review;
* the TLS handshake, a request's headers (from its first byte, or from the handshake for the
  first request), its body and the idle time between requests each have a deadline; a connection
  past one is cut (an idle one closed, the others aborted: a stalling client gets no more of the
  server's time);
* request bodies are buffered only within a budget of bytes (a review is held until answered, and
  deciding on it costs a multiple of its size): a body that does not fit waits until its body
  deadline, then gets a retryable 503;
* the TLS read buffer is ``READ_BUFFER_BYTES`` (two TLS records), not 256 KiB;
* when many connections have closed, freed heap is handed back to the system (``malloc_trim``),
  so the memory a burst took does not stay counted against the pod's limit.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import enum
import logging
import ssl
from asyncio import sslproto
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from aiohttp import web

log = logging.getLogger("webhook.transport")

# Read size of one TLS connection: a TLS record is at most 16 KiB plus its header, so two fit.
READ_BUFFER_BYTES = 32 * 1024
# How often deadlines are checked: a deadline is kept to within this much.
SWEEP_SECONDS = 0.25
# Freed heap is handed back after this many connections closed, or after a body at least this
# large was answered, once nothing large is being read or decided, at most every TRIM_SECONDS.
TRIM_AFTER_CLOSED = 64
TRIM_AFTER_BODY_BYTES = 1024 * 1024
TRIM_SECONDS = 5.0


@dataclass(frozen=True)
class TransportLimits:
    """The ``transport`` settings (docs/webhook.md "Transport limits")."""

    max_connections: int = 512
    handshake_timeout: float = 5.0
    header_timeout: float = 10.0
    body_timeout: float = 10.0
    idle_timeout: float = 60.0
    # Two of the largest reviews (webhook/review.py MAX_BODY_BYTES) at once; deciding on one costs
    # several times its size (scripts/bench_webhook_abuse.py measures it).
    body_bytes_in_flight: int = 14 * 1024 * 1024


class Phase(enum.Enum):
    HANDSHAKE = "handshake"
    HEADERS = "headers"  # waiting for a request's headers (the first request: from the handshake)
    BODY = "body"  # a handler is reading the request body
    ANSWERING = "answering"  # the body is read; the review is being decided
    IDLE = "idle"  # keep-alive, between requests


class BodyRefused(Exception):
    """The request body was not read; ``status`` and the message say why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class _ByteBudget:
    """Bytes of request bodies held at once; a reservation waits for room up to a deadline."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.used = 0
        self._freed = asyncio.Condition()

    async def reserve(self, amount: int, timeout: float) -> bool:
        amount = min(amount, self.total)  # one body alone always fits
        async with self._freed:
            try:
                await asyncio.wait_for(self._freed.wait_for(lambda: self.used + amount <= self.total), timeout)
            except asyncio.TimeoutError:
                return False
            self.used += amount
            return True

    async def release(self, amount: int) -> None:
        amount = min(amount, self.total)
        async with self._freed:
            self.used -= amount
            self._freed.notify_all()


class _Connection(asyncio.Protocol):
    """The application side of one TLS connection: forwards to aiohttp's request handler and
    keeps the connection's phase and deadline."""

    def __init__(self, guard: "ConnectionGuard") -> None:
        self.guard = guard
        self.inner: Any = None  # aiohttp's RequestHandler, made once TLS is up
        self.raw: asyncio.Transport | None = None  # the TCP transport, to abort
        self.app: asyncio.Transport | None = None  # the TLS transport, to close cleanly
        self.phase = Phase.HANDSHAKE
        self.since = guard.now()
        self.deadline = self.since + guard.limits.handshake_timeout
        self.reserved = 0

    def enter(self, phase: Phase, timeout: float | None) -> None:
        self.phase = phase
        self.since = self.guard.now()
        self.deadline = None if timeout is None else self.since + timeout

    # asyncio.Protocol, called by the TLS layer
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if not self.guard.peer_allowed(transport):
            self.guard.on_closed("certificate")
            transport.abort()  # type: ignore[attr-defined]
            return
        self.app = transport  # type: ignore[assignment]
        self.enter(Phase.HEADERS, self.guard.limits.header_timeout)
        self.inner = self.guard.handler_factory()
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self.phase is Phase.IDLE:
            # Go's ReadHeaderTimeout: the headers are due this long after their first byte.
            self.enter(Phase.HEADERS, self.guard.limits.header_timeout)
        if self.inner is not None:
            self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received() if self.inner is not None else None

    def connection_lost(self, exc: Exception | None) -> None:
        if self.inner is not None:
            self.inner.connection_lost(exc)
            self.inner = None

    def pause_writing(self) -> None:
        if self.inner is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.inner is not None:
            self.inner.resume_writing()

    def expire(self) -> None:
        if self.raw is None or self.raw.is_closing():
            return
        log.debug("connection deadline passed", extra={"phase": self.phase.value})
        self.guard.on_closed(self.phase.value)
        self.raw.abort()


class _TLSConnection(sslproto.SSLProtocol):
    """asyncio's TLS protocol with a smaller read buffer, counted by the guard from accept to
    close (also when the handshake fails, which the application side never hears of)."""

    max_size = READ_BUFFER_BYTES

    def __init__(self, guard: "ConnectionGuard", context: ssl.SSLContext) -> None:
        self.conn = _Connection(guard)
        waiter = asyncio.get_running_loop().create_future()
        waiter.add_done_callback(_retrieve)
        super().__init__(asyncio.get_running_loop(), self.conn, context, waiter, server_side=True,
                         # asyncio's own timers only back up the guard's sweep, which counts the cut.
                         ssl_handshake_timeout=2 * guard.limits.handshake_timeout,
                         ssl_shutdown_timeout=guard.limits.handshake_timeout)
        self.admitted = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if not self.conn.guard.admit(self.conn):
            transport.abort()  # type: ignore[attr-defined]  # refused before any TLS is spoken
            return
        self.admitted = True
        self.conn.raw = transport  # type: ignore[assignment]
        super().connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.admitted:
            return
        self.conn.guard.forget(self.conn)
        super().connection_lost(exc)


def _retrieve(waiter: asyncio.Future[Any]) -> None:
    # A failed handshake (a port scan, a client without the required certificate) is the
    # client's problem; asyncio logs it at debug level.
    if not waiter.cancelled():
        waiter.exception()


class ConnectionGuard:
    """Counts, times and cuts the connections of one listening socket."""

    def __init__(self, limits: TransportLimits, context: ssl.SSLContext,
                 handler_factory: Callable[[], Any],
                 peer_allowed: Callable[[asyncio.BaseTransport], bool] = lambda transport: True,
                 on_closed: Callable[[str], None] = lambda reason: None) -> None:
        self.limits = limits
        self.context = context
        self.handler_factory = handler_factory
        self.peer_allowed = peer_allowed
        # Why the server ended a connection: "refused", "displaced", "certificate" (a common name
        # not allowed), or the phase whose deadline passed.
        self.on_closed = on_closed
        self.open: dict[_Connection, None] = {}  # insertion-ordered: oldest first
        self.budget = _ByteBudget(limits.body_bytes_in_flight)
        self._closed_since_trim = 0
        self._large_since_trim = 0
        self._trimmed_at = 0.0
        self._sweeper: asyncio.Task[None] | None = None
        self._loop = asyncio.get_running_loop()

    def now(self) -> float:
        return self._loop.time()

    # --- accept and close ------------------------------------------------------------------

    def protocol(self) -> _TLSConnection:
        """The protocol factory for ``loop.create_server``."""
        return _TLSConnection(self, self.context)

    def admit(self, conn: _Connection) -> bool:
        if len(self.open) >= self.limits.max_connections:
            waiting = [c for c in self.open if c.phase not in (Phase.BODY, Phase.ANSWERING)]
            if not waiting:
                self.on_closed("refused")
                return False
            oldest = min(waiting, key=lambda c: c.since)
            self.on_closed("displaced")
            self.forget(oldest)
            if oldest.raw is not None:
                oldest.raw.abort()
        self.open[conn] = None
        return True

    def forget(self, conn: _Connection) -> None:
        if conn in self.open:
            del self.open[conn]
            self._closed_since_trim += 1

    # --- deadlines -------------------------------------------------------------------------

    def start(self) -> None:
        self._sweeper = asyncio.create_task(self._sweep())

    async def stop(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            try:
                await self._sweeper
            except asyncio.CancelledError:
                pass

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(SWEEP_SECONDS)
            now = self.now()
            for conn in [c for c in self.open if c.deadline is not None and c.deadline <= now]:
                if conn.phase is Phase.IDLE and conn.app is not None and not conn.app.is_closing():
                    conn.deadline = now + self.limits.handshake_timeout  # then aborted if it lingers
                    conn.app.close()  # a keep-alive connection ends with close_notify
                else:
                    conn.expire()
            if ((self._closed_since_trim >= TRIM_AFTER_CLOSED or self._large_since_trim)
                    and now - self._trimmed_at >= TRIM_SECONDS
                    and not any(c.reserved >= TRIM_AFTER_BODY_BYTES for c in self.open)):
                self._closed_since_trim = self._large_since_trim = 0
                self._trimmed_at = now
                trim_heap()

    def released(self, amount: int) -> None:
        """A body's reservation ended (its review was answered or refused)."""
        if amount >= TRIM_AFTER_BODY_BYTES:
            self._large_since_trim += 1

# --- requests ------------------------------------------------------------------------------


def _connection(request: web.Request) -> _Connection | None:
    conn = request.transport.get_protocol() if request.transport is not None else None
    return conn if isinstance(conn, _Connection) else None


@web.middleware
async def middleware(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                     ) -> web.StreamResponse:
    """Keeps the connection's phase: answering while a handler runs, then idle (keep-alive)."""
    conn = _connection(request)
    if conn is None:
        return await handler(request)
    conn.enter(Phase.ANSWERING, None)
    try:
        return await handler(request)
    finally:
        if conn.reserved:
            await conn.guard.budget.release(conn.reserved)
            conn.guard.released(conn.reserved)
            conn.reserved = 0
        conn.enter(Phase.IDLE, conn.guard.limits.idle_timeout)


async def read_body(request: web.Request, limit: int) -> bytes:
    """The request body, read within the body deadline and the byte budget; ``BodyRefused``
    (413 or 503) otherwise.  The reservation is held until the answer is sent: deciding on a
    review costs memory in proportion to its size."""
    length = request.content_length
    if length is not None and length > limit:
        raise BodyRefused(413, f"body larger than {limit} bytes")
    conn = _connection(request)
    try:
        if conn is None:
            return await request.read()
        guard = conn.guard
        started = guard.now()
        wanted = limit if length is None else length
        if not await guard.budget.reserve(wanted, guard.limits.body_timeout):
            raise BodyRefused(503, "the webhook is reading as many review bodies as its memory allows; retry")
        conn.reserved = wanted
        conn.enter(Phase.BODY, guard.limits.body_timeout - (guard.now() - started))
        body = await request.read()
        conn.enter(Phase.ANSWERING, None)
        return body
    except web.HTTPRequestEntityTooLarge:
        raise BodyRefused(413, f"body larger than {limit} bytes") from None
    except ConnectionError:
        # Cut at its body deadline (or gone): the answer reaches no one, but the handler ends here.
        raise BodyRefused(408, "the body did not arrive in time") from None


class GuardedSite(web.TCPSite):
    """A TCP site whose connections the guard accepts, times and cuts; TLS is spoken by the
    guard's protocol, not by the listening server."""

    def __init__(self, runner: web.BaseRunner, guard: ConnectionGuard, host: str, port: int, backlog: int) -> None:
        super().__init__(runner, host, port, backlog=backlog, ssl_context=guard.context)
        self.guard = guard

    async def start(self) -> None:
        await web.BaseSite.start(self)
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self.guard.protocol, self._host, self._port,
                                                backlog=self._backlog, reuse_address=True)
        self._bound_port = self._server.sockets[0].getsockname()[1]
        self.guard.start()

    async def stop(self) -> None:
        await super().stop()
        await self.guard.stop()


def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        trim = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to trim
        return None
    if trim is not None:
        trim.argtypes = [ctypes.c_size_t]
    return trim


_TRIM = _malloc_trim()


def trim_heap() -> None:
    """Give freed heap pages back to the system (glibc only; elsewhere nothing happens)."""
    if _TRIM is not None:
        _TRIM(0)
