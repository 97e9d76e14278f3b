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
and for the Nodes it watches (a GPU node as the API server returns it: GFD labels, kubelet status with
its images and conditions, managedFields): every Node as decoded, and what is kept of it
(kubectl_gpu.cluster.shared_gpus.node_as_read: a GPU node's name and labels).
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


def node_as_the_api_returns_it(name: str) -> dict[str, Any]:
    """A time-sliced GPU node as kubelet, GFD and the device plugin leave it (sizes as on a real node)."""
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
              "node.kubernetes.io/instance-type": "g6.48xlarge", "topology.kubernetes.io/zone": "us-east-1a",
              "topology.kubernetes.io/region": "us-east-1", "nvidia.com/gpu.product": "NVIDIA-L4-SHARED",
              "nvidia.com/gpu.count": "8", "nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.memory": "23034",
              "nvidia.com/gpu.sharing-strategy": "time-slicing", "nvidia.com/gpu.family": "ada-lovelace",
              "nvidia.com/cuda.driver.major": "550", "nvidia.com/cuda.runtime.major": "12",
              "nvidia.com/gpu.deploy.device-plugin": "true", "nvidia.com/gpu.present": "true",
              "feature.node.kubernetes.io/pci-10de.present": "true", "nvidia.com/mig.capable": "false"}
    return {"metadata": {"name": name, "uid": "6c0f9b1e-0000-4000-8000-000000000000", "resourceVersion": "123456",
                         "labels": labels, "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                                                           "nfd.node.kubernetes.io/feature-labels": "x" * 400},
                         "managedFields": [{"manager": m, "operation": "Update", "fieldsV1": {"f:metadata": {
                             "f:labels": {f"f:{k}": {} for k in labels}}}} for m in ("kubelet", "nfd-master", "gfd")]},
            "spec": {"providerID": f"aws:///us-east-1a/i-{name}", "podCIDR": "10.0.0.0/24"},
            "status": {"allocatable": {"cpu": "191", "memory": "750Gi", "nvidia.com/gpu": "32", "pods": "110"},
                       "capacity": {"cpu": "192", "memory": "768Gi", "nvidia.com/gpu": "32", "pods": "110"},
                       "conditions": [{"type": t, "status": "False", "reason": f"Kubelet{t}", "message": "m" * 60,
                                       "lastHeartbeatTime": "2026-11-27T12:00:00Z"} for t in
                                      ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")],
                       "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}, {"type": "Hostname",
                                                                                      "address": name}],
                       "images": [{"names": [f"registry/image-{i}@sha256:{'0' * 64}"], "sizeBytes": 1 << 30}
                                  for i in range(20)],
                       "nodeInfo": {"kernelVersion": "6.1", "osImage": "Ubuntu", "kubeletVersion": "v1.34.1",
                                    "containerRuntimeVersion": "containerd://1.7", "machineID": "a" * 32}}}


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
    from kubectl_gpu.cluster.shared_gpus import node_as_read
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
        node_texts = [json.dumps(node_as_the_api_returns_it(f"node-{i}")) for i in range(nodes)]
        all_nodes, decoded = held(lambda: [json.loads(t) for t in node_texts])
        del decoded
        kept_nodes, decoded = held(lambda: [node_as_read(json.loads(t)) for t in node_texts])
        del decoded
        print(f"{'':>6} {'':>7} Nodes: {all_nodes:.1f} MiB as decoded, {kept_nodes:.1f} MiB kept (node_as_read)")

if __name__ == "__main__":
    main()
