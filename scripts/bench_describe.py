#!/usr/bin/env python3
"""Benchmark (not a test): `describe` and `explain` on a large cluster served by the API double.

1,000 nodes x 8 GPUs (one ResourceSlice each), 10,000 pods and 10,000 ResourceClaims (8,000 of
them allocated).  Targets (issue 5): `kubectl gpu describe` <= 2 s; `explain` of one claim over
8,000 devices <= 0.5 s; every list paginated.  Issue 29: describe <= 0.25x the time the real
kubectl takes for `kubectl get pods -A -o json` on the same double (kubectl from .tools/bin, where
scripts/install-tools puts it, else from PATH), both as new processes, measured alternately.

The double runs in a child process by default, as a real API server would: in-process its JSON
encoding and HTTP handling would compete with the client for one GIL, and its ~0.5 million stored
objects would sit in the client's heap for the cycle collector to scan.  `--in-process` keeps the
old arrangement for comparison.

Printed, all measured in the same run (median of --repeat runs each):
  floor      the bare paginated raw list of the same objects: HTTP bytes per kind, json.loads of
             those bytes, and the four lists concurrently (what describe cannot go below)
  kubectl    `kubectl get pods -A -o json` in a new process: wall and CPU seconds (issue 29's floor)
  describe   `kubectl gpu describe` as people run it (a new process: start-up, imports, output
             through a pipe; the target), the same click command in this process, and its phases:
             lists (with the devices and holders read from slices and claims as they come), the
             rest of the model, JSON payload (-o json builds it), table rendering
  explain    one pending pod's claim over 8,000 devices: the engine from already-listed objects
             (the target; it builds the 8,000 devices and reads 10,000 claims' allocations), and
             the live `explain POD` path including its lists

    python3 scripts/bench_describe.py [--nodes 1000] [--pods 10000] [--repeat 3] [--page-size 1000]
                                      [--latency-ms 20] [--in-process]
"""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kubectl_gpu.collector import collector_paused  # noqa: E402
from tests import builders as b  # noqa: E402
from tests.k8sdouble import K8sDouble  # noqa: E402

DESCRIBE_TARGET = 2.0
DESCRIBE_KUBECTL_RATIO = 0.25  # x `kubectl get pods -A -o json` (issue 29)
EXPLAIN_TARGET = 0.5


def kubectl_binary() -> str | None:
    """The kubectl scripts/install-tools put in .tools/bin, else the one on PATH."""
    tools = ROOT / ".tools" / "bin" / "kubectl"
    return str(tools) if tools.is_file() else shutil.which("kubectl")


def process_run(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float, bytes]:
    """Wall and CPU seconds (user + system, all its threads) of one new process, and its stdout."""
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, check=False, env=env)
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, done.stdout


def seed(double: K8sDouble, nodes: int, pods: int) -> None:
    double.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}}, *b.nvidia_device_classes())
    for n in range(nodes):
        name = f"gpu-{n:04d}"
        double.seed(b.dra_node(name), b.gpu_slice(name, 8))
    allocated = min(pods, nodes * 8)
    for i in range(pods):
        node = f"gpu-{(i // 8) % nodes:04d}"
        pod_name, claim_name = f"worker-{i}", f"worker-{i}-gpu"
        running = i < allocated
        double.seed(
            b.pod(pod_name, "ml", node_name=node if running else None, phase="Running" if running else "Pending",
                  claims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
                  claim_statuses={"gpu": claim_name}),
            b.claim(claim_name, "ml", allocated=[("gpu", f"gpu-{i % 8}")] if running else (),
                    node_name=node, reserved_for=[pod_name] if running else (), owner_pod=pod_name))
    double.seed(b.template("one-gpu", "ml"))


def serve(conn: Any, nodes: int, pods: int, latency: float) -> None:
    """Child process: seed a double, hand its kubeconfig to the parent, serve until told to stop."""
    with K8sDouble(validate=False) as double:
        start = time.perf_counter()
        seed(double, nodes, pods)
        if latency:
            double.delay(latency)  # every request: a remote API server's round trip
        conn.send((double.kubeconfig_path(), time.perf_counter() - start))
        conn.recv()


def timed(fn: Callable[[], Any], repeat: int) -> tuple[list[float], Any]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return times, result


def med(times: list[float]) -> float:
    return statistics.median(times)


def spread(times: list[float]) -> str:
    return f"{med(times):7.3f} s  ({min(times):.3f}-{max(times):.3f})"


def verdict(seconds: float, target: float) -> str:
    return f"target <= {target:.3f} s  {'PASS' if seconds <= target else 'MISS'}"


def raw_pages(api: Any, path: str, page_size: int) -> tuple[list[Any], float]:
    """The bare paginated list: HTTP GETs with limit/continue and json.loads of each page, nothing
    else, through the kubernetes package's own urllib3 client (`api`, a kubernetes ApiClient), not
    ours: the floor is what any client pays.  Returns the pages and the seconds spent in json.loads."""
    pages, token, decode = [], "", 0.0
    while True:
        query: list[tuple[str, Any]] = [("limit", page_size)] + ([("continue", token)] if token else [])
        method, url, headers, _, _ = api.param_serialize(
            method="GET", resource_path=path, query_params=query,
            header_params={"Accept": "application/json"}, auth_settings=["BearerToken"])
        body = api.call_api(method, url, header_params=headers).read()
        start = time.perf_counter()
        with collector_paused():  # any client can do this; describe does (see kubectl_gpu/collector.py)
            page = json.loads(body)
        decode += time.perf_counter() - start
        pages.append(page)
        token = page["metadata"].get("continue") or ""
        if not token:
            return pages, decode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--page-size", type=int, default=None, help="floor page size (default: what lists use)")
    parser.add_argument("--in-process", action="store_true", help="run the double in this process")
    parser.add_argument("--latency-ms", type=float, default=0.0,
                        help="add this round-trip latency to every request (a remote API server)")
    args = parser.parse_args()

    if args.in_process:
        double = K8sDouble(validate=False).start()
        start = time.perf_counter()
        seed(double, args.nodes, args.pods)
        if args.latency_ms:
            double.delay(args.latency_ms / 1000)
        kubeconfig, seed_s = double.kubeconfig_path(), time.perf_counter() - start
        stop: Callable[[], None] = double.stop
    else:
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        process = ctx.Process(target=serve, args=(child, args.nodes, args.pods, args.latency_ms / 1000), daemon=True)
        process.start()
        kubeconfig, seed_s = parent.recv()

        def stop() -> None:
            parent.send("stop")
            process.join(10)

    try:
        run(args, kubeconfig, seed_s)
    finally:
        stop()


def run(args: argparse.Namespace, kubeconfig: str, seed_s: float) -> None:
    # Imported here so the spawned double does not pay for them.
    from click.testing import CliRunner

    from kubectl_gpu.cli.main import main as cli
    from kubectl_gpu.inspect import tables
    from kubectl_gpu.inspect.cluster import cluster_report
    from kubectl_gpu.inspect.dra_nodes import DEFAULT_DRA_NODE_LABELS
    from kubectl_gpu.inspect.fetch import (discover_dra, explain_pod_live, explain_pod_objects, fetch_cluster,
                                          fetch_dra, fetch_pod, pod_claim_objects)
    from kubectl_gpu.k8s import DEFAULT_PAGE_SIZE, connect
    from kubectl_gpu.cli.console import print_lines
    from kubectl_gpu.kubetable import KubeTable

    page_size = args.page_size or DEFAULT_PAGE_SIZE
    where = "in this process" if args.in_process else "in a child process"
    latency = f", {args.latency_ms:g} ms added to every request" if args.latency_ms else ""
    print(f"double {where}{latency}: seeded {args.nodes} nodes x 8 GPUs, {args.pods} pods and claims in "
          f"{seed_s:.1f} s; median of {args.repeat} (min-max)")
    from kubernetes import client as kubernetes_client

    api = connect(kubeconfig).api  # kubectl-gpu's client, as describe uses it
    # The floor's client: the kubernetes package's, with the same server and credentials.
    floor_configuration = kubernetes_client.Configuration()
    floor_configuration.host = api.configuration.server
    floor_configuration.api_key = {"BearerToken": api.configuration.auth_headers()["Authorization"]}
    floor_api = kubernetes_client.ApiClient(floor_configuration)
    dra = discover_dra(api)
    kinds = {"nodes": "/api/v1/nodes", "pods": "/api/v1/pods",
             "resourceclaims": dra.path("resourceclaims"), "resourceslices": dra.path("resourceslices")}

    # ------------------------------------------------------------------ floor
    print(f"\nfloor: bare paginated raw lists, limit={page_size}")
    http_total = decode_total = 0.0
    for kind, path in kinds.items():
        runs = [timed(lambda: raw_pages(floor_api, path, page_size), 1) for _ in range(args.repeat)]
        decode = med([pages_decode[1] for _, pages_decode in runs])
        http = med([times[0] - pages_decode[1] for times, pages_decode in runs])
        pages = runs[0][1][0]
        count = sum(len(p["items"]) for p in pages)
        http_total += http
        decode_total += decode
        print(f"  {kind:15s} {count:6d} objects in {len(pages):3d} pages   HTTP {http:.3f} s   json.loads {decode:.3f} s")
    print(f"  {'serial: HTTP + json.loads':46s} {http_total + decode_total:7.3f} s")

    def concurrent_floor() -> None:
        with ThreadPoolExecutor(max_workers=len(kinds)) as pool:
            list(pool.map(lambda path: raw_pages(floor_api, path, page_size), kinds.values()))

    floor_times, _ = timed(concurrent_floor, args.repeat)
    floor = med(floor_times)
    print(f"  {'concurrent (4 threads): the floor of describe':46s} {spread(floor_times)}")

    # --------------------------------------------------------------- describe
    runner = CliRunner()

    def describe_cli() -> str:
        result = runner.invoke(cli, ["describe", "--kubeconfig", kubeconfig], catch_exceptions=False)
        if result.exit_code != 0:
            raise SystemExit(f"describe failed ({result.exit_code}): {result.output[-2000:]}")
        return result.output

    # What a person waits for: interpreter start-up, imports, describe, output through a pipe; the
    # executable kubectl runs (pip's console script, from compiled bytecode as pip installs it).
    script = Path(sys.executable).parent / "kubectl-gpu"
    command = [sys.executable, str(script)] if script.is_file() else [sys.executable, "-m", "kubectl_gpu.cli.launch"]
    bytecode = tempfile.TemporaryDirectory(prefix="bench-describe-bytecode-")
    env = {**os.environ, "PYTHONPYCACHEPREFIX": bytecode.name}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    process_run([*command, "describe", "--kubeconfig", kubeconfig], env)  # compiles the bytecode

    kubectl = kubectl_binary()
    describe_runs: list[tuple[float, float]] = []
    kubectl_runs: list[tuple[float, float]] = []
    kubectl_bytes = 0
    alternate_floor: list[float] = []  # describe's own lists, measured between the two
    for _ in range(args.repeat):  # alternately, so load on the machine hits all three alike
        describe_runs.append(process_run([*command, "describe", "--kubeconfig", kubeconfig], env)[:2])
        alternate_floor.extend(timed(concurrent_floor, 1)[0])
        if kubectl is not None:
            wall, cpu, out = process_run([kubectl, "--kubeconfig", kubeconfig, "get", "pods", "-A", "-o", "json"])
            kubectl_runs.append((wall, cpu))
            kubectl_bytes = len(out)
    process_times = [wall for wall, _ in describe_runs]

    def start_up() -> None:
        subprocess.run([sys.executable, "-c", "import kubectl_gpu.cli.main, kubectl_gpu.cli.describe, "
                        "kubectl_gpu.inspect.fetch, kubectl_gpu.inspect.tables, kubectl_gpu.inspect.cluster, "
                        "kubectl_gpu.k8s.kubeconfig, kubectl_gpu.k8s.blocking_transport"], cwd=ROOT, check=True, env=env)
    describe_cpu = med([cpu for _, cpu in describe_runs])


    startup_times, _ = timed(start_up, args.repeat)
    describe_times, output = timed(describe_cli, args.repeat)
    describe = med(process_times)
    print(f"\ndescribe: `kubectl gpu describe` (table output)")
    print(f"  {'the command in a new process (people run this)':46s} {spread(process_times)}   "
          f"{verdict(describe, DESCRIBE_TARGET)}; {describe_cpu:.3f} s CPU")
    kubectl_ratio = None
    if kubectl_runs:
        kubectl_wall = med([wall for wall, _ in kubectl_runs])
        kubectl_cpu = med([cpu for _, cpu in kubectl_runs])
        kubectl_ratio = describe / kubectl_wall
        print(f"  {'floor: kubectl get pods -A -o json':46s} {spread([w for w, _ in kubectl_runs])}   "
              f"{kubectl_cpu:.3f} s CPU, {kubectl_bytes / 1e6:.1f} MB")
        print(f"  {'  describe / kubectl (wall)':46s} {kubectl_ratio:7.2f}x   target <= {DESCRIBE_KUBECTL_RATIO}x  "
              f"{'PASS' if kubectl_ratio <= DESCRIBE_KUBECTL_RATIO else 'MISS'};  CPU {describe_cpu / kubectl_cpu:.2f}x")
        print(f"  {'  describe lists alone (floor) / kubectl':46s} {med(alternate_floor) / kubectl_wall:7.2f}x   "
              f"(the raw lists, measured between them: {spread(alternate_floor)})")
    else:
        print("  (no kubectl in .tools/bin or on PATH: scripts/install-tools installs it; no kubectl floor)")
    print(f"  {'  of which python start-up + imports':46s} {spread(startup_times)}")
    print(f"  {'the click command in this process':46s} {spread(describe_times)}")
    print(f"  {'  overhead over the floor':46s} {med(describe_times) - floor:7.3f} s")

    fetch_times, objects = timed(lambda: fetch_cluster(api, dra), args.repeat)
    def model() -> Any:  # as describe makes it: devices and holders were read with the lists
        return cluster_report(objects.nodes, objects.slices, objects.claims, objects.pods, DEFAULT_DRA_NODE_LABELS,
                              devices=objects.devices, holders=objects.holders)

    model_times, report = timed(model, args.repeat)
    payload_times, _ = timed(report.to_dict, args.repeat)

    def table() -> int:
        return table_of(report)

    def first_drawing() -> float:
        """The table as the CLI draws it: once, from a new report whose JSON payload was built."""
        fresh = model()
        fresh.to_dict()
        start = time.perf_counter()
        table_of(fresh)
        return time.perf_counter() - start

    def table_of(report: Any) -> int:
        """Printed as the CLI prints it into a pipe (no colour: a PlainConsole, rich not loaded)."""
        buffer = io.StringIO()
        print_lines(tables.cluster(report), buffer)
        return len(buffer.getvalue())

    # Floor of table rendering: the same cells (plain text, as the tables hold them) laid out with
    # widths and padding and written once: what any kubectl-style printer of this table does.
    cells = [[text for text, _ in row] for part in tables.cluster(report)
             if isinstance(part, KubeTable) for row in part.rows]

    def layout_floor() -> int:
        widths = [max(len(row[i]) for row in cells if len(row) > i) + 3
                  for i in range(max(map(len, cells)))]
        buffer = io.StringIO()
        buffer.write("\n".join("".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells))
        return len(buffer.getvalue())

    render_times, _ = timed(table, args.repeat)
    first_times = [first_drawing() for _ in range(args.repeat)]
    floor_render_times, _ = timed(layout_floor, args.repeat)
    print(f"  {'phase: lists (+ devices, holders as they come)':46s} {spread(fetch_times)}")
    print(f"  {'phase: model (cluster_report, the rest)':46s} {spread(model_times)}")
    print(f"  {'phase: JSON payload (report.to_dict)':46s} {spread(payload_times)}")
    print(f"  {'phase: table rendering, first drawing':46s} {spread(first_times)}   "
          f"{med(first_times) / med(floor_render_times):.1f}x floor")
    print(f"  {'phase: table rendering, drawn again':46s} {spread(render_times)}")
    print(f"  {'  floor: the same cells laid out and written':46s} {spread(floor_render_times)}")

    # ---------------------------------------------------------------- explain
    pending = f"worker-{args.pods - 1}"
    dra_objects = fetch_dra(api, dra)
    pod = fetch_pod(api, "ml", pending)
    claims = pod_claim_objects(api, dra, pod, dra_objects.claims)
    engine_times, explanation = timed(lambda: explain_pod_objects(pod, claims, dra_objects), args.repeat)
    engine = med(engine_times)
    live_times, _ = timed(lambda: explain_pod_live(api, "ml", pending), args.repeat)
    print(f"\nexplain: pod ml/{pending}, one claim over {explanation.devices} devices")
    print(f"  {'engine (from listed objects)':46s} {spread(engine_times)}   {verdict(engine, EXPLAIN_TARGET)}")
    print(f"  {'explain POD live (lists + engine)':46s} {spread(live_times)}")

    totals = report.totals()
    print(f"\nobjects: nodes={len(objects.nodes)} pods decoded={len(objects.pods)} (of {args.pods}: pages naming "
          f"no legacy resource are skipped) claims={len(objects.claims)} "
          f"slices={len(objects.slices)}; describe printed {len(output.splitlines())} lines")
    print(f"summary: {totals['gpus']} GPUs, {totals['allocated']} allocated, {totals['free']} free; "
          f"explain verdict: {explanation.items[0].verdict[:100]}")
    against_kubectl = ("" if kubectl_ratio is None else f", {kubectl_ratio:.2f}x kubectl "
                       f"{'PASS' if kubectl_ratio <= DESCRIBE_KUBECTL_RATIO else 'MISS'} (<= {DESCRIBE_KUBECTL_RATIO}x)")
    print(f"\nRESULT describe {describe:.3f} s {'PASS' if describe <= DESCRIBE_TARGET else 'MISS'} "
          f"(floor {floor:.3f} s){against_kubectl}; explain {engine:.3f} s {'PASS' if engine <= EXPLAIN_TARGET else 'MISS'}")


if __name__ == "__main__":
    main()
