"""Capacity on both sides of a migration: device-plugin GPUs on legacy nodes, DRA devices on DRA nodes.

Pure. Legacy pods are placed first-fit-decreasing on the legacy nodes' allocatable extended
resources (what the scheduler's NodeResourcesFit checks). DRA pods are placed node by node with
Kubernetes' structured allocator (kubectl_gpu/allocator, what the scheduler's DynamicResources
filter runs): all claims of a pod together on one node, with backtracking, shared counters
(DynamicMIG), device taints and consumable capacity, every earlier placement's devices counted
as allocated. Explain's engine says why a claim no device of the cluster matches is blocked.

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

from kubectl_gpu.allocator import ERROR as ALLOCATOR_ERROR, EXACT_COUNT, Allocator, Claim, Features, Ledger
from kubectl_gpu.allocator import Node as AllocatorNode
from kubectl_gpu.dra.devices import Device, InvalidResourceSlice, SliceFacts, devices_from_slice, read_slice
from kubectl_gpu.dra.devices import current_slices
from kubectl_gpu.dra.gates import normalize_gates
from kubectl_gpu.core import TargetDriver, family_of
from kubectl_gpu.dra import hami
from kubectl_gpu.dra.quantity import parse_quantity, QuantityError
from kubectl_gpu.dra.facts import GFD_COUNT_LABEL as GFD_COUNT
from kubectl_gpu.dra.facts import GFD_FAMILY_LABEL as GFD_FAMILY
from kubectl_gpu.dra.facts import GFD_MEMORY_LABEL as GFD_MEMORY
from kubectl_gpu.dra.facts import GFD_PRODUCT_LABEL as GFD_PRODUCT
from kubectl_gpu.dra.facts import DEVICE_PLUGIN_GPU, NEWEST_DRA_API_VERSION, NVIDIA_DRIVER, architecture_of_gfd_family
from kubectl_gpu.explain.engine import explain_claim
from kubectl_gpu.explain.judge import allocated_state, allocator_claim, allocator_classes, facts_from_devices
from kubectl_gpu.explain.specs import BUILTIN_CLASS_SELECTORS, DeviceClassSpec, InvalidClaim, parse_claim
from kubectl_gpu.explain.specs import parse_device_class
from kubectl_gpu.explain.taint_rules import InvalidTaintRule, read_taint_rule
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
    slices: tuple[SliceFacts, ...] = ()  # the devices' slices, as the allocator reads them

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
    published: dict[str, list[SliceFacts]] = {}
    for slice_obj in current_slices(slices):
        try:
            facts = read_slice(slice_obj)
        except (InvalidResourceSlice, AttributeError, TypeError, ValueError):
            continue  # a slice the scheduler could not use either; doctor names what is wrong with it
        if facts.node_name:  # devices other nodes reach too are not counted as any node's
            published.setdefault(facts.node_name, []).append(facts)
    found = []
    for node in nodes:
        meta = node.get("metadata") or {}
        name = str(meta.get("name"))
        labels = meta.get("labels") or {}
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        legacy = {k: _quantity(v) for k, v in allocatable.items() if family_of(k) and _quantity(v) > 0}
        dra = is_dra_node(labels, dra_labels) or name in driver_nodes
        node_slices = tuple(published.get(name, ()))
        devices = tuple(d for f in node_slices for d in f.devices)
        if not (legacy or dra or devices or GFD_PRODUCT in labels):
            continue
        predicted = False
        if not devices:
            devices = predict_devices(name, labels, legacy, driver, target)
            predicted = bool(devices)
            node_slices = tuple(facts_from_devices(devices))
        found.append(GpuNode(name, dra, bool((node.get("spec") or {}).get("unschedulable")), legacy, devices,
                             predicted, labels, node_slices))
    return sorted(found, key=lambda n: n.name)


def predict_devices(node: str, labels: Mapping[str, str], legacy: Mapping[str, Fraction],
                    driver: DriverSettings = DriverSettings(),
                    target: TargetDriver = TargetDriver.NVIDIA) -> tuple[Device, ...]:
    """The GPUs the NVIDIA DRA driver will publish on ``node``, from GFD labels (or the device
    plugin's whole-GPU count when GFD is absent), as ``driver`` publishes them: with consumable
    shares, shareable whole GPUs.  GFD labels do not say which MIG profiles a GPU has, so DynamicMIG's
    partitions are not predicted: its full GPUs are.  With ``target`` HAMi, the same GPUs as HAMi's
    driver publishes them (kubectl_gpu/dra/hami.py): one hami-gpu each, its cores and memory shareable."""
    count = int(_quantity(labels.get(GFD_COUNT, 0))) or int(legacy.get(DEVICE_PLUGIN_GPU, 0))
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
class ClaimNeed:
    key: str
    verdict: str  # explain's verdict when nothing satisfies it
    satisfiable: bool
    claim: Claim | None = None  # in the allocator's terms
    devices: int = 0  # devices its requests take at least, none of them shared (see DraPool._may_fit)


class DraPool:
    """Devices on DRA nodes and what is taken from them, across waves.  A pod's claims are placed
    by Kubernetes' structured allocator (kubectl_gpu/allocator), all of them on one node, the
    devices of every earlier placement counted as allocated (a :class:`Ledger`)."""

    def __init__(self, classes: Iterable[Mapping[str, Any]] = (), nodes: Sequence[GpuNode] = (),
                 gates: frozenset[str] | None = None, taint_rules: Iterable[Mapping[str, Any]] = ()):
        # Claims are matched once against every device the cluster will have (published and
        # predicted) for their verdict; a placement is tried only on the nodes added.
        self.nodes = {n.name: n for n in nodes}
        self.universe = [d for n in nodes for d in n.devices]
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
        self.taint_rules = []
        for obj in taint_rules:
            try:
                rule = read_taint_rule(obj)
            except InvalidTaintRule:
                continue  # explain names what is wrong with it
            if rule is not None:
                self.taint_rules.append(rule)
        self.ledger = Ledger()
        self._allocator: Allocator | None = None
        self._targets: dict[str, AllocatorNode] = {}
        self._shared_devices: set[str] = set()  # nodes with a device that allows multiple allocations
        self._needs: dict[str, ClaimNeed] = {}
        self._class_passes: dict = {}
        self._groups: dict[str, list[Device]] | None = None
        self._by_identity: dict[int, tuple[Mapping[str, Any], str]] = {}  # the same claim dict, asked again
        self._cursors: dict[tuple, int] = {}
        self.allocated_before = 0  # devices held by ResourceClaims allocated before the plan
        self.node_of: dict[str, str] = {}

    def add_node(self, node: GpuNode) -> None:
        if node.name in self.by_node:
            return
        if node.name not in self.nodes:  # a node the pool was not built with: its devices join
            self.nodes[node.name] = node
            self.universe.extend(node.devices)
            self._allocator, self._groups = None, None
            self._needs.clear()
        self.node_order.append(node.name)
        self.by_node[node.name] = [d.id for d in node.devices]
        self._targets[node.name] = AllocatorNode(node.name, {str(k): str(v) for k, v in node.labels.items()})
        for device in node.devices:
            self.devices[device.id] = device
            self.node_of[device.id] = node.name
            if device.allow_multiple_allocations:
                self._shared_devices.add(node.name)
        # Cursors stay valid: nodes are only ever appended after them.

    @property
    def allocator(self) -> Allocator:
        if self._allocator is None:
            facts = [f for n in self.nodes.values() for f in n.slices]
            classes = allocator_classes(self.classes, BUILTIN_CLASS_SELECTORS)
            self._allocator = Allocator(facts, classes, Features.from_gates(normalize_gates(self.gates)),
                                        taint_rules=self.taint_rules)
        return self._allocator

    def hold_allocated(self, allocations: Mapping[str, Sequence[Any]]) -> int:
        """Take the devices existing ResourceClaims hold (explain's reading of their
        status.allocation.devices.results): whole, or the capacity a shared device's holders
        consumed (KEP-5075), before any placement. Admin access takes nothing (it never blocks
        other claims). Returns how many of the pool's devices are held."""
        base = allocated_state(allocations)
        self.ledger = Ledger(base)
        held = sum(1 for d in self.devices if self.ledger.holds(d))
        self.allocated_before += held
        return held

    @property
    def used(self) -> int:
        return sum(1 for d in self.devices if self.ledger.holds(d))

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
            return ClaimNeed(key, str(err), False)
        # Whether any device of the cluster satisfies each request (explain's verdict says why
        # not).  A selector sees a device's driver, attributes and capacity only: devices alike
        # in those (every GPU of a node pool not yet on DRA, predicted alike) are evaluated once.
        if self._groups is None:
            self._groups = _group_alike(self.universe)
        result = explain_claim(spec, [members[0] for members in self._groups.values()], self.classes,
                               class_passes=self._class_passes, gates=self.gates)
        blocked = next((r for r in result.requests if not any(a.matched for a in r.alternatives)), None)
        if blocked is not None:
            return ClaimNeed(key, blocked.verdict, False)
        target = allocator_claim(spec)
        return ClaimNeed(key, result.verdict, True, target, _fewest_devices(target))

    def place(self, claims: Sequence[Mapping[str, Any]]) -> str | None:
        """Allocate one pod's ``claims`` on the first node where they fit; None when none fits."""
        needs = [self.claim_need(c) for c in claims]
        if not all(n.satisfiable for n in needs):
            return None
        shape = tuple(n.key for n in needs)
        index = self._cursors.get(shape, 0)
        while index < len(self.node_order):
            node = self.node_order[index]
            fits = self._allocate(node, needs)
            if fits:
                self._cursors[shape] = index
                return node
            if fits is None:
                break  # an error that is the pod's, not the node's: it fits nowhere
            index += 1  # devices only get taken: this node never fits this pod shape again
        self._cursors[shape] = index
        return None

    def place_on(self, node: str, claims: Sequence[Mapping[str, Any]]) -> bool:
        """Allocate one pod's ``claims`` on ``node`` (a DaemonSet's pod, pinned there)."""
        needs = [self.claim_need(c) for c in claims]
        if node not in self.by_node or not all(n.satisfiable for n in needs):
            return False
        return bool(self._allocate(node, needs))

    def _allocate(self, node: str, needs: Sequence[ClaimNeed]) -> bool | None:
        """True when the claims were allocated on ``node`` (and are held from now on), False when
        they do not fit there, None on an error that no node escapes (a CEL runtime error)."""
        if not self._may_fit(node, needs):
            return False
        outcome = self.allocator.allocate([n.claim for n in needs if n.claim is not None], self._targets[node],
                                          self.ledger)
        if outcome.allocated:
            self.ledger.add(outcome)
            return True
        if outcome.kind == ALLOCATOR_ERROR and not outcome.node_only:
            return None
        return False  # unsatisfiable here, or undecided within the search's budget: not promised

    def _may_fit(self, node: str, needs: Sequence[ClaimNeed]) -> bool:
        """A node with fewer devices nobody holds than the pod's requests take at least is passed
        over without a search (every device there is used once, none allows sharing)."""
        if node in self._shared_devices:
            return True
        wanted = sum(n.devices for n in needs)
        if not wanted:
            return True
        free = 0
        for device in self.by_node[node]:
            if not self.ledger.holds(device):
                free += 1
                if free >= wanted:
                    return True
        return False

    def mark(self) -> tuple[int, dict[tuple, int]]:
        """A point to undo back to (all-or-nothing placement of a workload)."""
        return self.ledger.mark(), dict(self._cursors)

    def undo(self, mark: tuple[int, dict[tuple, int]]) -> None:
        position, cursors = mark
        if self.ledger.mark() == position:
            return  # nothing was taken: every node a cursor passed still cannot fit its shape
        self.ledger.undo(position)
        self._cursors = cursors


def _fewest_devices(claim: Claim) -> int:
    """Devices a claim's requests take at least (admin access and All take none for sure)."""
    total = 0
    for request in claim.requests:
        subs = (request.exactly,) if request.exactly is not None else request.first_available
        total += min((s.count if s.allocation_mode == EXACT_COUNT and not s.admin_access else 0 for s in subs),
                     default=0)
    return total
