"""The driver's ConsumableShares (v0.5.0): a GPU or MIG device that several claims may share, with
its memory handed out in whole MiB and, for an integer share count, a ``shares`` capacity (pure).

Mirrors cmd/gpu-kubelet-plugin/consumable_shares.go ``applyConsumableShares`` at main 95932046
(75a2d69f): ``allowMultipleAllocations: true``; memory rounded down to a multiple of 1Mi (the API
server requires ``max`` to be a multiple of ``step``), with a requestPolicy per ``--consumable-shares``
mode: ``unlimited`` (default 0, 0..max), ``memory`` (default the whole memory, 1Mi..max), or a
positive integer N (memory default 0, 0..max, plus ``shares``: N, default 1, 1..N in steps of 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubectl_gpu.dra.facts import CAP

MIB = 1024 * 1024  # 1Mi: the step of memory requests, and NVML's MIG memory unit
SHARES_CAPACITY = CAP.shares
# The one capacity the driver builds as a decimal quantity (resource.DecimalSI); all others BinarySI.
DECIMAL_SI_CAPACITIES = frozenset({SHARES_CAPACITY})


@dataclass(frozen=True)
class RequestPolicy:
    """A capacity's requestPolicy (KEP-5075): default and validRange min/max/step, in its units."""

    default: int
    min: int
    max: int
    step: int


@dataclass(frozen=True)
class Shared:
    capacity: dict[str, int]
    allow_multiple_allocations: bool = False
    request_policies: dict[str, RequestPolicy] = field(default_factory=dict)


def apply(capacity: dict[str, int], mode: str) -> Shared:
    """``capacity`` as published under ``--consumable-shares mode`` (``disabled``: unchanged)."""
    if mode == "disabled":
        return Shared(capacity)
    if CAP.memory not in capacity:
        return Shared(capacity, allow_multiple_allocations=True)
    memory = capacity[CAP.memory] // MIB * MIB
    capacity = {**capacity, CAP.memory: memory}
    policies: dict[str, RequestPolicy] = {}
    if mode == "unlimited":
        policies[CAP.memory] = RequestPolicy(default=0, min=0, max=memory, step=MIB)
    elif mode == "memory":
        policies[CAP.memory] = RequestPolicy(default=memory, min=MIB, max=memory, step=MIB)
    elif mode.isdigit() and int(mode) > 0:
        shares = int(mode)
        policies[CAP.memory] = RequestPolicy(default=0, min=0, max=memory, step=MIB)
        capacity[SHARES_CAPACITY] = shares
        policies[SHARES_CAPACITY] = RequestPolicy(default=1, min=1, max=shares, step=1)
    return Shared(capacity, allow_multiple_allocations=True, request_policies=policies)
