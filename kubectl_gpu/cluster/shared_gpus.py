"""Node pools where NVIDIA's device plugin shares each GPU (time-slicing or MPS replicas), read from
GPU Feature Discovery's labels: there `nvidia.com/gpu: 1` asked for one slot of a GPU, not a GPU.

Migrated as whole GPUs, a pool of 2 GPUs x 8 replicas that ran 16 such pods runs 2, so migrate
names each pool and what its pods need instead.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_gpu.dra.facts import (DEVICE_PLUGIN_GPU, GFD_COUNT_LABEL, GFD_PRODUCT_LABEL, GFD_REPLICAS_LABEL, GFD_SHARED_PRODUCT_SUFFIX,
                                    GFD_SHARING_STRATEGY_LABEL)

SHARED = "shared"  # only the product label says so: an older GFD, strategy and replicas unknown


@dataclass(frozen=True)
class GpuSharing:
    strategy: str  # "time-slicing", "mps", or SHARED
    replicas: int | None  # slots per GPU, when labelled

    def describe(self) -> str:
        if self.strategy == SHARED:
            return f"shares its GPUs ({GFD_PRODUCT_LABEL} ends in {GFD_SHARED_PRODUCT_SUFFIX})"
        return (f"shares its GPUs by {self.strategy} ({GFD_SHARING_STRATEGY_LABEL}={self.strategy}, "
                f"{GFD_REPLICAS_LABEL}={self.replicas})")


def device_plugin_sharing(labels: Mapping[str, Any]) -> GpuSharing | None:
    """How the device plugin shares this node's GPUs, None when it does not."""
    strategy = str(labels.get(GFD_SHARING_STRATEGY_LABEL, "")).strip()
    replicas = _int(labels.get(GFD_REPLICAS_LABEL))
    if strategy and strategy != "none" and (replicas is None or replicas > 1):
        return GpuSharing(strategy, replicas)
    if replicas is not None and replicas > 1:
        return GpuSharing(strategy or SHARED, replicas)
    if str(labels.get(GFD_PRODUCT_LABEL, "")).endswith(GFD_SHARED_PRODUCT_SUFFIX) and not strategy:
        return GpuSharing(SHARED, None)
    return None


@dataclass(frozen=True)
class SharedPool:
    """Nodes alike (same product and sharing) whose device plugin shares each GPU."""

    product: str
    sharing: GpuSharing
    nodes: tuple[str, ...]
    gpus: int  # physical GPUs (GFD's count), over all its nodes

    @property
    def slots(self) -> int | None:
        return self.gpus * self.sharing.replicas if self.sharing.replicas else None

    def describe(self, every_gpu_node_shares: bool) -> str:
        size = (f"{self.gpus} GPU(s) as {self.slots} slots" if self.slots is not None else f"{self.gpus} GPU(s)")
        head = (f"node pool {', '.join(self.nodes)} ({self.product or 'GPU'}) {self.sharing.describe()}: {size}; "
                "a pod there asking nvidia.com/gpu: 1 asked for one slot")
        shared_claim = ("--sharing timeslicing (one ResourceClaim per workload with the driver's TimeSlicing config: "
                        "its pods share that claim's GPU, so they run on its node)")
        consumable = ("where the NVIDIA DRA driver publishes consumable `shares` capacity (driver v0.5, "
                      "DRAConsumableCapacity on), a share of a GPU each")
        if every_gpu_node_shares:
            return (f"{head}, so nvidia.com/gpu is read as slots; keep them shared with {shared_claim} or, "
                    f"{consumable}; otherwise each becomes a whole GPU and the pool runs {self.gpus} such pod(s)")
        return (f"{head}, and migrated as a whole GPU the pool runs {self.gpus} such pod(s). Other GPU nodes do not "
                "share, so a pod whose nodeSelector does not keep it in this pool keeps whole GPUs; one that does has "
                "its nvidia.com/gpu read as slots (or ask for nvidia.com/gpu.shared, the name the device plugin's "
                f"renameByDefault gives replicas); keep them shared with {shared_claim} or, {consumable}")


def shared_pools(nodes: Iterable[Mapping[str, Any]]) -> list[SharedPool]:
    """The shared pools among ``nodes`` (Node objects), by product and sharing, in name order."""
    pools: dict[tuple[str, GpuSharing], tuple[list[str], list[int]]] = {}
    for node in nodes:
        labels = _labels(node)
        sharing = device_plugin_sharing(labels)
        if sharing is None:
            continue
        names, gpus = pools.setdefault((str(labels.get(GFD_PRODUCT_LABEL, "")), sharing), ([], []))
        names.append(_name(node))
        gpus.append(_int(labels.get(GFD_COUNT_LABEL)) or 0)
    return [SharedPool(product, sharing, tuple(sorted(names)), sum(gpus))
            for (product, sharing), (names, gpus) in sorted(pools.items(), key=lambda item: sorted(item[1][0]))]


def every_gpu_node_shares(nodes: Iterable[Mapping[str, Any]]) -> bool:
    """Some node has GPUs (GFD's labels or device-plugin nvidia.com/gpu) and every such node's device
    plugin shares them: wherever a pod lands, nvidia.com/gpu was a slot."""
    gpu_nodes = 0
    for node in nodes:
        if not is_gpu_node(node):
            continue
        gpu_nodes += 1
        if device_plugin_sharing(_labels(node)) is None:
            return False
    return gpu_nodes > 0


def is_gpu_node(node: Mapping[str, Any]) -> bool:
    """GFD labels it, or its device plugin advertises nvidia.com/gpu."""
    labels = _labels(node)
    return GFD_PRODUCT_LABEL in labels or GFD_COUNT_LABEL in labels or DEVICE_PLUGIN_GPU in _allocatable(node)


def node_as_read(node: dict[str, Any]) -> dict[str, Any]:
    """What slot reading needs of a Node (a watch keeps only this): a GPU node's name, labels (which a
    pod's node selection is matched against) and whether it advertises nvidia.com/gpu; of any other
    node only its name.  Heartbeats change nothing here (sharing_identity)."""
    metadata = node.get("metadata") if isinstance(node.get("metadata"), Mapping) else {}
    kept: dict[str, Any] = {k: metadata[k] for k in ("name", "resourceVersion") if k in metadata}
    if not is_gpu_node(node):
        return {"metadata": kept}
    kept["labels"] = {sys.intern(str(k)): sys.intern(str(v)) for k, v in _labels(node).items()}
    allocatable = _allocatable(node)
    read = {"metadata": kept}
    if DEVICE_PLUGIN_GPU in allocatable:
        read["status"] = {"allocatable": {DEVICE_PLUGIN_GPU: str(allocatable[DEVICE_PLUGIN_GPU])}}
    return read


def sharing_identity(nodes: Iterable[Mapping[str, Any]]) -> list[tuple[str, list[tuple[str, str]]]]:
    """What of ``nodes`` slot reading depends on (GPU nodes' names and labels), for a cache key."""
    return sorted((_name(node), sorted((str(k), str(v)) for k, v in _labels(node).items()))
                  for node in nodes if is_gpu_node(node))


def slot_pools(template: Mapping[str, Any], nodes: Iterable[Mapping[str, Any]]) -> tuple[SharedPool, ...]:
    """The shared pools a pod of ``template`` can land in, when every GPU node its nodeSelector and
    required node affinity admit shares its GPUs (and there is one): its nvidia.com/gpu can only have
    been a slot of one of them.  Empty when some admitted GPU node does not share, or none is admitted."""
    admitted = _admitted(template, nodes)
    return tuple(shared_pools(admitted)) if every_gpu_node_shares(admitted) else ()


def lands_only_on_shared_gpus(template: Mapping[str, Any], nodes: Iterable[Mapping[str, Any]]) -> bool:
    """A pod of ``template`` asked nvidia.com/gpu for slots (migrate and the webhook read it so).
    The webhook asks per request: only the yes or no, never the pools (slot_pools is non-empty
    exactly when every admitted GPU node shares)."""
    return every_gpu_node_shares(_admitted(template, nodes))


def _admitted(template: Mapping[str, Any], nodes: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [node for node in nodes if admits(template, _labels(node), _name(node))]


def admits(template: Mapping[str, Any], labels: Mapping[str, Any], name: str) -> bool:
    """The node with these labels can run a pod of ``template`` by its nodeSelector and required node
    affinity (the scheduler's NodeAffinity filter: both must hold; the affinity's terms are ORed).  A
    selector the scheduler could not parse admits nothing."""
    spec = template.get("spec") if isinstance(template.get("spec"), Mapping) else {}
    selector = spec.get("nodeSelector") if isinstance(spec.get("nodeSelector"), Mapping) else {}
    if not all(key in labels and str(labels[key]) == str(value) for key, value in selector.items()):
        return False
    affinity = spec.get("affinity") if isinstance(spec.get("affinity"), Mapping) else {}
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity.get("nodeAffinity"), Mapping) else {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not isinstance(required, Mapping):
        return True
    # The allocator (and the CEL environment it loads) only for a pod with node affinity and a profile's
    # Nodes: `migrate FILE` imports this module and never needs it (tests/test_cli_startup.py).
    from kubectl_gpu.allocator.node_selection import InvalidNodeSelector, Node, selector_matches

    try:
        return selector_matches(required, Node(name, {str(k): str(v) for k, v in labels.items()}))
    except InvalidNodeSelector:
        return False


@dataclass(frozen=True)
class SlotReading:
    """A workload whose nvidia.com/gpu was read as slots: the pools its pods could land in and the slots
    they held there, counted in that pool's GPUs (its own replicas, not a cluster-wide figure)."""

    pools: tuple[SharedPool, ...]
    slots: int  # the workload's pods times the slots each asked for

    @property
    def replicas(self) -> int | None:
        """Slots per GPU: the fewest among its pools that say (the most GPUs the slots may have taken)."""
        known = [p.sharing.replicas for p in self.pools if p.sharing.replicas]
        return min(known) if known else None

    @property
    def gpus(self) -> int | None:
        """The pool's GPUs those slots took: ceil(slots / replicas)."""
        return -(-self.slots // self.replicas) if self.replicas else None

    def to_dict(self) -> dict[str, Any]:
        return {"nodes": [n for p in self.pools for n in p.nodes], "replicas": self.replicas, "slots": self.slots,
                "gpus": self.gpus}

    def describe(self) -> str:
        where = "; ".join(f"{', '.join(p.nodes)} ({p.sharing.describe()})" for p in self.pools)
        size = (f"{self.slots} slot(s) at {self.replicas} per GPU: {self.gpus} GPU(s)" if self.replicas
                else f"{self.slots} slot(s) (replicas per GPU not labelled)")
        return f"its pods held {size} of node pool {where}"


    def density(self, pods: int, shared_claim: bool) -> str | None:
        """What the rewrite does to these slots, when it packs the pods more densely than the pool did or
        gives each whole GPUs: one shared claim puts every pod on its GPUs (as many per GPU as there are
        pods), per-pod claims give each pod whole GPUs.  None when it keeps to the pool's figures."""
        if self.gpus is None:
            return None
        if shared_claim and pods > (self.replicas or 0):
            return (f"all {pods} pods share one ResourceClaim's GPU(s): {pods} per GPU where the pool ran at most "
                    f"{self.replicas}; split the workload or give each pod a share of a GPU")
        if not shared_claim and self.slots > self.gpus:
            return (f"each pod gets whole GPUs: {self.slots} GPU(s) where its slots took {self.gpus}; keep them "
                    "shared (--sharing timeslicing) or give each pod a share of a GPU")
        return None


def _labels(node: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = node.get("metadata") if isinstance(node.get("metadata"), Mapping) else {}
    return metadata.get("labels") if isinstance(metadata.get("labels"), Mapping) else {}


def _allocatable(node: Mapping[str, Any]) -> Mapping[str, Any]:
    status = node.get("status") if isinstance(node.get("status"), Mapping) else {}
    return status.get("allocatable") if isinstance(status.get("allocatable"), Mapping) else {}


def _name(node: Mapping[str, Any]) -> str:
    metadata = node.get("metadata") if isinstance(node.get("metadata"), Mapping) else {}
    return str(metadata.get("name", ""))


def _int(value: Any) -> int | None:
    try:
        return int(str(value).strip())
    except ValueError:
        return None
