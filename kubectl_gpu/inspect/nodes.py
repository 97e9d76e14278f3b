"""`describe node`: a node's GPUs from both worlds, who holds each, and what is wrong."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property, lru_cache
from typing import Any, Iterable, Mapping

from kubectl_gpu.dra.facts import DEVICE_PLUGIN_GPU, REPORT_API_VERSION
from kubectl_gpu.dra.quantity import format_bytes, format_plain, parse_quantity, QuantityError
from kubectl_gpu.inspect.devices import DeviceKey, SliceDevice
from kubectl_gpu.inspect.double_counting import double_counting_finding
from kubectl_gpu.inspect import hami_device_plugin
from kubectl_gpu.inspect.dra_nodes import GPU_DRA_DRIVERS, NodeLabel, matching_label
from kubectl_gpu.inspect.findings import Finding
from kubectl_gpu.inspect.holders import Holder, exclusive_holders
from kubectl_gpu.inspect.legacy import LegacyPod, LegacyResource, node_legacy_resources

FREE, ALLOCATED, SHARED = "free", "allocated", "shared"


@dataclass(frozen=True, init=False)
class DeviceRow:
    device: SliceDevice
    holders: tuple[Holder, ...]
    state: str  # FREE, ALLOCATED or SHARED: read for every count and table row, so decided once

    def __init__(self, device: SliceDevice, holders: tuple[Holder, ...]) -> None:
        # One dict update, not a frozen dataclass's object.__setattr__ per field (8,000 rows).
        self.__dict__.update(device=device, holders=holders, state=_state(device, holders))

    @property
    def consumed(self) -> dict[str, str]:
        """Capacity consumed by all claims sharing the device (KEP-5075), name -> "used/total"."""
        used: dict[str, Fraction] = {}
        for holder in self.holders:
            for name, amount in holder.consumed_capacity.items():
                try:
                    used[name] = used.get(name, Fraction(0)) + parse_quantity(amount)
                except QuantityError:
                    continue
        out = {}
        for name, amount in used.items():
            total = self.device.capacity_of(name)
            out[name] = f"{_format(name, amount)}/{total}" if total else _format(name, amount)
        return out

    @property
    def pods(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p for h in self.holders for p in h.pods))

    def to_dict(self) -> dict[str, Any]:
        out = self.device.to_dict()
        out.update({"state": self.state, "holders": [h.to_dict() for h in self.holders],
                    "consumedCapacity": self.consumed})
        return out


def _state(device: SliceDevice, holders: tuple[Holder, ...]) -> str:
    if not holders:
        return FREE
    taking = exclusive_holders(holders)
    if not taking:
        return FREE
    if len(taking) > 1 or device.allow_multiple_allocations:
        return SHARED
    return ALLOCATED


@dataclass(frozen=True)
class GpuSlot:
    """One physical GPU of a node, for the allocation picture: its state, and the states of its
    MIG devices when it is partitioned (MIG slices are drawn inside their GPU)."""

    state: str
    mig: tuple[str, ...] = ()
    legacy: bool = False  # counted from the device plugin's resources and its pods, not DRA

    @property
    def used(self) -> bool:
        return self.state != FREE


@dataclass(frozen=True, eq=False)
class NodeSummary:
    """A node's GPUs counted once (NodeReport.summary)."""

    gpu_count: int  # physical GPUs: whole ones, and MIG-partitioned ones once
    states: Counter[str]  # whole GPUs by state
    mig_used: int  # MIG devices in use
    slots: tuple[GpuSlot, ...]  # the allocation picture of the DRA GPUs, one slot per GPU
    legacy_slots: tuple[GpuSlot, ...]  # the device plugin's nvidia.com/gpu GPUs, as many used as its pods hold
    products: Mapping[str, Counter[str]]  # product -> gpus, states, mig, migUsed (ClusterReport.by_product)
    double_counted: bool  # a double-counting finding: its GPUs are counted by device plugin and DRA

    @cached_property
    def bar(self) -> str:
        """The DRA GPUs: `██░░░░░░ 2/8`; `█[■■□□□□□] 2/2` for a GPU split into 7 MIG devices (2 in
        use); `!` when double counted; "-" without any.  Drawn once, however often it is printed."""
        return _draw(self.slots, self.double_counted)

    @cached_property
    def legacy_bar(self) -> str:
        """The device plugin's GPUs, as the pods hold them: `██▓░ 3/4` (two whole, half of one)."""
        return _draw(self.legacy_slots, self.double_counted)


def _draw(slots: tuple[GpuSlot, ...], double_counted: bool) -> str:
    if not slots:
        return "-"
    marks = "".join(f"[{''.join(MIG_MARKS[m] for m in slot.mig)}]" if slot.mig else BAR_MARKS[slot.state]
                    for slot in slots)
    used = sum(1 for slot in slots if slot.used)
    return f"{marks} {used}/{len(slots)}" + (f" {DOUBLE_COUNTED}" if double_counted else "")


# A whole DRA GPU's slot by its state: slots are frozen, so 8,000 GPUs share three.
_WHOLE_GPU_SLOTS = {state: GpuSlot(state) for state in (FREE, ALLOCATED, SHARED)}

# The allocation picture: one mark per GPU, MIG devices inside their GPU's brackets.
BAR_MARKS = {ALLOCATED: "█", SHARED: "▓", FREE: "░"}
MIG_MARKS = {ALLOCATED: "■", SHARED: "■", FREE: "□"}
DOUBLE_COUNTED = "!"


@dataclass(frozen=True)
class NodeReport:
    name: str
    labels: Mapping[str, str]
    dra_label: NodeLabel | None
    devices: tuple[DeviceRow, ...]
    legacy_resources: tuple[LegacyResource, ...]
    legacy_pods: tuple[LegacyPod, ...]
    findings: tuple[Finding, ...]

    @cached_property
    def is_dra_node(self) -> bool:
        """Labelled as a DRA node, or publishing a GPU DRA driver's devices, NVIDIA's or HAMi's (a GPU
        Operator install of the DRA driver sets no label, nor does HAMi's chart)."""
        return self.dra_label is not None or bool(self.publishing_drivers)

    @cached_property
    def publishing_drivers(self) -> tuple[str, ...]:
        """The GPU DRA drivers whose devices this node publishes, sorted (`describe node` names them)."""
        return tuple(sorted({r.device.driver for r in self.devices if r.device.driver in GPU_DRA_DRIVERS}))

    # Cached: the summary table, its JSON and the totals each read them for 1,000 nodes.
    @cached_property
    def gpu_rows(self) -> tuple[DeviceRow, ...]:
        """Whole GPUs (and vGPUs) as published; a MIG-partitioned GPU is published as its MIG
        devices instead (NVIDIA driver), so it is not among these."""
        return tuple(r for r in self.devices if r.device.is_gpu and not r.device.is_mig)

    @cached_property
    def mig_rows(self) -> tuple[DeviceRow, ...]:
        return tuple(r for r in self.devices if r.device.is_mig)

    @cached_property
    def summary(self) -> NodeSummary:
        """Everything the summary table, its picture, its JSON and the cluster's totals read about
        this node, from one pass over its devices (a 1,000-node table reads each node five ways)."""
        gpu_rows = self.gpu_rows
        gpu_states = [row.state for row in gpu_rows]
        states = Counter(gpu_states)
        slots = [_WHOLE_GPU_SLOTS[state] for state in gpu_states]
        gpu_uuids = {row.device.uuid for row in gpu_rows}
        # GPUs counted under a product: by UUID, a partitioned one by its parentUUID.
        uuids = {uuid or "" for uuid in gpu_uuids}
        by_product: dict[str, list[str]] = {}
        for row, state in zip(gpu_rows, gpu_states):
            product = row.device.product or "unknown"
            found = by_product.get(product)
            if found is None:
                by_product[product] = [state]
            else:
                found.append(state)
        products: dict[str, Counter[str]] = {}
        for product, product_states in by_product.items():
            products[product] = counts = Counter({"gpus": len(product_states)})
            counts.update(product_states)
        by_parent: dict[str, list[str]] = {}
        mig_used = 0
        for row in self.mig_rows:
            state = row.state
            parent = row.device.parent_uuid or row.device.name
            by_parent.setdefault(parent, []).append(state)
            mig_used += state != FREE
            counts = products.setdefault(row.device.product or "unknown", Counter())
            if parent not in uuids:  # a partitioned GPU counts once, under its first MIG device's product
                uuids.add(parent)
                counts["gpus"] += 1
            counts["mig"] += 1
            counts["migUsed"] += state != FREE
        for mig_states in by_parent.values():
            slots.append(GpuSlot(SHARED if any(st != FREE for st in mig_states) else FREE, tuple(mig_states)))
        return NodeSummary(
            gpu_count=len(gpu_rows) + len(set(by_parent) - gpu_uuids),
            states=states,
            mig_used=mig_used,
            slots=tuple(slots),
            legacy_slots=tuple(self._legacy_slots()),
            products=products,
            double_counted=any(f.code == "double-counting" for f in self.findings),
        )

    @property
    def gpu_count(self) -> int:
        """Physical GPUs: MIG devices are slices of one, never GPUs themselves (2 GPUs, one split
        into 7 MIG devices, are 2 GPUs and 7 MIG devices)."""
        return self.summary.gpu_count

    def count(self, state: str) -> int:
        """Whole GPUs in `state`."""
        return self.summary.states[state]

    @property
    def mig_used(self) -> int:
        return self.summary.mig_used

    @property
    def slots(self) -> tuple[GpuSlot, ...]:
        """The node's DRA GPUs as the allocation picture shows them, MIG devices grouped inside their
        GPU; else, on a device-plugin node, its nvidia.com/gpu GPUs, as many used as its pods hold
        (whole GPUs allocated, a fraction shared)."""
        return self.summary.slots or self.summary.legacy_slots

    def _legacy_slots(self) -> Iterable[GpuSlot]:
        offered = next((r for r in self.legacy_resources if r.name == DEVICE_PLUGIN_GPU), None)
        held = Fraction(0)
        for pod in self.legacy_pods:
            if not pod.holds_device_plugin_gpus:
                continue
            for request in pod.requests:
                if request.resource == DEVICE_PLUGIN_GPU:
                    try:
                        held += parse_quantity(request.amount)
                    except QuantityError:
                        continue
        try:
            total = int(parse_quantity(offered.allocatable)) if offered else 0
        except QuantityError:
            total = 0
        whole, fraction = int(held), held - int(held)
        total = max(total, whole + (1 if fraction else 0))
        for i in range(total):
            state = ALLOCATED if i < whole else SHARED if i == whole and fraction else FREE
            yield GpuSlot(state, legacy=True)

    @property
    def has_gpus(self) -> bool:
        return bool(self.devices or self.legacy_resources or self.legacy_pods or self.dra_label)

    def to_dict(self) -> dict[str, Any]:
        return {
            "apiVersion": REPORT_API_VERSION,
            "kind": "GpuNode",
            "name": self.name,
            "draNode": self.is_dra_node,
            "draNodeLabel": str(self.dra_label) if self.dra_label else None,
            "devices": [r.to_dict() for r in self.devices],
            "legacyResources": [r.to_dict() for r in self.legacy_resources],
            "legacyPods": [p.to_dict() for p in self.legacy_pods],
            "findings": [f.to_dict() for f in self.findings],
        }


def node_report(node: Mapping[str, Any], devices: Iterable[SliceDevice],
                holders: Mapping[DeviceKey, list[Holder]], legacy_pods: Iterable[LegacyPod],
                dra_labels: Iterable[NodeLabel]) -> NodeReport:
    """The report of one node; `devices` and `legacy_pods` are those on this node."""
    metadata = node.get("metadata") or {}
    name = str(metadata.get("name") or "")
    labels = dict(metadata.get("labels") or {})
    dra_label = matching_label(labels, dra_labels)
    rows = tuple(DeviceRow(d, tuple(holders.get(d.key, ()))) for d in
                 sorted(devices, key=_device_order))
    legacy = node_legacy_resources(node)
    pods = tuple(sorted(legacy_pods, key=lambda p: p.ref))
    finding = double_counting_finding(name, dra_label, legacy, pods, [r.device for r in rows],
                                      hami_device_plugin.registered_gpus(node))
    return NodeReport(name, labels, dra_label, rows, legacy, pods,
                      (finding,) if finding else ())


def _format(name: str, amount: Fraction) -> str:
    return format_bytes(amount) if name.rsplit("/", 1)[-1] == "memory" else format_plain(amount)


_DIGITS = re.compile(r"(\d+)")


def _device_order(device: SliceDevice) -> tuple:
    return device.driver, _natural(device.name)


@lru_cache(maxsize=4096)  # nodes publish the same device names (gpu-0 ... gpu-7): split once
def _natural(text: str) -> tuple:
    # gpu-2 before gpu-10, as people count.
    return tuple(int(p) if p.isdigit() else p for p in _DIGITS.split(text))
