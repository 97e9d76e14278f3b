"""Kubernetes' structured DRA allocator, in Python: which devices the scheduler would allocate to
a pod's ResourceClaims on a node, or why it cannot.

Follows k8s.io/dynamic-resource-allocation ``structured`` (the code the scheduler's
DynamicResources plugin runs) at commit 3d036712930cdac0b0d46c4c21316a78147c551f: its
experimental variant, with each feature switched by the cluster's feature gates (see
:class:`Features`), which makes it the stable and incubating variants where their features are
off.  Pure: objects in, an :class:`Outcome` out; no I/O, no clock.

    allocator = Allocator(slices, classes, Features.from_gates(gates), allocated_state)
    outcome = allocator.allocate(pod_claims, Node("node-1", labels))
"""

from .allocator import Allocator, Placement, TaintRule, place
from .features import ALL_FEATURES, Features
from .ledger import Ledger
from .requests import (
    ALL,
    ALLOCATED,
    ALLOCATION_RESULTS_MAX_SIZE,
    BUDGET_EXHAUSTED,
    ERROR,
    EXACT_COUNT,
    UNSATISFIABLE,
    FROM_CLAIM,
    FROM_CLASS,
    AllocatedState,
    AllocationConfig,
    Claim,
    ClaimAllocation,
    ClaimConfig,
    Constraint,
    DeviceClass,
    DeviceResult,
    Outcome,
    Request,
    SubRequest,
    Toleration,
)
from .node_selection import Node
from .search import DEFAULT_STEP_BUDGET

UPSTREAM_COMMIT = "3d036712930cdac0b0d46c4c21316a78147c551f"

__all__ = [
    "ALL", "ALLOCATED", "ALLOCATION_RESULTS_MAX_SIZE", "ALL_FEATURES", "BUDGET_EXHAUSTED", "DEFAULT_STEP_BUDGET",
    "ERROR", "EXACT_COUNT", "FROM_CLAIM", "FROM_CLASS", "UNSATISFIABLE", "UPSTREAM_COMMIT", "AllocatedState", "AllocationConfig", "Allocator", "Claim",
    "ClaimAllocation", "ClaimConfig", "Constraint", "DeviceClass", "DeviceResult", "Features", "Ledger", "Node", "Outcome", "Placement",
    "Request", "SubRequest", "TaintRule", "Toleration", "place",
]
