"""How fast the double serves a describe-sized cluster: ``python3 -m tests.k8sdouble.bench``.

1,000 nodes x 8 GPUs (one ResourceSlice per node), 10,000 pods and 10,000 ResourceClaims, listed
with limit=500 pages through the real kubernetes client, raw (``_preload_content=False``) and
typed. The raw figure includes json.loads of each page (to find the continue token); the floor is
json.loads of the same bytes in-process, what any client pays anyway, so raw/floor near 1 means
the double itself costs little.
"""
from __future__ import annotations

import argparse
import gc
import json
import time

from kubernetes import client

from .double import K8sDouble

PAGE = 500


def cluster(nodes: int, gpus: int, pods: int) -> list[dict]:
    docs: list[dict] = []
    for n in range(nodes):
        node = f"gpu-node-{n:04d}"
        docs.append({"apiVersion": "v1", "kind": "Node",
                     "metadata": {"name": node, "labels": {"ack.node.gpu.schedule": "disabled"}},
                     "status": {"capacity": {"cpu": "96"}, "allocatable": {"cpu": "96"}}})
        docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                     "metadata": {"name": f"{node}-gpu.nvidia.com"},
                     "spec": {"driver": "gpu.nvidia.com", "nodeName": node,
                              "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                              "devices": [{"name": f"gpu-{g}", "attributes": {
                                  "type": {"string": "gpu"}, "productName": {"string": "NVIDIA H100 80GB HBM3"},
                                  "uuid": {"string": f"GPU-{n:04d}-{g}"}, "driverVersion": {"version": "570.1.0"}},
                                  "capacity": {"memory": {"value": "80Gi"}}} for g in range(gpus)]}})
    for p in range(pods):
        ns, name, node = f"team-{p % 20}", f"train-{p:05d}", f"gpu-node-{p % nodes:04d}"
        docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                     "metadata": {"name": f"{name}-gpu", "namespace": ns},
                     "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}},
                     "status": {"allocation": {"devices": {"results": [
                         {"request": "gpu", "driver": "gpu.nvidia.com", "pool": node, "device": f"gpu-{p % gpus}"}]}},
                         "reservedFor": [{"resource": "pods", "name": name, "uid": f"uid-{p}"}]}})
        docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
                     "spec": {"nodeName": node, "containers": [{"name": "main", "image": "trainer",
                                                               "resources": {"claims": [{"name": "gpu"}]}}],
                              "resourceClaims": [{"name": "gpu", "resourceClaimName": f"{name}-gpu"}]},
                     "status": {"phase": "Running"}})
    return docs


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def list_all_raw(list_fn) -> list[bytes]:
    bodies, token = [], None
    while True:
        body = list_fn(limit=PAGE, _continue=token, _preload_content=False).read()
        bodies.append(body)
        token = json.loads(body)["metadata"].get("continue")
        if not token:
            return bodies


def list_all_typed(list_fn) -> int:
    count, token = 0, None
    while True:
        page = list_fn(limit=PAGE, _continue=token)
        count += len(page.items)
        token = page.metadata._continue
        if not token:
            return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--pods", type=int, default=10_000)
    args = parser.parse_args()

    start_s, double = timed(lambda: K8sDouble().start())
    with double:
        docs = cluster(args.nodes, args.gpus, args.pods)
        seed_s, _ = timed(lambda: double.seed(docs))
        api = double.api_client()
        core, resource = client.CoreV1Api(api), client.ResourceV1Api(api)
        print(f"start: {start_s * 1000:.1f} ms; seed {len(docs)} objects: {seed_s:.2f} s")
        for label, fn in (("pods", core.list_pod_for_all_namespaces),
                          ("resourceclaims", resource.list_resource_claim_for_all_namespaces),
                          ("resourceslices", resource.list_resource_slice),
                          ("nodes", core.list_node)):
            list_all_raw(fn)  # first pass encodes and caches each object's JSON
            gc.collect()
            raw_s, bodies = timed(lambda: list_all_raw(fn))
            gc.collect()
            floor_s, _ = timed(lambda: all(json.loads(b) for b in bodies))
            typed_s, count = timed(lambda: list_all_typed(fn))
            print(f"{label:15} {count:6d} objects in {len(bodies):3d} pages: raw {raw_s:.3f} s "
                  f"(floor json.loads {floor_s:.3f} s, {raw_s / floor_s:.1f}x), typed client {typed_s:.2f} s")


if __name__ == "__main__":
    main()
