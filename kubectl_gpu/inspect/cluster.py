"""`describe` with no arguments: every GPU node at a glance, with the cluster's totals."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from kubectl_gpu.dra.facts import REPORT_API_VERSION
from kubectl_gpu.collector import with_collector_paused
from kubectl_gpu.inspect.devices import DeviceKey, SliceDevice, current_devices
from kubectl_gpu.inspect.dra_nodes import NodeLabel
from kubectl_gpu.inspect.findings import Finding, sort_findings
from kubectl_gpu.inspect.holders import Holder, holders_by_device
from kubectl_gpu.inspect.legacy import LegacyPod, is_active, legacy_pod
from kubectl_gpu.inspect.nodes import ALLOCATED, FREE, SHARED, DeviceRow, NodeReport, node_report


@dataclass(frozen=True)
class ClusterReport:
    nodes: tuple[NodeReport, ...]  # nodes with anything GPU-related, by name
    # Devices no single node owns (network-attached, nodeSelector/allNodes slices), by pool.
    shared_pools: tuple[tuple[str, tuple[DeviceRow, ...]], ...]
    findings: tuple[Finding, ...]

    def totals(self) -> dict[str, int]:
        """GPUs are physical GPUs; allocated/shared/free count whole GPUs, MIG devices are apart."""
        counts: Counter[str] = Counter()
        for node in self.nodes:
            summary = node.summary
            counts["nodes"] += 1
            counts["draNodes"] += node.is_dra_node
            counts["gpus"] += summary.gpu_count
            counts.update(summary.states)
            counts["mig"] += len(node.mig_rows)
            counts["migUsed"] += summary.mig_used
            counts["legacyPods"] += len(node.legacy_pods)
        return {"nodes": counts["nodes"], "draNodes": counts["draNodes"], "gpus": counts["gpus"],
                "allocated": counts[ALLOCATED], "shared": counts[SHARED], "free": counts[FREE],
                "migDevices": counts["mig"], "migDevicesInUse": counts["migUsed"],
                "legacyGpuPods": counts["legacyPods"]}

    def by_product(self) -> list[dict[str, Any]]:
        """Totals per product (productName), as people buy and plan GPUs."""
        products: dict[str, Counter[str]] = {}
        for node in self.nodes:
            for name, counts in node.summary.products.items():
                total = products.get(name)
                if total is None:
                    total = products[name] = Counter()
                total.update(counts)
        return [{"product": name, "gpus": c["gpus"], "allocated": c[ALLOCATED], "shared": c[SHARED],
                 "free": c[FREE], "migDevices": c["mig"], "migDevicesInUse": c["migUsed"]}
                for name, c in sorted(products.items())]

    def to_dict(self) -> dict[str, Any]:
        return {
            "apiVersion": REPORT_API_VERSION,
            "kind": "GpuClusterSummary",
            "totals": self.totals(),
            "byProduct": self.by_product(),
            "nodes": [_node_summary(n) for n in self.nodes],
            "sharedPools": [{"pool": pool, "devices": len(rows),
                             "allocated": sum(1 for r in rows if r.state != FREE)}
                            for pool, rows in self.shared_pools],
            "findings": [f.to_dict() for f in self.findings],
        }


@with_collector_paused
def build_node_reports(nodes: Iterable[Mapping[str, Any]], devices: Iterable[SliceDevice],
                       holders: Mapping[DeviceKey, list[Holder]], pods: Iterable[Mapping[str, Any]],
                       dra_labels: Iterable[NodeLabel], *,
                       only_gpu_nodes: bool = True) -> tuple[tuple[NodeReport, ...],
                                                             dict[str, list[DeviceRow]]]:
    """Node reports for `nodes`, and rows of devices attached to no single node, by pool;
    `holders` as holders_by_device reads them from the claims."""
    labels = tuple(dra_labels)
    by_node: dict[str | None, list[SliceDevice]] = {}
    for device in devices:
        by_node.setdefault(device.node, []).append(device)
    legacy_by_node: dict[str | None, list[LegacyPod]] = {}
    for pod in pods:
        if not is_active(pod):
            continue
        found = legacy_pod(pod)
        if found is not None:
            legacy_by_node.setdefault(found.node, []).append(found)
    reports = []
    for node in nodes:
        name = (node.get("metadata") or {}).get("name")
        report = node_report(node, by_node.get(name, ()), holders, legacy_by_node.get(name, ()),
                             labels)
        if report.has_gpus or not only_gpu_nodes:
            reports.append(report)
    pools: dict[str, list[DeviceRow]] = {}
    for device in by_node.get(None, ()):
        pools.setdefault(f"{device.driver}/{device.pool}", []).append(
            DeviceRow(device, tuple(holders.get(device.key, ()))))
    return tuple(sorted(reports, key=lambda r: r.name)), pools


@with_collector_paused
def cluster_report(nodes: Iterable[Mapping[str, Any]], slices: Iterable[Mapping[str, Any]],
                   claims: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]],
                   dra_labels: Iterable[NodeLabel], namespace: str | None = None, *,
                   devices: Iterable[SliceDevice] | None = None,
                   holders: Mapping[DeviceKey, list[Holder]] | None = None) -> ClusterReport:
    """The cluster's GPUs; with `namespace`, the part its pods use: the nodes and pools where its
    claims hold devices or its pods hold device-plugin GPUs.  Every claim still decides whether a
    device is taken (a device another namespace holds is not free), but the legacy pods counted
    and judged are the namespace's own.  `devices` and `holders`, when given, are those already
    read from `slices` and `claims` (fetch_cluster reads them while its other lists go on)."""
    if namespace is not None:
        pods = [p for p in pods if (p.get("metadata") or {}).get("namespace") == namespace]
    reports, pools = build_node_reports(nodes, current_devices(slices) if devices is None else devices,
                                        holders_by_device(claims) if holders is None else holders, pods,
                                        dra_labels)
    if namespace is not None:
        reports = tuple(r for r in reports if r.legacy_pods or _held_by(r.devices, namespace))
        pools = {pool: rows for pool, rows in pools.items() if _held_by(rows, namespace)}
    findings = [f for r in reports for f in r.findings]
    return ClusterReport(reports, tuple(sorted((p, tuple(rows)) for p, rows in pools.items())),
                         sort_findings(findings))


def _held_by(rows: Iterable[DeviceRow], namespace: str) -> bool:
    prefix = f"{namespace}/"
    return any(h.claim.startswith(prefix) for row in rows for h in row.holders)


def _node_summary(node: NodeReport) -> dict[str, Any]:
    gpus = node.gpu_rows
    return {
        "name": node.name,
        "draNode": node.is_dra_node,
        "gpus": node.gpu_count,
        "allocated": node.count(ALLOCATED),
        "shared": node.count(SHARED),
        "free": node.count(FREE),
        "migDevices": len(node.mig_rows),
        "migDevicesInUse": node.mig_used,
        "products": sorted({r.device.product for r in (*gpus, *node.mig_rows) if r.device.product}),
        "memory": sorted({r.device.memory for r in gpus if r.device.memory}),
        "legacyResources": [r.to_dict() for r in node.legacy_resources],
        "legacyGpuPods": len(node.legacy_pods),
        "findings": [f.code for f in node.findings],
    }
