"""What the cluster holds while a plan places pod after pod: every placement's devices count as
allocated for the next one, as a scheduler's allocated-device tracker counts them once a claim
is allocated.  The face the search reads is :class:`AllocatedState`'s (``devices``, ``shared``,
``capacity``, ``holds``), kept mutable, so a plan of thousands of pods builds no frozen state
per pod; a placement can be undone (a workload placed all or nothing)."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from typing import Any

from .requests import AllocatedState, DeviceResult, Outcome


class Ledger:
    def __init__(self, base: AllocatedState = AllocatedState()) -> None:
        self.devices: set[str] = set(base.devices)
        self.shared: set[str] = set(base.shared)
        self.capacity: dict[str, dict[str, Fraction]] = {k: dict(v) for k, v in base.capacity.items()}
        self._shares: Counter[str] = Counter({device: 1 for device in base.shared})
        # The search's available counters per pool id (see search.Allocation._available), for
        # this ledger's holdings: a pool's entry goes when a placement there changes them.
        self.counters: dict[str, Any] = {}
        self._journal: list[tuple[DeviceResult, ...]] = []

    def holds(self, device_id: str) -> bool:
        """IsDeviceAllocated, as AllocatedState.holds."""
        return device_id in self.devices or device_id in self.shared or device_id in self.capacity

    def add(self, outcome: Outcome) -> None:
        """An allocated outcome's devices are held from now on (admin access holds nothing)."""
        results = tuple(d for allocation in outcome.allocations for d in allocation.devices if not d.admin_access)
        for result in results:
            device_id = result.id
            if result.shared:
                self._shares[device_id] += 1
                self.shared.add(device_id)
                held = self.capacity.setdefault(device_id, {})
                for name, amount in (result.consumed_capacity or {}).items():
                    held[name] = held.get(name, Fraction(0)) + amount
            else:
                self.devices.add(device_id)
            self.counters.pop(f"{result.driver}/{result.pool}", None)
        self._journal.append(results)

    def mark(self) -> int:
        return len(self._journal)

    def undo(self, mark: int) -> None:
        """Forget every placement added after ``mark``."""
        while len(self._journal) > mark:
            for result in self._journal.pop():
                device_id = result.id
                if result.shared:
                    self._shares[device_id] -= 1
                    held = self.capacity[device_id]
                    for name, amount in (result.consumed_capacity or {}).items():
                        held[name] -= amount
                    if not self._shares[device_id]:
                        del self._shares[device_id]
                        self.shared.discard(device_id)
                        del self.capacity[device_id]
                else:
                    self.devices.discard(device_id)
                self.counters.pop(f"{result.driver}/{result.pool}", None)
