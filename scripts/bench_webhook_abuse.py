#!/usr/bin/env python3
"""What a hostile or broken client that reaches the webhook's port can make it hold, measured.

Starts `kgpu-webhook serve` (the image's entrypoint, default settings: the chart's) on
loopback against the Kubernetes API double, then, one after another:

  * floor      - the server idle, no client connected;
  * idle       - N TLS connections (default 2,000) opened and left silent;
  * stalled    - K connections (default 24) that send the headers and half of the largest legal
                 review (a 7 MiB UPDATE), then stop;
  * largest    - K complete 7 MiB UPDATE reviews sent at once (each answered 200, or refused
                 with a retryable 503 when the server's body budget is full);
  * slow       - one connection each that is silent after the handshake, sends its headers a
                 byte a second, or stops half way through its body: the time until the server
                 cuts each;
  * after      - RSS once every client has gone.

For each it prints the server's peak RSS and the sockets it held next to the floor, and PASS or
MISS against the targets: peak RSS under the chart's memory limit (values.yaml
resources.limits.memory) in idle, stalled and largest; every slow client cut within its deadline
(webhook/config.py DEFAULTS["transport"]) plus two seconds.  Loopback only, bounded in
connections and time (--time-limit), and it stops the server on the way out.

    python3 scripts/bench_webhook_abuse.py [--connections 2000] [--big 24] [--time-limit 240]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
MIB = 1024 * 1024
CUT_SLACK = 2.0  # seconds past a deadline a cut may take (the deadline sweep, a loaded machine)


@dataclass
class Row:
    scenario: str
    peak_rss: int
    sockets: int
    note: str
    passed: bool | None  # None: a figure, not judged


# --- the server and what it holds ---------------------------------------------------------------


class Server:
    def __init__(self, process: subprocess.Popen, port: int) -> None:
        self.process = process
        self.port = port

    def rss(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise SystemExit("no VmRSS in /proc: this benchmark needs Linux")

    def sockets(self) -> int:
        """TCP connections the server process holds open to a client on its port."""
        inodes = set()
        for fd in os.listdir(f"/proc/{self.process.pid}/fd"):
            try:
                target = os.readlink(f"/proc/{self.process.pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
        count = 0
        for table in ("tcp", "tcp6"):
            try:
                lines = Path(f"/proc/{self.process.pid}/net/{table}").read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                fields = line.split()
                local_port = int(fields[1].rsplit(":", 1)[1], 16)
                if fields[9] in inodes and local_port == self.port and fields[3] == "01":  # ESTABLISHED
                    count += 1
        return count


@contextmanager
def sampled(server: Server) -> Iterator[dict[str, int]]:
    """Peak RSS and peak sockets while the block runs (sampled every 20 ms)."""
    peak = {"rss": server.rss(), "sockets": server.sockets()}
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.02):
            try:
                peak["rss"] = max(peak["rss"], server.rss())
                peak["sockets"] = max(peak["sockets"], server.sockets())
            except (OSError, SystemExit):
                return

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield peak
    finally:
        stop.set()
        thread.join()


def start_server(work: Path, kubeconfig: str) -> Server:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "POD_NAMESPACE": "kubectl-gpu"}
    process = subprocess.Popen(
        [sys.executable, "-c", "from webhook.cli import main; main()", "serve", "--cert-file", str(work / "tls.crt"),
         "--key-file", str(work / "tls.key"), "--kubeconfig", kubeconfig, "--port", str(port),
         "--shutdown-delay-seconds", "0", "--log-level", "error"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return Server(process, port)


def wait_healthy(server: Server, context: ssl.SSLContext) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and server.process.poll() is None:
        try:
            conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=context, timeout=2)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                conn.close()
                return
        except (OSError, http.client.HTTPException):
            time.sleep(0.2)
    raise SystemExit("the webhook did not start")


# --- clients ------------------------------------------------------------------------------------


def connect(port: int, context: ssl.SSLContext) -> ssl.SSLSocket | None:
    try:
        raw = socket.create_connection(("127.0.0.1", port), timeout=10)
        return context.wrap_socket(raw, server_hostname="127.0.0.1")
    except OSError:
        return None  # refused by the server: that is one of the outcomes measured


def open_many(port: int, context: ssl.SSLContext, count: int) -> list[ssl.SSLSocket]:
    with concurrent.futures.ThreadPoolExecutor(32) as pool:
        return [c for c in pool.map(lambda _: connect(port, context), range(count)) if c is not None]


def headers(length: int) -> bytes:
    return (f"POST /mutate HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\n"
            f"Content-Length: {length}\r\n\r\n").encode()


def post_whole(port: int, context: ssl.SSLContext, body: bytes, timeout: float) -> int:
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=timeout)
    try:
        conn.request("POST", "/mutate", body=body, headers={"Content-Type": "application/json"})
        return conn.getresponse().status
    except (OSError, http.client.HTTPException):
        return 0  # cut or refused
    finally:
        conn.close()


def seconds_until_cut(conn: socket.socket, limit: float, trickle: bytes = b"") -> float:
    """Seconds until the server ends ``conn`` (at most ``limit``), sending ``trickle`` a byte a
    second meanwhile."""
    started = time.monotonic()
    conn.settimeout(min(1.0, limit))
    while time.monotonic() - started < limit:
        try:
            if trickle:
                conn.sendall(trickle[:1])
                trickle = trickle[1:]
            if conn.recv(65536) == b"":
                break
        except TimeoutError:
            continue
        except OSError:
            break
    return time.monotonic() - started


def close_all(conns: list[ssl.SSLSocket]) -> None:
    for conn in conns:
        try:
            conn.close()
        except OSError:
            pass


# --- the run ------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=2000, help="idle TLS connections (at most 10,000)")
    parser.add_argument("--big", type=int, default=24, help="largest legal reviews at once (at most 100)")
    parser.add_argument("--time-limit", type=float, default=240.0, help="stop (and stop the server) after this long")
    args = parser.parse_args()
    if not 1 <= args.connections <= 10_000 or not 1 <= args.big <= 100:
        raise SystemExit("--connections must be 1-10000 and --big 1-100: this benchmark stays bounded")

    import resource

    import yaml

    from kubectl_gpu.dra.quantity import parse_quantity
    from tests.k8sdouble import K8sDouble
    from tests.test_chart_server import _largest_update
    from webhook.certs import write_certs
    from webhook.config import DEFAULTS
    from webhook.review import MAX_BODY_BYTES

    def out_of_time(_signum: int, _frame: object) -> None:
        raise SystemExit(f"benchmark stopped after its --time-limit of {args.time_limit:g} s")

    signal.signal(signal.SIGALRM, out_of_time)  # the finally below still stops the server
    signal.alarm(max(1, int(args.time_limit)))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, args.connections + 512)), hard))

    values = yaml.safe_load((ROOT / "charts/kubectl-gpu-webhook/values.yaml").read_text())
    limit = int(parse_quantity(values["resources"]["limits"]["memory"]))
    transport = DEFAULTS.get("transport") or {}  # absent: a server without transport limits
    deadlines = {phase: float(transport.get(f"{phase}TimeoutSeconds", 0)) or None
                 for phase in ("header", "body", "idle")}
    rows: list[Row] = []
    double = K8sDouble().start()
    double.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}})
    with tempfile.TemporaryDirectory() as work_dir:
        work = Path(work_dir)
        files = write_certs(work, ["localhost"], ["127.0.0.1"])
        context = ssl.create_default_context(cafile=str(files.ca_cert))
        server = start_server(work, double.kubeconfig_path())
        try:
            wait_healthy(server, context)
            time.sleep(1.0)
            floor = server.rss()
            rows.append(Row("floor: the server idle", floor, server.sockets(), "", None))

            with sampled(server) as peak:
                conns = open_many(server.port, context, args.connections)
                time.sleep(1.0)
            rows.append(Row(f"idle: {args.connections} silent TLS connections", peak["rss"], peak["sockets"],
                            f"{len(conns)} handshakes completed", peak["rss"] < limit))
            close_all(conns)

            body = _largest_update(MAX_BODY_BYTES)
            with sampled(server) as peak:
                conns = open_many(server.port, context, args.big)
                for conn in conns:
                    try:
                        conn.sendall(headers(len(body)) + body[: len(body) // 2])
                    except OSError:
                        pass
                time.sleep((deadlines["body"] or 10.0) + 2 * CUT_SLACK)  # then a refused body's linger
            cut = sum(1 for c in conns if seconds_until_cut(c, 0.05) < 0.05)
            rows.append(Row(f"stalled: {args.big} x half of a {len(body) / MIB:.1f} MiB UPDATE", peak["rss"],
                            peak["sockets"], f"{cut} of {len(conns)} cut by the server", peak["rss"] < limit))
            close_all(conns)

            timeout = float(values["webhook"]["timeoutSeconds"]) + (deadlines["body"] or 0)
            with sampled(server) as peak, concurrent.futures.ThreadPoolExecutor(args.big) as pool:
                statuses = list(pool.map(lambda _: post_whole(server.port, context, body, timeout), range(args.big)))
            tally = ", ".join(f"{statuses.count(s)} x {s or 'cut'}" for s in sorted(set(statuses)))
            rows.append(Row(f"largest: {args.big} x {len(body) / MIB:.1f} MiB UPDATE at once", peak["rss"],
                            peak["sockets"], tally, peak["rss"] < limit and 200 in statuses))

            wait = max(d for d in deadlines.values() if d) + 3 * CUT_SLACK if any(deadlines.values()) else 30.0
            with sampled(server) as peak, concurrent.futures.ThreadPoolExecutor(3) as pool:
                silent, trickling, half = (connect(server.port, context) for _ in range(3))
                assert silent and trickling and half, "the server refused a connection with nothing else open"
                small = b'{"apiVersion":"admission.k8s.io/v1"}'
                half.sendall(headers(len(small)) + small[:10])
                times = list(pool.map(lambda a: seconds_until_cut(*a), [
                    (silent, wait), (trickling, wait, b"POST /mutate HTTP/1.1\r\nHost: webhook\r\n" * 4), (half, wait)]))
            for name, took, deadline in zip(("silent after the handshake", "headers a byte a second",
                                             "body stopped half way"), times,
                                            (deadlines["header"], deadlines["header"], deadlines["body"])):
                within = deadline is not None and took <= deadline + CUT_SLACK
                rows.append(Row(f"slow: {name}", peak["rss"], peak["sockets"],
                                f"cut after {took:.1f} s (deadline {deadline if deadline else 'none'})", within))
            close_all([silent, trickling, half])

            time.sleep(8.0)  # the server hands freed heap back within seconds of quiet
            rows.append(Row("after: every client gone", server.rss(), server.sockets(),
                            f"{(server.rss() - floor) / MIB:+.0f} MiB on the floor", None))
        finally:
            server.process.terminate()
            try:
                server.process.wait(30)
            except subprocess.TimeoutExpired:
                server.process.kill()
            double.stop()
            signal.alarm(0)
    report(rows, limit)


def report(rows: list[Row], limit: int) -> None:
    print(f"\nchart memory limit {limit / MIB:.0f} MiB; targets: peak RSS under it, slow clients cut at their deadline")
    print(f"{'scenario':<46} {'peak RSS':>9} {'vs floor':>9} {'sockets':>8}  result")
    floor = rows[0].peak_rss
    for row in rows:
        verdict = "" if row.passed is None else "PASS" if row.passed else "MISS"
        print(f"{row.scenario:<46} {row.peak_rss / MIB:>6.0f} MiB {(row.peak_rss - floor) / MIB:>+6.0f} MiB "
              f"{row.sockets:>8}  {verdict:<4} {row.note}")
    misses = sum(1 for r in rows if r.passed is False)
    print(f"\n{misses} MISS" if misses else "\nall PASS")


if __name__ == "__main__":
    main()
