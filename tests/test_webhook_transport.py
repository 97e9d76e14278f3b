"""What a client that reaches the webhook's port can make it hold, over real TLS on loopback:
deadlines on the handshake, the headers, the body and idle keep-alive; a bound on open
connections; a budget of body bytes; the body limit of each operation.

The deadlines here are a fraction of a second so that the suite stays quick; each test waits a
bounded multiple of them (a bound against a hang, not a speed check)."""

from __future__ import annotations

import json
import socket
import ssl
import time

import pytest

from tests.conftest import admission_review, eventually
from webhook.review import MAX_BODY_BYTES

SHORT = {"handshakeTimeoutSeconds": 0.5, "headerTimeoutSeconds": 0.5, "bodyTimeoutSeconds": 0.5,
         "idleTimeoutSeconds": 0.5}
CUT_WITHIN = 5.0  # seconds: every deadline above, with the sweep and a loaded machine


def tls_connect(hook, context: ssl.SSLContext | None = None) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", hook.port), timeout=CUT_WITHIN)
    return (context or hook.ssl_context()).wrap_socket(raw, server_hostname="127.0.0.1")


def closed_by_server(conn: socket.socket) -> bool:
    """True when the server ends the connection within CUT_WITHIN (EOF or reset)."""
    conn.settimeout(CUT_WITHIN)
    try:
        while conn.recv(65536):
            pass
    except TimeoutError:
        return False
    except (ConnectionError, ssl.SSLError, OSError):
        pass
    return True


def post(conn: socket.socket, path: str, body: bytes, *, send: int | None = None) -> None:
    head = (f"POST {path} HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    conn.sendall(head + body[: len(body) if send is None else send])


def response_status(conn: socket.socket, timeout: float = CUT_WITHIN) -> int:
    conn.settimeout(timeout)
    data = b""
    while b"\r\n" not in data:
        chunk = conn.recv(65536)
        assert chunk, "the connection closed without an answer"
        data += chunk
    return int(data.split(b" ", 2)[1])


def small_review() -> bytes:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    return json.dumps(admission_review(pod)).encode()


# --- deadlines -----------------------------------------------------------------------------------


def test_a_connection_that_never_sends_a_request_is_cut_at_the_header_deadline(start_webhook):
    hook = start_webhook(transport=SHORT)
    with tls_connect(hook) as conn:
        assert closed_by_server(conn)
    assert 'kubectl_gpu_webhook_connections_closed_total{reason="headers"} 1.0' in hook.metrics_text()


def test_headers_that_trickle_in_are_cut_at_the_header_deadline(start_webhook):
    hook = start_webhook(transport=SHORT)
    with tls_connect(hook) as conn:
        conn.sendall(b"POST /mutate HTTP/1.1\r\nHost: webhook\r\n")
        assert closed_by_server(conn)


def test_a_body_that_stops_arriving_is_cut_at_the_body_deadline(start_webhook):
    hook = start_webhook(transport=SHORT)
    with tls_connect(hook) as conn:
        post(conn, "/mutate", small_review(), send=10)
        assert closed_by_server(conn)


def test_a_plain_tcp_client_that_never_starts_tls_is_cut_at_the_handshake_deadline(start_webhook):
    hook = start_webhook(transport=SHORT)
    with socket.create_connection(("127.0.0.1", hook.port)) as conn:
        assert closed_by_server(conn)
    assert 'kubectl_gpu_webhook_connections_closed_total{reason="handshake"} 1.0' in hook.metrics_text()


def test_an_idle_keep_alive_connection_is_closed_after_the_idle_deadline_and_serves_until_then(start_webhook):
    hook = start_webhook(transport=SHORT | {"idleTimeoutSeconds": 1.5})
    with tls_connect(hook) as conn:
        for _ in range(2):  # keep-alive: a second request on the same connection is answered
            post(conn, "/validate", small_review())
            assert response_status(conn) == 200
            time.sleep(0.7)  # longer than the header deadline, shorter than the idle one
            conn.settimeout(0.01)
            with pytest.raises(TimeoutError):
                conn.recv(65536)  # drains the rest of the answer; still open
        assert closed_by_server(conn)


def test_deadlines_do_not_cut_a_client_that_keeps_to_them(start_webhook):
    hook = start_webhook(transport=SHORT)
    body = small_review()
    with tls_connect(hook) as conn:
        post(conn, "/validate", body, send=len(body) // 2)
        time.sleep(0.2)
        conn.sendall(body[len(body) // 2:])
        assert response_status(conn) == 200


# --- open connections ----------------------------------------------------------------------------


def test_beyond_the_connection_cap_the_longest_waiting_connection_gives_way(start_webhook):
    hook = start_webhook(transport={"maxConnections": 3, "headerTimeoutSeconds": 60})
    held = [tls_connect(hook) for _ in range(3)]
    try:
        with tls_connect(hook) as newcomer:
            post(newcomer, "/validate", small_review())
            assert response_status(newcomer) == 200
        assert closed_by_server(held[0])
        assert 'kubectl_gpu_webhook_connections_closed_total{reason="displaced"} 1.0' in hook.metrics_text()
    finally:
        for conn in held:
            conn.close()


def test_when_every_connection_is_answering_a_new_one_is_refused_before_tls(start_webhook):
    hook = start_webhook(transport={"maxConnections": 2, "bodyTimeoutSeconds": 60})
    busy = [tls_connect(hook) for _ in range(2)]
    try:
        for conn in busy:
            post(conn, "/mutate", small_review(), send=10)  # reading a body: never displaced
        time.sleep(0.3)
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            with tls_connect(hook) as refused:
                refused.recv(1)
    finally:
        for conn in busy:
            conn.close()
    time.sleep(0.3)  # the server sees them go
    assert 'kubectl_gpu_webhook_connections_closed_total{reason="refused"} 1.0' in hook.metrics_text()


def test_a_body_beyond_the_byte_budget_waits_then_gets_a_retryable_503(start_webhook, k8s_double):
    """Two large reviews being decided (their templates' creation held up by the API) fill the
    budget: a third review waits its body deadline, then gets a 503 the API server retries."""
    from tests.test_webhook_server import gpu_pod

    # The holders are decided for at least 5 s; the third waits 2 s for room.
    hook = start_webhook(transport={"bodyBytesInFlight": MAX_BODY_BYTES, "bodyTimeoutSeconds": 2},
                         apiTimeoutSeconds=10)
    k8s_double.delay(5, "create", "resourceclaimtemplates")
    holders = [tls_connect(hook) for _ in range(2)]
    with tls_connect(hook) as third:
        for conn, amount in zip(holders, ("1", "2")):
            post(conn, "/mutate", padded(admission_review(gpu_pod(amount)), MAX_BODY_BYTES // 2))
        # Both read and being decided (a bound against a hang on a loaded machine, not a speed check).
        eventually(lambda: hook.server.guard.budget.used >= MAX_BODY_BYTES, seconds=CUT_WITHIN)
        post(third, "/validate", small_review())
        assert response_status(third) == 503
    for conn in holders:
        assert response_status(conn, timeout=30) == 200  # after the API's 5 s delay
        conn.close()


# --- body limits ---------------------------------------------------------------------------------


def padded(review: dict, size: int) -> bytes:
    body = json.dumps(review).encode()
    return body[:-1] + b" " * (size - len(body)) + body[-1:]


def test_a_create_is_refused_above_half_the_update_limit_an_update_is_not(start_webhook):
    hook = start_webhook()
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    size = MAX_BODY_BYTES // 2 + 1
    status, data = hook.request("POST", "/mutate", padded(admission_review(pod), size))
    assert status == 413 and b"a CREATE only the object" in data
    update = admission_review(pod, operation="UPDATE", old=pod)
    assert hook.request("POST", "/mutate", padded(update, size))[0] == 200
    assert hook.request("POST", "/mutate", padded(admission_review(pod), size - 1))[0] == 200


def test_a_declared_length_over_the_limit_is_refused_without_reading_the_body(start_webhook):
    hook = start_webhook()
    with tls_connect(hook) as conn:
        conn.sendall(b"POST /mutate HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\n"
                     + f"Content-Length: {MAX_BODY_BYTES + 1}\r\n\r\n".encode())
        assert response_status(conn) == 413


@pytest.mark.parametrize("setting, message", [
    ({"maxConnections": 0}, "transport.maxConnections: 0; use a whole number from 1 to 65536"),
    ({"headerTimeoutSeconds": 0}, "transport.headerTimeoutSeconds: 0; use seconds above 0, at most 300"),
    ({"bodyBytesInFlight": 1024}, f"transport.bodyBytesInFlight: 1024; use a whole number from {MAX_BODY_BYTES}"),
])
def test_transport_settings_out_of_range_stop_the_start_with_the_key_named(tmp_path, setting, message):
    import yaml

    from webhook.config import ConfigError, load_config

    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"transport": setting}))
    with pytest.raises(ConfigError, match=message):
        load_config(str(path), {}, {})
