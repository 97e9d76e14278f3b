#!/usr/bin/env python3
"""Benchmark the webhook's hot path: /mutate with GPU pod reviews over TLS keep-alive on loopback.

In one run, on this machine:
  * the real webhook (`WebhookServer`, one process, production logging at info) against the
    Kubernetes API double, templates created by a warm-up pass, so what is measured is admission
    itself (parse -> plan -> patch -> respond, metrics and the per-review log line);
  * the floor: a no-op aiohttp TLS server, same certificate and JSON library, that decodes each
    review and answers a canned allow: what aiohttp + TLS + JSON cost without any webhook logic.

Both servers are pinned to one core and the load generator to the others, so the numbers measure
the server, not the client.  Throughput comes from `wrk` (closed loop, keep-alive connections)
when it is installed (`apt-get install wrk`), else from a pure-Python client that is much slower
than the servers (the table says which ran).  Throughput rounds alternate floor and webhook so a
noisy neighbour hurts both alike; the median round is reported.  Latency at a fixed rate
(default 500/s) comes from an open-loop asyncio client that sends on schedule whatever is
outstanding and counts latency from the scheduled send time (wrk2 style: a stall cannot hide).

For each server the table also shows its own CPU time per review (from /proc): on a machine shared
with other work a server may not get its whole core, and "busy" says how much it got.  Targets:
>= 5,000 reviews/s per process, p99 <= 5 ms at 500/s, >= 60 % of the floor's throughput.

    python3 scripts/bench_webhook.py [--seconds 4] [--rounds 3] [--client auto|wrk|python]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import selectors
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_RPS = 5000.0
TARGET_P99_MS = 5.0
TARGET_RATIO = 0.60


def gpu_pod_review(index: int, distinct: bool = False) -> bytes:
    """A GPU pod of a ReplicaSet (one of four GPU amounts) in the AdmissionReview the API server
    sends for it: compact JSON, fields in Go declaration order, a fresh uid per review.  With
    ``distinct`` every pod template differs (a label), so nothing parsed or planned is reused."""
    amount = ["1", "2", "0.5", "1"][index % 4]
    labels = {"app": "trainer", "pod-template-hash": f"7c9f{index % 4}"}
    if distinct:
        labels["bench.kubectl-gpu.io/index"] = str(index)
    pod = {
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"generateName": f"trainer-7c9f{index % 4}-", "namespace": "bench", "labels": labels,
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"trainer-7c9f{index % 4}",
                                          "uid": f"6d1c0f3e-0000-4000-8000-00000000000{index % 4}",
                                          "controller": True, "blockOwnerDeletion": True}]},
        "spec": {
            "containers": [
                {"name": "cuda", "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                 "resources": {"limits": {"nvidia.com/gpu": amount, "cpu": "4", "memory": "16Gi"}},
                 "env": [{"name": "NCCL_DEBUG", "value": "INFO"}]},
                {"name": "sidecar", "image": "busybox", "resources": {"limits": {"cpu": "100m"}}},
            ],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
    }
    review = {
        "kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
        "request": {
            "uid": f"00000000-0000-4000-8000-{index:012d}",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": "bench", "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller",
                         "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"]},
            "object": pod, "oldObject": None, "dryRun": False,
            "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
        },
    }
    return json.dumps(review, separators=(",", ":")).encode()


# --- servers (child processes) ------------------------------------------------------------------


def serve_webhook(certs_dir: str, port_file: str) -> None:
    from dataclasses import replace

    from kubectl_gpu.core.model import TranslateOptions
    from tests.k8sdouble import K8sDouble
    from webhook import logs
    from webhook.config import load_config
    from kubectl_gpu.k8s import AsyncClient
    from webhook.server import Timings, WebhookServer

    double = K8sDouble().start()
    double.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}})
    config = load_config(None, {}, {"cert_file": f"{certs_dir}/tls.crt", "key_file": f"{certs_dir}/tls.key"})
    config = replace(config, translate_options=TranslateOptions(gpu_memory="80Gi"))
    api = AsyncClient(double.api_client().configuration, config.api_timeout_seconds)
    # Production logging (one JSON line per rewrite at info), written to /dev/null.
    logs.configure("info", stream=open(os.devnull, "w"))

    async def main() -> None:
        # Long cache TTLs: the benchmark measures admission, not API round trips.
        server = WebhookServer(config, api, Timings(label_ttl=3600))
        port = await server.start("127.0.0.1", 0)
        Path(port_file).write_text(str(port))
        await asyncio.Event().wait()

    asyncio.run(main())


def serve_floor(certs_dir: str, port_file: str) -> None:
    import orjson
    from aiohttp import web

    async def noop(request: web.Request) -> web.Response:
        uid = orjson.loads(await request.read())["request"]["uid"]
        answer = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {"uid": uid, "allowed": True}}
        return web.Response(body=orjson.dumps(answer), content_type="application/json")

    async def main() -> None:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(f"{certs_dir}/tls.crt", f"{certs_dir}/tls.key")
        app = web.Application(client_max_size=4 * 1024 * 1024)
        app.add_routes([web.post("/mutate", noop)])
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ctx, backlog=1024)
        await site.start()
        Path(port_file).write_text(str(site._server.sockets[0].getsockname()[1]))  # type: ignore[union-attr]
        await asyncio.Event().wait()

    asyncio.run(main())


@dataclass
class Server:
    role: str
    process: subprocess.Popen
    port: int

    def cpu_seconds(self) -> float | None:
        try:
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def start_server(role: str, certs_dir: str, core: int | None) -> Server:
    port_file = Path(certs_dir) / f"{role}.port"
    command = [sys.executable, __file__, "--serve", role, "--certs", certs_dir]
    child = subprocess.Popen(command, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                             preexec_fn=(lambda: os.sched_setaffinity(0, {core})) if core is not None else None)
    deadline = time.monotonic() + 60
    while not port_file.exists() or not port_file.read_text():
        if child.poll() is not None or time.monotonic() > deadline:
            child.kill()
            raise SystemExit(f"{role} server did not start")
        time.sleep(0.05)
    return Server(role, child, int(port_file.read_text()))


# --- throughput: wrk, or a Python client ---------------------------------------------------------

WRK_SCRIPT = r"""
local bodies, n, i = {}, 0, 0
function init(args)
  for line in io.lines(args[1]) do n = n + 1; bodies[n] = line end
  i = math.random(n)
end
function request()
  i = i % n + 1
  return wrk.format("POST", "/mutate", {["Content-Type"] = "application/json"}, bodies[i])
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('\nRESULT {"requests":%d,"seconds":%f,"bad_status":%d,"socket_errors":%d,"p50_ms":%f,"p99_ms":%f}\n',
    summary.requests, summary.duration / 1e6, e.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
"""


@dataclass
class Round:
    rps: float
    p50: float
    p99: float
    errors: int
    cpu_us: float | None  # server CPU time per review
    busy: float | None  # share of one core the server got


def run_wrk(port: int, work_dir: str, bodies_file: str, seconds: float, connections: int, threads: int) -> tuple[int, float, float, float, int]:
    script = Path(work_dir) / "post.lua"
    if not script.exists():
        script.write_text(WRK_SCRIPT)
    out = subprocess.run(
        ["wrk", f"-t{threads}", f"-c{max(connections, threads)}", f"-d{max(1, round(seconds))}s", "-s", str(script),
         f"https://127.0.0.1:{port}/mutate", bodies_file],
        capture_output=True, text=True, timeout=seconds + 30,
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    if out.returncode != 0 or not lines:
        raise SystemExit(f"wrk failed ({out.returncode}): {out.stderr.strip() or out.stdout.strip()}")
    r = json.loads(lines[-1][7:])
    return r["requests"], r["seconds"], r["p50_ms"], r["p99_ms"], r["bad_status"] + r["socket_errors"]


class Connection:
    """HTTP/1.1 keep-alive over TLS, one request at a time (as the API server sends reviews)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int, ctx: ssl.SSLContext) -> "Connection":
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx, server_hostname="localhost")
        return cls(reader, writer)

    async def post(self, body: bytes) -> int:
        self.writer.write(
            b"POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
        )
        head = await self.reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        await self.reader.readexactly(length)
        return int(head[9:12])

    def close(self) -> None:
        self.writer.close()


async def python_closed_loop(port: int, ctx: ssl.SSLContext, bodies: list[bytes], seconds: float,
                             connections: int) -> tuple[int, float, float, float, int]:
    conns = [await asyncio.wait_for(Connection.open(port, ctx), 10) for _ in range(connections)]
    latencies: list[float] = []
    errors = 0
    deadline = time.perf_counter() + seconds

    async def worker(conn: Connection, offset: int) -> None:
        nonlocal errors
        i = offset
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            status = await conn.post(bodies[i % len(bodies)])
            latencies.append(time.perf_counter() - start)
            errors += status != 200
            i += connections

    started = time.perf_counter()
    await asyncio.wait_for(asyncio.gather(*(worker(c, n) for n, c in enumerate(conns))), timeout=seconds + 30)
    elapsed = time.perf_counter() - started
    for c in conns:
        c.close()
    return len(latencies), elapsed, percentile(latencies, 0.5) * 1000, percentile(latencies, 0.99) * 1000, errors


# --- latency at a fixed rate (open loop) ---------------------------------------------------------


@dataclass
class Paced:
    p50: float
    p99: float
    send_lag_p99: float  # how late the client itself sent (timer and scheduling), ms
    errors: int
    sent: int


# The API server opens more connections to a slow webhook, not without bound; neither does the
# client: beyond this many, a request waits for a free connection (still timed from its schedule).
MAX_PACED_CONNECTIONS = 128


async def fixed_rate(port: int, ctx: ssl.SSLContext, bodies: list[bytes], seconds: float, rate: float) -> Paced:
    """Requests start on a fixed schedule whatever is outstanding (a new connection is opened if
    all are busy, up to MAX_PACED_CONNECTIONS); latency counts from the scheduled start, so a
    stall cannot hide behind requests that were never sent."""
    every = [await asyncio.wait_for(Connection.open(port, ctx), 10) for _ in range(8)]
    idle: asyncio.Queue[Connection] = asyncio.Queue()
    for conn in every:
        idle.put_nowait(conn)
    opening = 0
    latencies: list[float] = []
    lags: list[float] = []
    errors = 0
    total = int(seconds * rate)
    loop = asyncio.get_running_loop()
    begin = loop.time() + 0.05

    async def connection() -> Connection:
        nonlocal opening
        if idle.empty() and len(every) + opening < MAX_PACED_CONNECTIONS:
            opening += 1
            try:
                conn = await Connection.open(port, ctx)
            finally:
                opening -= 1
            every.append(conn)
            return conn
        return await idle.get()

    async def one(i: int, scheduled: float) -> None:
        nonlocal errors
        lags.append(loop.time() - scheduled)
        conn = None
        try:
            conn = await connection()
            status = await conn.post(bodies[i % len(bodies)])
        except (OSError, asyncio.IncompleteReadError):
            status = 0  # counted as an error; a broken connection is not used again
        latencies.append(loop.time() - scheduled)
        errors += status != 200
        if conn is not None:
            if status:
                idle.put_nowait(conn)
            else:
                every.remove(conn)
                conn.close()

    tasks = []
    for i in range(total):
        scheduled = begin + i / rate
        delay = scheduled - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(i, scheduled)))
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=60)
    for conn in every:
        conn.close()
    return Paced(percentile(latencies, 0.5) * 1000, percentile(latencies, 0.99) * 1000,
                 percentile(lags, 0.99) * 1000, errors, total)


def paced_loop() -> asyncio.AbstractEventLoop:
    # poll(), not select(): while a server stalls the open-loop client holds many connections, and
    # select() cannot watch a descriptor numbered 1024 or more ("filedescriptor out of range in
    # select()").  poll() sleeps in whole milliseconds: 'send lag' in the report says how late
    # the client sent, and both servers carry the same lag.
    return asyncio.SelectorEventLoop(selectors.PollSelector())


def allow_many_connections() -> None:
    # One descriptor per outstanding request while a server stalls: lift the soft limit (1,024 on
    # most systems) to the hard one so a stall shows as latency, not as EMFILE errors.
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ImportError, ValueError, OSError):
        pass


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# --- the run -------------------------------------------------------------------------------------


@dataclass
class Result:
    rounds: list[Round] = field(default_factory=list)
    paced: Paced | None = None

    def median(self, attr: str) -> float:
        values = [getattr(r, attr) for r in self.rounds if getattr(r, attr) is not None]
        return statistics.median(values) if values else float("nan")


def pick_cores() -> tuple[int | None, set[int] | None]:
    try:
        cores = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None, None
    if len(cores) < 2:
        return None, None
    return cores[0], set(cores[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=4.0, help="length of each throughput round")
    parser.add_argument("--rounds", type=int, default=3, help="throughput rounds per server (median reported)")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--rate", type=float, default=500.0, help="fixed rate for the latency phase (reviews/s)")
    parser.add_argument("--rate-seconds", type=float, default=5.0)
    parser.add_argument("--client", choices=["auto", "wrk", "python"], default="auto")
    parser.add_argument("--no-pin", action="store_true", help="do not pin servers and client to separate cores")
    parser.add_argument("--time-limit", type=float, default=150.0, help="stop (and stop the servers) after this long")
    parser.add_argument("--serve", choices=["webhook", "floor"], help=argparse.SUPPRESS)
    parser.add_argument("--certs", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve == "webhook":
        return serve_webhook(args.certs, str(Path(args.certs) / "webhook.port"))
    if args.serve == "floor":
        return serve_floor(args.certs, str(Path(args.certs) / "floor.port"))

    def out_of_time(_signum: int, _frame: object) -> None:
        raise SystemExit(f"benchmark stopped after its --time-limit of {args.time_limit:g} s")

    signal.signal(signal.SIGALRM, out_of_time)  # the finally below still stops the servers
    signal.alarm(max(1, int(args.time_limit)))
    client = args.client
    if client == "auto":
        client = "wrk" if shutil.which("wrk") else "python"
    elif client == "wrk" and not shutil.which("wrk"):
        raise SystemExit("wrk is not installed (apt-get install wrk); use --client python")
    server_core, client_cores = (None, None) if args.no_pin else pick_cores()

    from webhook.certs import write_certs

    bodies = [gpu_pod_review(i) for i in range(512)]
    distinct = [gpu_pod_review(i, distinct=True) for i in range(20_000)]
    allow_many_connections()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as work_dir:
        files = write_certs(work_dir, ["localhost"], ["127.0.0.1"])
        ctx = ssl.create_default_context(cafile=str(files.ca_cert))
        bodies_file = str(Path(work_dir) / "bodies.jsonl")
        Path(bodies_file).write_bytes(b"\n".join(bodies) + b"\n")
        distinct_file = str(Path(work_dir) / "distinct.jsonl")
        Path(distinct_file).write_bytes(b"\n".join(distinct) + b"\n")
        servers = {role: start_server(role, work_dir, server_core) for role in ("floor", "webhook")}
        if client_cores:
            os.sched_setaffinity(0, client_cores)  # this process and the wrk it starts
        threads = len(client_cores) if client_cores else 1
        pinning = (f"servers on core {server_core}, client on core(s) {','.join(map(str, sorted(client_cores)))}"
                   if client_cores else "not pinned (one core, or --no-pin)")
        print(f"load generator: {client}{' (pure-Python fallback: if busy < 100% it measured the client)' if client == 'python' else ''}; "
              f"cores: {os.cpu_count()}, {pinning}", flush=True)
        print(f"payload {len(bodies[0])} bytes, {args.connections} keep-alive connections, {args.rounds} x {args.seconds:g} s "
              f"rounds per server, {args.rate:g}/s for {args.rate_seconds:g} s", flush=True)

        def throughput(server: Server, seconds: float, file: str, payloads: list[bytes]) -> Round:
            cpu_before = server.cpu_seconds()
            if client == "wrk":
                n, elapsed, p50, p99, errors = run_wrk(server.port, work_dir, file, seconds, args.connections, threads)
            else:
                n, elapsed, p50, p99, errors = asyncio.run(
                    python_closed_loop(server.port, ctx, payloads, seconds, args.connections))
            cpu_after = server.cpu_seconds()
            cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
            return Round(n / elapsed, p50, p99, errors, cpu / n * 1e6 if cpu and n else None,
                         cpu / elapsed if cpu is not None else None)

        results = {role: Result() for role in servers}
        uncached = Result()
        try:
            for role, server in servers.items():  # warm-up: templates created, caches and code warm
                throughput(server, 1.0, bodies_file, bodies)
            for n in range(args.rounds):
                for role in (("floor", "webhook") if n % 2 == 0 else ("webhook", "floor")):
                    results[role].rounds.append(throughput(servers[role], args.seconds, bodies_file, bodies))
            uncached.rounds.append(throughput(servers["webhook"], args.seconds, distinct_file, distinct))
            for role, server in servers.items():
                loop = paced_loop()
                try:
                    results[role].paced = loop.run_until_complete(
                        fixed_rate(server.port, ctx, bodies, args.rate_seconds, args.rate))
                finally:
                    loop.close()
        finally:
            for server in servers.values():
                server.process.terminate()
            for server in servers.values():
                try:
                    server.process.wait(10)
                except subprocess.TimeoutExpired:
                    server.process.kill()
    report(results, uncached, args, time.monotonic() - started)


def report(results: dict[str, Result], uncached: Result, args: argparse.Namespace, elapsed: float) -> None:
    floor, hook = results["floor"], results["webhook"]

    def row(name: str, r: Result) -> str:
        rps = r.median("rps")
        cpu = r.median("cpu_us")
        busy = r.median("busy")
        spread = f"{min(x.rps for x in r.rounds):,.0f}-{max(x.rps for x in r.rounds):,.0f}"
        paced = (f"{r.paced.p50:6.2f} {r.paced.p99:6.2f}" if r.paced else f"{'-':>6} {'-':>6}")
        errors = sum(x.errors for x in r.rounds) + (r.paced.errors if r.paced else 0)
        return (f"{name:28s} {rps:9,.0f} {spread:>13s} {r.median('p99'):8.2f} {paced} "
                f"{cpu:8.0f} {1e6 / cpu if cpu == cpu else float('nan'):11,.0f} {busy:5.0%} {errors:6d}")

    print()
    print(f"{'server':28s} {'reviews/s':>9s} {'rounds':>13s} {'load p99':>8s} {'@' + format(args.rate, 'g') + '/s p50':>6s} {'p99':>6s} "
          f"{'CPU us/rv':>8s} {'rv/CPU-s':>11s} {'busy':>5s} {'errors':>6s}")
    print(row("floor (no-op aiohttp TLS)", floor))
    print(row("webhook /mutate", hook))
    print(row("webhook, every pod distinct", uncached))
    print("  (latencies in ms; 'load p99' under full closed-loop load; '@rate' open loop from the scheduled send time;")
    print("   'rv/CPU-s' = reviews per second of the server's own CPU time, what one dedicated core would give;")
    print("   'busy' = share of one core the server got while loaded; 'errors' = non-200 or socket errors)")
    ratio = hook.median("rps") / floor.median("rps")
    cpu_ratio = floor.median("cpu_us") / hook.median("cpu_us")
    lag = max(r.paced.send_lag_p99 for r in (floor, hook) if r.paced)
    print(f"webhook/floor throughput: {ratio:.0%} measured, {cpu_ratio:.0%} by CPU time per review; "
          f"client send lag p99 {lag:.2f} ms; run took {elapsed:.0f} s")
    paced = hook.paced
    checks = [
        (hook.median("rps") >= TARGET_RPS,
         f">= {TARGET_RPS:,.0f} reviews/s per process: {hook.median('rps'):,.0f}/s measured "
         f"({1e6 / hook.median('cpu_us'):,.0f}/s per CPU-second of the server, which got {hook.median('busy'):.0%} of its core)"),
        (paced is not None and paced.p99 <= TARGET_P99_MS,
         f"p99 <= {TARGET_P99_MS:g} ms at {args.rate:g}/s: p99 {paced.p99:.2f} ms, p50 {paced.p50:.2f} ms" if paced else "no latency run"),
        (ratio >= TARGET_RATIO, f">= {TARGET_RATIO:.0%} of the floor's throughput: {ratio:.0%}"),
    ]
    for ok, text in checks:
        print(f"{'PASS' if ok else 'MISS'}  {text}")
    if uncached.rounds:
        print(f"note: the targets are judged on pods of controllers (the same template, a new uid each); with every "
              f"template distinct (bare pods, nothing reused) the webhook does {uncached.median('rps'):,.0f}/s, "
              f"{uncached.median('rps') / floor.median('rps'):.0%} of the floor")


if __name__ == "__main__":
    main()
