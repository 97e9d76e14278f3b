#!/usr/bin/env python3
"""Benchmark the one Kubernetes client (kubectl_gpu/k8s) on the webhook's kind of call: many
concurrent GETs of small objects (what a template or label cache miss costs), against the API
double in a child process, as a real API server would be.

In one run, alternating rounds:
  * the floor: the official kubernetes client (urllib3, synchronous) run on a four-thread pool
    inside asyncio, which is how the webhook called the API before the async client;
  * kubectl-gpu's AsyncClient (aiohttp) on the same event loop.

For each: GETs per second (median round) and the client process's own CPU time per GET, which
is what the webhook's event loop pays for each cache miss.

    python3 scripts/bench_client.py [--gets 1000] [--concurrency 16] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PATH = "/api/v1/namespaces/bench"


def serve(conn) -> None:  # the double, in its own process
    from tests.k8sdouble import K8sDouble

    with K8sDouble(validate=False) as double:
        double.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench", "labels": {"a": "b"}}})
        conn.send(double.url)
        conn.recv()


def configuration(url: str):
    from kubernetes import client

    config = client.Configuration()
    config.host = url
    return config


async def floor_round(url: str, gets: int, concurrency: int) -> tuple[float, float]:
    """The official client on four threads (what webhook/kubeapi.py did before the async client)."""
    from kubernetes import client

    api = client.ApiClient(configuration(url))
    pool = ThreadPoolExecutor(max_workers=4)
    loop = asyncio.get_running_loop()

    def get() -> bytes:
        method, path, headers, _, _ = api.param_serialize(method="GET", resource_path=PATH,
                                                          header_params={"Accept": "application/json"},
                                                          auth_settings=["BearerToken"])
        response = api.call_api(method, path, header_params=headers, _request_timeout=5)
        return response.read()

    async def one(limit: asyncio.Semaphore) -> None:
        async with limit:
            await loop.run_in_executor(pool, get)

    try:
        return await _timed(one, gets, concurrency)
    finally:
        pool.shutdown()
        api.close()


async def client_round(url: str, gets: int, concurrency: int) -> tuple[float, float]:
    from kubectl_gpu.k8s import AsyncClient

    api = AsyncClient(configuration(url), 5)

    async def one(limit: asyncio.Semaphore) -> None:
        async with limit:
            await api.get_json(PATH)

    try:
        return await _timed(one, gets, concurrency)
    finally:
        await api.close()


async def _timed(one, gets: int, concurrency: int) -> tuple[float, float]:
    limit = asyncio.Semaphore(concurrency)
    await asyncio.gather(*(one(limit) for _ in range(min(50, gets))))  # warm: connections open
    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one(limit) for _ in range(gets)))
    return gets / (time.perf_counter() - wall), (time.process_time() - cpu) / gets * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gets", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    process = ctx.Process(target=serve, args=(child,), daemon=True)
    process.start()
    url = parent.recv()
    rows: dict[str, list[tuple[float, float]]] = {"floor": [], "client": []}
    try:
        for _ in range(args.rounds):  # alternate, so a noisy neighbour hurts both alike
            rows["floor"].append(asyncio.run(floor_round(url, args.gets, args.concurrency)))
            rows["client"].append(asyncio.run(client_round(url, args.gets, args.concurrency)))
    finally:
        parent.send("stop")
        process.join(10)

    print(f"{args.gets} GETs of one Namespace, {args.concurrency} at a time, API double in a child process; "
          f"median of {args.rounds} rounds")
    names = {"floor": "floor: kubernetes client on 4 threads", "client": "kubectl_gpu.k8s.AsyncClient (aiohttp)"}
    for key, runs in rows.items():
        rate = statistics.median(r for r, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"  {names[key]:40s} {rate:8.0f} GET/s   {cpu:6.0f} us of client CPU per GET")
    floor_cpu = statistics.median(c for _, c in rows["floor"])
    client_cpu = statistics.median(c for _, c in rows["client"])
    print(f"client CPU per GET: {client_cpu / floor_cpu:.0%} of the floor's")


if __name__ == "__main__":
    main()
