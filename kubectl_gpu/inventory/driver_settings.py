"""Which NVIDIA DRA driver the preview is for: its release, its own feature gates and the kubelet
plugin's ``--consumable-shares``, plus the Kubernetes minor it talks to (DynamicMIG splits its
counters into a slice of their own from 1.35).  Parsed once from the command line, then read by the
pure planner.

Driver: cmd/gpu-kubelet-plugin/main.go (``--consumable-shares``: disabled, memory, unlimited or a
positive integer; anything but disabled needs the ConsumableShares gate), driver.go
``shouldUseSplitResourceSlices`` (< 1.35: counters and devices in one slice per GPU).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from kubectl_gpu.dra import facts

CONSUMABLE_SHARES_MODES = ("disabled", "memory", "unlimited")
# The oldest release whose attributes the planner writes (the standard pciBusID replaced the driver's
# pcieBusID in v25.12.0).
OLDEST_PREDICTED_RELEASE = "v25.12.0"
SPLIT_COUNTER_SLICES_SINCE_MINOR = 35


@dataclass(frozen=True)
class DriverSettings:
    release: str = facts.NEWEST_DRIVER_RELEASE
    gates: Mapping[str, bool] = field(default_factory=lambda: MappingProxyType(
        facts.driver_gates_of(facts.NEWEST_DRIVER_RELEASE)))
    consumable_shares: str = "disabled"
    kubernetes_minor: int = facts.NEWEST_KUBERNETES_MINOR

    @classmethod
    def parse(cls, release: str | None = None, gates: str | None = None,
              consumable_shares: str | None = None, kubernetes_minor: int | None = None) -> "DriverSettings":
        """From the options' text (``Gate=true,Other=false``); ValueError saying what to change."""
        release = _release(release or facts.NEWEST_DRIVER_RELEASE)
        chosen = facts.driver_gates_of(release)
        overrides = _gate_overrides(gates or "")
        problems = facts.driver_gate_problems(release, overrides)
        shares = (consumable_shares or "disabled").strip()
        if shares not in CONSUMABLE_SHARES_MODES and not (shares.isdigit() and int(shares) > 0):
            problems.append(f"--consumable-shares {shares!r} must be disabled, memory, unlimited or a "
                            "positive integer")
        chosen.update(overrides)
        if shares != "disabled" and not chosen.get(facts.CONSUMABLE_SHARES):
            problems.append(f"--consumable-shares {shares} needs the driver's {facts.CONSUMABLE_SHARES} gate: "
                            f"add --driver-gates {facts.CONSUMABLE_SHARES}=true")
        if problems:
            raise ValueError("; ".join(problems))
        return cls(release, MappingProxyType(chosen), shares,
                   facts.NEWEST_KUBERNETES_MINOR if kubernetes_minor is None else kubernetes_minor)

    def enabled(self, gate: str) -> bool:
        return bool(self.gates.get(gate))

    @property
    def shares(self) -> str:
        """The --consumable-shares mode in force: disabled unless the gate is on too
        (consumable_shares.go isConsumableSharesEnabled)."""
        return self.consumable_shares if self.enabled(facts.CONSUMABLE_SHARES) else "disabled"

    def publishes(self, attribute: facts.Attribute) -> bool:
        """Whether this release publishes the attribute at all (its added/removed releases)."""
        index = facts.driver_release_index(self.release)
        if attribute.added and facts.driver_release_index(attribute.added) > index:
            return False
        return not (attribute.removed and facts.driver_release_index(attribute.removed) <= index)


def _release(text: str) -> str:
    index = facts.driver_release_index(text)  # ValueError names the known releases
    if index < facts.driver_release_index(OLDEST_PREDICTED_RELEASE):
        raise ValueError(f"inventory predicts NVIDIA DRA driver {OLDEST_PREDICTED_RELEASE} and newer, "
                         f"not {text}")
    return facts.DRIVER_RELEASES[index]


def _gate_overrides(text: str) -> dict[str, bool]:
    overrides: dict[str, bool] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        truth = {"true": True, "false": False}.get(value.strip().lower())
        if not sep or truth is None or not name.strip():
            raise ValueError(f"--driver-gates {item!r} must be Gate=true or Gate=false "
                             f"(e.g. {facts.DYNAMIC_MIG}=true)")
        overrides[name.strip()] = truth
    return overrides
