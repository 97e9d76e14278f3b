#!/usr/bin/env python3
"""Memory the webhook's cluster profile holds for a fleet: every ResourceSlice is watched.

In one run, on this machine, for each fleet size (nodes x 8 GPUs, one slice per node as the NVIDIA
DRA driver publishes them, each as the API server returns it: with the managedFields its write
recorded, labels and an owner reference), the Python heap (tracemalloc, after a full collection)
held by:
  * floor: the profile's devices alone (kubectl_gpu.dra.devices), which any profile needs;
  * before: the watch's copy of every slice as decoded, plus the devices;
  * after: the copy of only what the profile reads, strings shared
    (webhook.cluster_profile.slice_as_read), plus the devices.
Add the server's idle RSS (the interpreter, aiohttp, the translation core: about 60 MiB) and the
allocator's slack to size the pod's memory (docs/webhook.md, "Sizing").

    python3 scripts/bench_webhook_memory.py [--nodes 1000 4000]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tracemalloc
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MIB = 1024 * 1024


def slice_as_the_api_returns_it() -> str:
    """One driver-published slice, written through the API double and read back as JSON text."""
    import kubernetes

    from tests import builders
    from tests.k8sdouble import K8sDouble

    obj = builders.gpu_slice("node-0")
    obj["metadata"].update(labels={"app.kubernetes.io/name": "nvidia-dra-driver-gpu"}, ownerReferences=[
        {"apiVersion": "v1", "kind": "Node", "name": "node-0", "uid": "6c0f9b1e-0000-4000-8000-000000000000",
         "controller": True}])
    with K8sDouble() as double:
        kubernetes.client.ResourceV1Api(double.api_client()).create_resource_slice(obj)
        return json.dumps(double.get("ResourceSlice", "node-0-gpu.nvidia.com-0"))


def held(build: Callable[[], Any]) -> tuple[float, Any]:
    """MiB the heap grows by while the result of ``build()`` is alive."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    value = build()
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return (after - before) / MIB, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 4000])
    args = parser.parse_args()

    from kubectl_gpu.cluster.profile import profile_from_discovery, stamped
    from webhook.cluster_profile import slice_as_read

    text = slice_as_the_api_returns_it()
    version = {"major": "1", "minor": "34"}
    group = {"name": "resource.k8s.io", "versions": [{"groupVersion": "resource.k8s.io/v1", "version": "v1"}],
             "preferredVersion": {"groupVersion": "resource.k8s.io/v1", "version": "v1"}}
    print(f"one slice as the API returns it: {len(text):,} bytes of JSON, "
          f"{len(json.dumps(json.loads(text)['spec'])):,} of them its spec")
    print(f"{'nodes':>6} {'GPUs':>7} {'floor':>8} {'before':>8} {'after':>8}  (MiB of heap)")
    for nodes in args.nodes:
        texts = [text.replace("node-0", f"node-{i}") for i in range(nodes)]
        full, decoded = held(lambda: [json.loads(t) for t in texts])
        del decoded
        kept, slices = held(lambda: [slice_as_read(json.loads(t)) for t in texts])
        devices, profile = held(lambda: profile_from_discovery(
            "bench", version, group, stamped(slices, "resource.k8s.io/v1", "ResourceSlice"), {}).devices)
        print(f"{nodes:>6} {len(profile):>7} {devices:>8.1f} {full + devices:>8.1f} {kept + devices:>8.1f}")
        del slices, profile

if __name__ == "__main__":
    main()
