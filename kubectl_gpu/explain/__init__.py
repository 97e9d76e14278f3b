"""`explain`: why a claim's requests can or cannot be allocated, from the objects alone (no I/O).

    from kubectl_gpu.explain import explain_objects
    report = explain_objects(claims=[...], slices=[...], classes=[...], allocated_claims=[...])

``explain_claim`` works on already-parsed specs and devices (for `explain POD` against a cluster).
"""

from .allocations import Holder, allocations_from_claims
from .engine import explain_claim
from .inputs import ExplainInputs, Explanation, allocator_nodes, explain_objects, sort_objects
from .model import AlternativeResult, ClaimError, ClaimResult, DeviceResult, RequestResult, SelectorResult
from .taint_rules import InvalidTaintRule
from .specs import (
    BUILTIN_CLASS_SELECTORS,
    ClaimSpec,
    DeviceClassSpec,
    InvalidClaim,
    builtin_device_class,
    is_claim,
    is_device_class,
    parse_claim,
    parse_device_class,
)

__all__ = [
    "AlternativeResult",
    "BUILTIN_CLASS_SELECTORS",
    "ClaimError",
    "ClaimResult",
    "ClaimSpec",
    "DeviceClassSpec",
    "DeviceResult",
    "ExplainInputs",
    "Explanation",
    "Holder",
    "InvalidClaim",
    "InvalidTaintRule",
    "RequestResult",
    "SelectorResult",
    "allocations_from_claims",
    "allocator_nodes",
    "builtin_device_class",
    "explain_claim",
    "explain_objects",
    "is_claim",
    "is_device_class",
    "parse_claim",
    "parse_device_class",
    "sort_objects",
]
