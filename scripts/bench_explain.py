#!/usr/bin/env python3
"""Benchmark: explain one claim over 8,000 devices (1,000 nodes x 8 H100).

Prints seconds for the whole explain on the default (fast) path, from Device objects and from the
ResourceSlice objects themselves (what `kubectl gpu explain` pays: every device is built once per
run), the selectors alone on the fast path and on cel-python, and a floor: a plain Python loop
doing the same comparisons on the same Device objects.  Target (issue 5): explain <= 0.5 s.
Figures only; never a pass/fail test.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kubectl_gpu.cel import CELPY, FAST, compile_selector, devices_from_slice  # noqa: E402
from kubectl_gpu.explain import explain_claim, explain_objects, parse_claim  # noqa: E402

NODES, GPUS = 1000, 8
CLASS = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
SELECTORS = [
    "device.attributes['gpu.nvidia.com'].productName.lowerAscii().matches('h100')",
    "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0",
]


def build_slices() -> list[dict]:
    slices = []
    for n in range(NODES):
        devices = [
            {
                "name": f"gpu-{i}",
                "attributes": {
                    "type": {"string": "gpu"},
                    "uuid": {"string": f"GPU-{n:04d}-{i}"},
                    "productName": {"string": "NVIDIA H100 80GB HBM3" if (n + i) % 4 else "NVIDIA A100-SXM4-40GB"},
                    "driverVersion": {"version": "570.133.20"},
                },
                "capacity": {"memory": {"value": "80Gi" if (n + i) % 4 else "40Gi"}},
            }
            for i in range(GPUS)
        ]
        slices.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"node-{n}"},
                       "spec": {"driver": "gpu.nvidia.com", "nodeName": f"node-{n}", "pool": {"name": f"node-{n}"},
                                "devices": devices}})
    return slices


def timed(label: str, fn) -> float:
    start = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - start
    print(f"{label:<48} {seconds:8.3f} s   ({result})")
    return seconds


def main() -> None:
    slices = build_slices()
    devices = [d for s in slices for d in devices_from_slice(s)]
    claim_object = {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"namespace": "ml", "name": "bench"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu.nvidia.com", "count": 4,
            "selectors": [{"cel": {"expression": e}} for e in SELECTORS]}}]}},
    }
    claim = parse_claim(claim_object)
    print(f"{len(devices)} devices, class selector + {len(SELECTORS)} request selectors\n")

    def floor() -> int:
        count = 0
        for d in devices:
            attrs = d.attributes.get("gpu.nvidia.com", {})
            if d.driver == "gpu.nvidia.com" and attrs["type"] == "gpu":
                if "h100" in attrs["productName"].lower() and d.capacity["gpu.nvidia.com"]["memory"].value >= 40 * 2**30:
                    count += 1
        return count

    def selectors(engine: str):
        compiled = [compile_selector(e, engine) for e in [CLASS, *SELECTORS]]
        return lambda: sum(all(c.matches(d) for c in compiled) for d in devices)

    def explain() -> str:
        result = explain_claim(claim, devices, {})
        return f"{result.requests[0].alternatives[0].matched} match; {result.verdict}"

    def explain_from_slices() -> str:
        result = explain_objects(claims=[claim_object], slices=slices)
        return f"{result.devices} devices built; {result.items[0].verdict}"

    floor_s = timed("floor: plain Python loop", floor)
    fast_s = timed("selectors, fast path (closures)", selectors(FAST))
    explain_s = timed("explain (engine + per-device results, fast)", explain)
    slices_s = timed("explain from ResourceSlices (devices built too)", explain_from_slices)
    sample = devices[:800]
    compiled = [compile_selector(e, CELPY) for e in [CLASS, *SELECTORS]]
    start = time.perf_counter()
    for d in sample:
        all(c.matches(d) for c in compiled)
    celpy_s = (time.perf_counter() - start) * len(devices) / len(sample)
    print(f"{'selectors, cel-python (800 devices, scaled)':<48} {celpy_s:8.3f} s")
    print(f"\nexplain target 0.5 s: engine {explain_s:.3f} s {'PASS' if explain_s <= 0.5 else 'MISS'}, "
          f"from slices {slices_s:.3f} s {'PASS' if slices_s <= 0.5 else 'MISS'}; "
          f"fast path {fast_s / floor_s:.1f}x floor, cel-python {celpy_s / floor_s:.0f}x floor")


if __name__ == "__main__":
    main()
