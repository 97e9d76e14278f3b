"""Capacity on both sides of a migration: device-plugin GPUs on legacy nodes, DRA devices on DRA nodes.

Pure. Legacy pods are placed first-fit-decreasing on the legacy nodes' allocatable extended
resources (what the scheduler's NodeResourcesFit checks). DRA pods are placed by matching each
claim request against the devices with explain's engine (the scheduler's selector evaluation,
class selectors first), then taking free devices on one node: whole devices for exclusive
requests, capacity (KEP-5075 consumable shares) for requests that ask for capacity on devices
that allow multiple allocations.

Nodes that do not run the DRA driver yet publish no ResourceSlices; their devices are predicted
from GPU Feature Discovery's labels (product, memory, family, count) with the NVIDIA driver's
attribute names, so the plan can check a wave before it happens. A prediction is marked as one.
"""
from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from kubectl_gpu.dra.devices import Device, devices_from_slice, InvalidResourceSlice
from kubectl_gpu.dra.devices import current_slices
from kubectl_gpu.core import TargetDriver, family_of
from kubectl_gpu.dra import hami
from kubectl_gpu.dra.quantity import parse_quantity, QuantityError
from kubectl_gpu.dra.facts import GFD_COUNT_LABEL as GFD_COUNT
from kubectl_gpu.dra.facts import GFD_FAMILY_LABEL as GFD_FAMILY
from kubectl_gpu.dra.facts import GFD_MEMORY_LABEL as GFD_MEMORY
from kubectl_gpu.dra.facts import GFD_PRODUCT_LABEL as GFD_PRODUCT
from kubectl_gpu.dra.facts import NEWEST_DRA_API_VERSION, NVIDIA_DRIVER, architecture_of_gfd_family
from kubectl_gpu.explain.engine import explain_claim
from kubectl_gpu.explain.specs import DeviceClassSpec, InvalidClaim, parse_claim, parse_device_class
from kubectl_gpu.dra.facts import CAP
from kubectl_gpu.inspect.dra_nodes import NodeLabel, is_dra_node, publishing_nodes
from kubectl_gpu.inventory import consumable_shares
from kubectl_gpu.inventory.consumable_shares import MIB
from kubectl_gpu.inventory.driver_settings import DriverSettings
from kubectl_gpu.inventory.resource_slice import published_capacity



def _quantity(text: Any) -> Fraction:
    return _parsed(str(text))


@functools.lru_cache(maxsize=4096)
def _parsed(text: str) -> Fraction:
    """A fleet repeats a handful of quantities ("8", "80Gi") thousands of times."""
    try:
        return parse_quantity(text)
    except QuantityError:
        return Fraction(0)


@dataclass
class GpuNode:
    name: str
    dra: bool  # labelled as a DRA node
    unschedulable: bool
    legacy_allocatable: dict[str, Fraction]  # device-plugin resources the node offers
    devices: tuple[Device, ...] = ()  # published DRA devices, or predicted ones (see predicted)
    predicted: bool = False
    labels: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "dra": self.dra, "unschedulable": self.unschedulable,
                "legacyAllocatable": {k: _text(v) for k, v in sorted(self.legacy_allocatable.items())},
                "devices": len(self.devices), "devicesPredicted": self.predicted}


def _text(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{float(value):g}"


def gpu_nodes(nodes: Iterable[Mapping[str, Any]], slices: Iterable[Mapping[str, Any]],
              dra_labels: Sequence[NodeLabel], driver: DriverSettings = DriverSettings(),
              target: TargetDriver = TargetDriver.NVIDIA) -> list[GpuNode]:
    """Every node with GPUs from either side, sorted by name.  A DRA node is one a DRA label marks
    or one a GPU DRA driver, NVIDIA's or HAMi's, publishes a ResourceSlice for (GPU Operator installs set no
    label, nor does HAMi's chart)."""
    slices = list(slices)
    driver_nodes = publishing_nodes(slices)
    published: dict[str, list[Device]] = {}
    for slice_obj in current_slices(slices):
        try:
            devices = devices_from_slice(slice_obj)
        except (InvalidResourceSlice, AttributeError, TypeError, ValueError):
            continue  # a slice the scheduler could not use either; doctor names what is wrong with it
        for device in devices:
            if device.node_name:
                published.setdefault(device.node_name, []).append(device)
    found = []
    for node in nodes:
        meta = node.get("metadata") or {}
        name = str(meta.get("name"))
        labels = meta.get("labels") or {}
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        legacy = {k: _quantity(v) for k, v in allocatable.items() if family_of(k) and _quantity(v) > 0}
        dra = is_dra_node(labels, dra_labels) or name in driver_nodes
        devices = tuple(published.get(name, ()))
        if not (legacy or dra or devices or GFD_PRODUCT in labels):
            continue
        predicted = False
        if not devices:
            devices = predict_devices(name, labels, legacy, driver, target)
            predicted = bool(devices)
        found.append(GpuNode(name, dra, bool((node.get("spec") or {}).get("unschedulable")), legacy, devices,
                             predicted, labels))
    return sorted(found, key=lambda n: n.name)


def predict_devices(node: str, labels: Mapping[str, str], legacy: Mapping[str, Fraction],
                    driver: DriverSettings = DriverSettings(),
                    target: TargetDriver = TargetDriver.NVIDIA) -> tuple[Device, ...]:
    """The GPUs the NVIDIA DRA driver will publish on ``node``, from GFD labels (or the device
    plugin's whole-GPU count when GFD is absent), as ``driver`` publishes them: with consumable
    shares, shareable whole GPUs.  GFD labels do not say which MIG profiles a GPU has, so DynamicMIG's
    partitions are not predicted: its full GPUs are.  With ``target`` HAMi, the same GPUs as HAMi's
    driver publishes them (kubectl_gpu/dra/hami.py): one hami-gpu each, its cores and memory shareable."""
    count = int(_quantity(labels.get(GFD_COUNT, 0))) or int(legacy.get("nvidia.com/gpu", 0))
    if count <= 0:
        return ()
    if target is TargetDriver.HAMI:
        return _on_node(node, _predicted_shape(json.dumps(_hami_device(labels), sort_keys=True), count,
                                               hami.HAMI_DRIVER))
    attributes: dict[str, Any] = {"type": {"string": "gpu"}}
    if labels.get(GFD_PRODUCT):
        # GFD writes the NVML name with spaces as dashes ("NVIDIA-A100-SXM4-80GB"); the driver
        # publishes the NVML name itself. Only the first dash is certain to be a space.
        attributes["productName"] = {"string": str(labels[GFD_PRODUCT]).replace("-", " ", 1)}  # may be unquoted
    family = architecture_of_gfd_family(str(labels.get(GFD_FAMILY, "")))
    if family:
        attributes["architecture"] = {"string": family}
    memory = {CAP.memory: int(_quantity(labels[GFD_MEMORY])) * MIB} if labels.get(GFD_MEMORY) else {}
    shared = consumable_shares.apply(memory, driver.shares)
    device: dict[str, Any] = {"attributes": attributes,
                              "capacity": published_capacity(shared.capacity, shared.request_policies)}
    if shared.allow_multiple_allocations:
        device["allowMultipleAllocations"] = True
    return _on_node(node, _predicted_shape(json.dumps(device, sort_keys=True), count))


def _on_node(node: str, shape: tuple[Device, ...]) -> tuple[Device, ...]:
    # One node pool's nodes are alike: parse the slice once, then give each node its own copies.
    return tuple(replace(d, pool=node, node_name=node, slice_name=f"{node}-predicted",
                         node_scope=d.node_scope.replace(_SHAPE_NODE, node)) for d in shape)


def _hami_device(labels: Mapping[str, str]) -> dict[str, Any]:
    """A hami-gpu as GFD's labels describe it: productName and architecture in HAMi's domain, cores
    and memory with the driver's request policies (memory only where GFD states it)."""
    attributes: dict[str, Any] = {"type": {"string": hami.HAMI_GPU_TYPE}}
    if labels.get(GFD_PRODUCT):
        attributes["productName"] = {"string": str(labels[GFD_PRODUCT]).replace("-", " ", 1)}
    family = architecture_of_gfd_family(str(labels.get(GFD_FAMILY, "")))
    if family:
        attributes["architecture"] = {"string": family}
    memory = int(_quantity(labels[GFD_MEMORY])) * MIB if labels.get(GFD_MEMORY) else 0
    capacity = hami.published_capacity(memory)
    if not memory:
        del capacity[hami.MEMORY.name]
    return {"attributes": attributes, "capacity": capacity,
            "allowMultipleAllocations": hami.ALLOWS_MULTIPLE_ALLOCATIONS}


_SHAPE_NODE = "predicted-node"


@functools.lru_cache(maxsize=64)
def _predicted_shape(key: str, count: int, driver: str = NVIDIA_DRIVER) -> tuple[Device, ...]:
    device = json.loads(key)
    names = [hami.device_name(i) if driver == hami.HAMI_DRIVER else f"gpu-{i}" for i in range(count)]
    slice_obj = {"apiVersion": NEWEST_DRA_API_VERSION, "kind": "ResourceSlice",
                 "metadata": {"name": f"{_SHAPE_NODE}-predicted"},
                 "spec": {"driver": driver, "nodeName": _SHAPE_NODE,
                          "pool": {"name": _SHAPE_NODE, "generation": 0, "resourceSliceCount": 1},
                          "devices": [{"name": name, **device} for name in names]}}
    return tuple(devices_from_slice(slice_obj))


def _group_alike(devices: Sequence[Device]) -> dict[str, list[Device]]:
    groups: dict[str, list[Device]] = {}
    keys: dict[tuple, str] = {}  # predicted devices share their mappings: describe each set once
    for device in devices:
        identity = (device.driver, id(device.attributes), id(device.capacity), device.allow_multiple_allocations,
                    id(device.request_policies))
        key = keys.get(identity)
        if key is None:
            key = keys[identity] = repr((
                device.driver, sorted((d, sorted(v.items())) for d, v in device.attributes.items()),
                sorted((d, sorted(v.items())) for d, v in device.capacity.items()),
                device.allow_multiple_allocations, sorted(device.request_policies.items())))
        groups.setdefault(key, []).append(device)
    return groups


# ------------------------------------------------------------------ legacy side

@dataclass(frozen=True)
class LegacyPodLoad:
    ref: str  # namespace/name
    node: str | None
    demand: Mapping[str, Fraction]
    owner: str | None  # the top-level workload (Kind/ns/name) that recreates it; None: bare pod
    daemon: bool = False  # a DaemonSet's pod: it stays with its node, never moves


def fit_legacy(pods: Sequence[LegacyPodLoad], free: dict[str, dict[str, Fraction]],
               order: Sequence[str]) -> tuple[list[LegacyPodLoad], dict[str, str]]:
    """Place ``pods`` first-fit-decreasing on ``free`` (node -> resource -> free amount), which
    is updated; returns the pods that fit nowhere and where the others went (ref -> node)."""
    unplaced = []
    placed: dict[str, str] = {}
    cursors: dict[tuple, int] = {}
    for pod in sorted(pods, key=lambda p: (-sum(p.demand.values()), p.ref)):
        key = tuple(sorted(pod.demand.items()))
        index = cursors.get(key, 0)
        while index < len(order):
            node_free = free[order[index]]
            if all(node_free.get(r, Fraction(0)) >= amount for r, amount in pod.demand.items()):
                for r, amount in pod.demand.items():
                    node_free[r] -= amount
                placed[pod.ref] = order[index]
                break
            index += 1  # free space only shrinks: this node never fits this demand again
        cursors[key] = index
        if index >= len(order):
            unplaced.append(pod)
    return unplaced, placed


# --------------------------------------------------------------------- DRA side

@dataclass(frozen=True)
class RequestNeed:
    candidates: frozenset[str]  # device ids that satisfy the request
    count: int  # devices wanted; 0 = all matching devices on the node (allocationMode All)
    capacity: Mapping[str, Fraction]  # consumable capacity per device (empty: exclusive)


@dataclass(frozen=True)
class ClaimNeed:
    key: str
    requests: tuple[RequestNeed, ...]
    verdict: str  # explain's verdict when nothing satisfies it
    satisfiable: bool


class DraPool:
    """Devices on DRA nodes and what is taken from them, across waves."""

    def __init__(self, classes: Iterable[Mapping[str, Any]] = (), universe: Sequence[Device] | None = None,
                 gates: frozenset[str] | None = None):
        # Claims are matched once against every device the cluster will have (``universe``:
        # published and predicted); a pool then only counts the candidates on its own nodes.
        self.universe = universe
        self.gates = gates  # the cluster's DRA feature gates (its profile); None: upstream's defaults
        self.devices: dict[str, Device] = {}
        self.by_node: dict[str, list[str]] = {}
        self.node_order: list[str] = []
        self.classes: dict[str, DeviceClassSpec] = {}
        for obj in classes:
            try:
                spec = parse_device_class(obj)
            except (InvalidClaim, ValueError, AttributeError, TypeError):
                continue  # explain and doctor report a malformed class; the plan uses the built-in one
            self.classes[spec.name] = spec
        self.exclusive: set[str] = set()
        self.journal: list = []  # what each placement took, newest last (for undo)
        self.used_capacity: dict[str, dict[str, Fraction]] = {}
        self._needs: dict[str, ClaimNeed] = {}
        self._class_passes: dict = {}
        self._groups: dict[str, list[Device]] | None = None
        self._by_identity: dict[int, tuple[Mapping[str, Any], str]] = {}  # the same claim dict, asked again
        self._cursors: dict[tuple, int] = {}
        # Devices of each node neither taken whole nor shared yet: a node with fewer of them than
        # a pod's exclusive requests want is passed over without looking at its devices.
        self.free_count: dict[str, int] = {}
        self.allocated_before = 0  # devices held by ResourceClaims allocated before the plan
        self.node_of: dict[str, str] = {}

    def add_node(self, node: GpuNode) -> None:
        if node.name in self.by_node:
            return
        self.node_order.append(node.name)
        self.by_node[node.name] = [d.id for d in node.devices]
        for device in node.devices:
            self.devices[device.id] = device
            self.node_of[device.id] = node.name
        self.free_count[node.name] = sum(1 for d in node.devices if d.id not in self.exclusive
                                         and d.id not in self.used_capacity)
        if self.universe is None:
            self._needs.clear()  # candidates depend on the devices known
        # Cursors stay valid: nodes are only ever appended after them.

    def hold_allocated(self, allocations: Mapping[str, Sequence[Any]]) -> int:
        """Take the devices existing ResourceClaims hold (explain's reading of their
        status.allocation.devices.results): whole, or the capacity a shared device's holders
        consumed (KEP-5075). Admin access takes nothing (it never blocks other claims). Returns
        how many of the pool's devices are held."""
        held = 0
        for device_id, holders in allocations.items():
            device = self.devices.get(device_id)
            holding = [h for h in holders if not h.admin_access]
            if device is None or not holding:
                continue
            held += 1
            if device.allow_multiple_allocations:
                consumed: dict[str, Fraction] = {}
                for holder in holding:
                    for name, quantity in holder.consumed.items():
                        consumed[name] = consumed.get(name, Fraction(0)) + Fraction(quantity.value)
                self._commit((set(), {device_id: consumed}))
            else:
                self._commit(({device_id}, {}))
        self.allocated_before += held
        return held

    @property
    def used(self) -> int:
        return len(self.exclusive | set(self.used_capacity))

    def claim_need(self, claim: Mapping[str, Any]) -> ClaimNeed:
        known = self._by_identity.get(id(claim))
        if known is not None and known[0] is claim:
            key = known[1]
        else:
            key = json.dumps(claim.get("spec"), sort_keys=True)
            self._by_identity[id(claim)] = (claim, key)
        need = self._needs.get(key)
        if need is None:
            need = self._needs[key] = self._explain(key, claim)
        return need

    def _explain(self, key: str, claim: Mapping[str, Any]) -> ClaimNeed:
        try:
            spec = parse_claim(claim)
        except InvalidClaim as err:
            return ClaimNeed(key, (), str(err), False)
        devices = list(self.universe) if self.universe is not None else list(self.devices.values())
        # A selector sees a device's driver, attributes and capacity only: devices alike in those
        # (every GPU of a node pool not yet on DRA, predicted alike) are evaluated once.
        groups = self._groups if self._groups is not None and self.universe is not None else _group_alike(devices)
        if self.universe is not None:
            self._groups = groups
        result = explain_claim(spec, [members[0] for members in groups.values()], self.classes,
                               class_passes=self._class_passes, gates=self.gates)
        by_representative = {members[0].id: members for members in groups.values()}
        requests = []
        for request in result.requests:
            chosen = next((a for a in request.alternatives if a.name == request.chosen), None) \
                or next((a for a in request.alternatives if a.matched), None)
            if chosen is None or not chosen.matched:
                return ClaimNeed(key, (), request.verdict, False)
            candidates = frozenset(member.id for d in chosen.device_results if d.result == "matched"
                                   for member in by_representative[d.device])
            count = 0 if chosen.allocation_mode == "All" else chosen.count
            capacity = {k: _quantity(v) for k, v in chosen.capacity_requests.items()}
            requests.append(RequestNeed(candidates, count, capacity))
        return ClaimNeed(key, tuple(requests), result.verdict, True)

    def place(self, claims: Sequence[Mapping[str, Any]]) -> str | None:
        """Take devices on one node for one pod's ``claims``; None when nothing fits."""
        needs = [self.claim_need(c) for c in claims]
        if not all(n.satisfiable for n in needs):
            return None
        shape = tuple(n.key for n in needs)
        index = self._cursors.get(shape, 0)
        while index < len(self.node_order):
            node = self.node_order[index]
            taken = self._take(node, [r for n in needs for r in n.requests])
            if taken is not None:
                self._cursors[shape] = index
                self._commit(taken)
                self.journal.append(taken)
                return node
            index += 1  # devices only get taken: this node never fits this pod shape again
        self._cursors[shape] = index
        return None

    def place_on(self, node: str, claims: Sequence[Mapping[str, Any]]) -> bool:
        """Take devices on ``node`` for one pod pinned there (a DaemonSet's)."""
        needs = [self.claim_need(c) for c in claims]
        if node not in self.by_node or not all(n.satisfiable for n in needs):
            return False
        taken = self._take(node, [r for n in needs for r in n.requests])
        if taken is None:
            return False
        self._commit(taken)
        self.journal.append(taken)
        return True

    def _commit(self, taken) -> None:
        exclusive, shared = taken
        for device in exclusive:
            self.free_count[self.node_of[device]] -= 1
        self.exclusive.update(exclusive)
        for device, amounts in shared.items():
            if device not in self.used_capacity:
                self.free_count[self.node_of[device]] -= 1
            used = self.used_capacity.setdefault(device, {})
            for name, amount in amounts.items():
                used[name] = used.get(name, Fraction(0)) + amount

    def mark(self) -> tuple[int, dict[tuple, int]]:
        """A point to undo back to (all-or-nothing placement of a workload)."""
        return len(self.journal), dict(self._cursors)

    def undo(self, mark: tuple[int, dict[tuple, int]]) -> None:
        position, cursors = mark
        if len(self.journal) == position:
            return  # nothing was taken: every node a cursor passed still cannot fit its shape
        while len(self.journal) > position:
            exclusive, shared = self.journal.pop()
            self.exclusive.difference_update(exclusive)
            for device in exclusive:
                self.free_count[self.node_of[device]] += 1
            for device, amounts in shared.items():
                used = self.used_capacity[device]
                for name, amount in amounts.items():
                    used[name] -= amount
                if not any(used.values()):
                    del self.used_capacity[device]
                    self.free_count[self.node_of[device]] += 1
        self._cursors = cursors

    def _take(self, node: str, requests: Sequence[RequestNeed]):
        if sum(r.count for r in requests if not r.capacity) > self.free_count[node]:
            return None  # fewer untouched devices than the exclusive requests want
        exclusive: set[str] = set()
        shared: dict[str, dict[str, Fraction]] = {}
        for request in requests:
            ids = [d for d in self.by_node[node] if d in request.candidates and d not in self.exclusive
                   and d not in exclusive]
            if request.capacity:
                ids = [d for d in ids if self._fits_capacity(d, request.capacity, shared.get(d, {}))]
            else:
                ids = [d for d in ids if d not in self.used_capacity and d not in shared]
            wanted = len(ids) if request.count == 0 else request.count
            if len(ids) < wanted or wanted == 0:
                return None
            for device in ids[:wanted]:
                if request.capacity:
                    slot = shared.setdefault(device, {})
                    for name, amount in request.capacity.items():
                        slot[name] = slot.get(name, Fraction(0)) + amount
                else:
                    exclusive.add(device)
        return exclusive, shared

    def _fits_capacity(self, device_id: str, wanted: Mapping[str, Fraction], pending: Mapping[str, Fraction]) -> bool:
        device = self.devices[device_id]
        if not device.allow_multiple_allocations:
            return device_id not in self.used_capacity and not pending
        used = self.used_capacity.get(device_id, {})
        for name, amount in wanted.items():
            total = device.capacity_value(name)
            if total is None:
                return False
            if used.get(name, Fraction(0)) + pending.get(name, Fraction(0)) + amount > total.value:
                return False
        return True
