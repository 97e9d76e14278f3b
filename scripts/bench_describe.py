#!/usr/bin/env python3
"""Benchmark (not a test): `describe` and `explain` on a large cluster served by the API double.

1,000 nodes x 8 GPUs (one ResourceSlice each), 10,000 pods and 10,000 ResourceClaims (8,000 of
them allocated).  Prints, in the same run:
  floor      the bare paginated list of the same objects (what any client must pay)
  describe   cluster summary (fetch + model), target <= 2 s
  explain    one pending claim over 8,000 devices: the engine alone (target <= 0.5 s), and the
             live `explain POD` path including its lists

    python3 scripts/bench_describe.py [--nodes 1000] [--pods 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kubectl_gpu.inspect.cluster import cluster_report  # noqa: E402
from kubectl_gpu.inspect.dra_nodes import DEFAULT_DRA_NODE_LABELS  # noqa: E402
from kubectl_gpu.inspect.live import (discover_dra, explain_pod_live, explain_pod_objects,  # noqa: E402
                                      fetch_cluster, fetch_dra, pod_claim_objects)
from kubectl_gpu.k8s import connect, list_objects  # noqa: E402
from tests import builders as b  # noqa: E402
from tests.k8sdouble import K8sDouble  # noqa: E402


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


def timed(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    with K8sDouble(validate=False) as double:
        start = time.perf_counter()
        seed(double, args.nodes, args.pods)
        print(f"seeded {args.nodes} nodes x 8 GPUs, {args.pods} pods and claims "
              f"in {time.perf_counter() - start:.1f} s")
        connection = connect(double.kubeconfig_path())
        api = connection.api
        dra = discover_dra(api)

        def bare_lists():
            return [len(list_objects(api, p)) for p in (
                "/api/v1/nodes", "/api/v1/pods", dra.path("resourceclaims"), dra.path("resourceslices"))]

        floor, counts = timed(bare_lists, args.repeat)

        def describe():
            objects = fetch_cluster(api, dra)
            return cluster_report(objects.nodes, objects.slices, objects.claims, objects.pods,
                                  DEFAULT_DRA_NODE_LABELS)

        describe_time, report = timed(describe, args.repeat)
        objects = fetch_cluster(api, dra)
        model_time, _ = timed(lambda: cluster_report(objects.nodes, objects.slices, objects.claims, objects.pods,
                                                     DEFAULT_DRA_NODE_LABELS), args.repeat)

        pending = f"worker-{args.pods - 1}"
        dra_objects = fetch_dra(api, dra)
        pod = double.get("pod", pending, "ml")
        claims = pod_claim_objects(api, dra, pod, dra_objects.claims)
        engine_time, explanation = timed(lambda: explain_pod_objects(pod, claims, dra_objects), args.repeat)
        live_time, _ = timed(lambda: explain_pod_live(api, "ml", pending), args.repeat)

        totals = report.totals()
        print(f"objects listed: nodes={counts[0]} pods={counts[1]} claims={counts[2]} slices={counts[3]} "
              f"(devices: {explanation.devices})")
        print(f"{'floor: bare paginated lists (serial)':48s} {floor:7.3f} s")
        print(f"{'describe (parallel lists + model)':48s} {describe_time:7.3f} s   target <= 2.000 s  "
              f"{'OK' if describe_time <= 2 else 'MISSED'}")
        print(f"{'  of which the pure model':48s} {model_time:7.3f} s")
        print(f"{'explain one claim over all devices (engine)':48s} {engine_time:7.3f} s   target <= 0.500 s  "
              f"{'OK' if engine_time <= 0.5 else 'MISSED'}")
        print(f"{'explain POD live (lists + engine)':48s} {live_time:7.3f} s")
        print(f"summary: {totals['gpus']} GPUs, {totals['allocated']} allocated, {totals['free']} free; "
              f"explain verdict: {explanation.items[0].verdict[:100]}")


if __name__ == "__main__":
    main()
