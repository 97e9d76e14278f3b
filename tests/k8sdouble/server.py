"""HTTP/1.1 transport: a threaded stdlib server on 127.0.0.1, one thread per connection.

Keep-alive for ordinary requests, chunked transfer encoding for watches, and fault injection
(delays, error Statuses, dropped connections) applied after the request is logged.
"""
from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlsplit

from .api import MAX_BODY_BYTES, Api, Response, Stream, status_response
from .errors import ApiError
from .faults import TIMEOUT, FaultPlan, RecordedRequest

if TYPE_CHECKING:
    from collections.abc import Callable


class DoubleHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, api: Api, plan: FaultPlan, stopping: threading.Event, token: Callable[[], str | None]):
        self.api = api
        self.plan = plan
        self.stopping = stopping
        self.token = token
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: object, client_address: object) -> None:
        import sys

        # A client that drops its connection (a watch cancelled, a keep-alive closed) is normal.
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]

    def track(self, conn: socket.socket, alive: bool) -> None:
        with self._connections_lock:
            (self._connections.add if alive else self._connections.discard)(conn)

    def drop_connections(self) -> None:
        """Unblock handler threads waiting on idle keep-alive connections."""
        with self._connections_lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "k8s-double"
    server: DoubleHTTPServer
    timeout = 120  # idle keep-alive connections close eventually even if nobody stops the server

    def setup(self) -> None:
        super().setup()
        # headers and body go out as separate writes; without this, Nagle + delayed ACK cost 40 ms each
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.track(self.connection, False)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        return None  # tests read the request log instead of stderr

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = lambda self: self._handle()

    def _headers(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.headers.items()}

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            raise ApiError(413, f"the request body is {length} bytes; the limit is {MAX_BODY_BYTES}")
        return self.rfile.read(length) if length else b""

    def _send(self, response: Response) -> None:
        self.send_response(response.code)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        self.send_header("Cache-Control", "no-cache, private")
        for key, value in response.headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(response.body)

    def _stream(self, stream: Stream) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.wfile.flush()
        try:
            for chunk in stream.chunks:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _authorized(self) -> bool:
        token = self.server.token()
        return token is None or self.headers.get("Authorization") == f"Bearer {token}"

    def _handle(self) -> None:
        api, plan = self.server.api, self.server.plan
        split = urlsplit(self.path)
        query = dict(parse_qsl(split.query, keep_blank_values=True))
        try:
            body = self._read_body()
            if not self._authorized():
                raise ApiError(401, "Unauthorized")
            # A non-resource URL is logged too (RBAC's verb for one is the method, lower case).
            unnamed = RecordedRequest(self.command, split.path, self.command.lower(), "", "", "", "", "", "", query)
            try:
                response = api.discovery(split.path)
            except ApiError:
                plan.log(unnamed)
                raise
            if response is not None:
                plan.log(unnamed)
                return self._send(response)
            request = api.parse(self.command, split.path, query)
            for fault in plan.record(request.record(self.command, split.path)):
                if fault.seconds and self.server.stopping.wait(fault.seconds):
                    raise ApiError(503, "the test double is shutting down")
                if fault.status == TIMEOUT:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return None
                if fault.status is not None:
                    raise ApiError(int(fault.status), fault.message or f"injected fault: {fault.status}",
                                   fault.reason)
            result = api.execute(request, self._headers(), body)
            if isinstance(result, Stream):
                return self._stream(result)
            return self._send(result)
        except ApiError as error:
            return self._send(status_response(error))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as error:  # a bug in the double must surface as a 500, not a hung client
            self._send(status_response(ApiError(500, f"test double failed: {type(error).__name__}: {error}")))


def serve_in_thread(server: DoubleHTTPServer) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name=f"k8s-double:{server.server_address[1]}", daemon=True)
    thread.start()
    return thread


def wait_until_gone(thread: threading.Thread, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while thread.is_alive() and time.monotonic() < deadline:
        thread.join(0.05)
