"""Kubernetes' DRA feature gates: which are on by default in each minor release, and which of them
change the CEL environment that device selectors compile in.

The defaults are Kubernetes' versioned feature-gate specs (``defaultVersionedKubernetesFeatureGates``
in kubernetes/kubernetes ``pkg/features``): each gate lists the release where its default changed.
``default_gates(35)`` replays them up to 1.35.

Two gates shape the DRA CEL environment (k8s.io/dynamic-resource-allocation/cel/compile.go,
``Features{EnableConsumableCapacity, EnableListTypeAttributes}``):

* ``DRAConsumableCapacity`` declares ``device.allowMultipleAllocations``;
* ``DRAListTypeAttributes`` makes attribute values ``dyn`` (so macros may range over them, list
  values ``ints``/``bools``/``strings``/``versions`` exist) and declares ``includes()``.

Callers pass the enabled gates as any collection of names (``frozenset({"DRAConsumableCapacity"})``);
the cluster profile passes the cluster's, everything else the defaults of :data:`DEFAULT_MINOR`.
"""

from __future__ import annotations

import re
from typing import Collection

from .facts import SUPPORTED_KUBERNETES_MINORS

CONSUMABLE_CAPACITY = "DRAConsumableCapacity"
LIST_TYPE_ATTRIBUTES = "DRAListTypeAttributes"
EXTENDED_RESOURCE = "DRAExtendedResource"  # KEP-5004: DeviceClass.spec.extendedResourceName

# gate -> (minor release, default from that release on), oldest first.  Read from the versioned
# specs of kubernetes/kubernetes staging/src/k8s.io/kube-scheduler/pkg/features/kube_features.go
# (defaultVersionedKubernetesFeatureGates, where the DRA gates live now) at master ead35706: no DRA
# gate there has a 1.38 entry, and a versioned gate's default in a release is that of its newest spec
# at or before it, so 1.38's defaults are 1.37's.  (The comments there plan LockToDefault for
# DRADeviceTaints and DRADeviceTaintRules in 1.38 and the removal of DynamicResourceAllocation's gate;
# neither changes a default.)  DRAFractionalCapacityRange (1.37 beta) is not listed: nothing here
# reads fractional capacity ranges.  tests/test_dra_gate_defaults_upstream.py replays the upstream
# specs against this table for every supported minor.
_VERSIONED_DEFAULTS: dict[str, tuple[tuple[int, bool], ...]] = {
    "DynamicResourceAllocation": ((26, False), (34, True)),
    "DRAAdminAccess": ((32, False), (34, True)),
    "DRAResourceClaimDeviceStatus": ((32, False), (33, True)),
    "DRADeviceTaints": ((33, False), (36, True)),
    "DRAPartitionableDevices": ((33, False), (36, True)),
    "DRAPrioritizedList": ((33, False), (34, True)),
    CONSUMABLE_CAPACITY: ((34, False), (36, True)),
    "DRADeviceBindingConditions": ((34, False), (36, True)),
    EXTENDED_RESOURCE: ((34, False), (36, True)),
    "DRASchedulerFilterTimeout": ((34, True),),
    "DRADeviceTaintRules": ((35, False), (37, True)),
    LIST_TYPE_ATTRIBUTES: ((36, False),),
    "DRANodeAllocatableResources": ((36, False),),
    "DRAWorkloadResourceClaims": ((36, False),),
    "DRADerivedAttributes": ((37, False),),
    "DRADeviceCompatibilityGroups": ((37, False),),
    "DRAOptionalNodeOperations": ((37, False),),
}

DRA_GATES = frozenset(_VERSIONED_DEFAULTS)
SUPPORTED_MINORS = SUPPORTED_KUBERNETES_MINORS  # Kubernetes 1.32 ... 1.38 (dra/facts.py)
# Without a cluster profile: the newest supported release, whose API (resource.k8s.io/v1) is the
# one migrate writes by default.
DEFAULT_MINOR = SUPPORTED_MINORS[-1]

_VERSION = re.compile(r"^v?1\.(\d+)(?:\.\d+)?(?:[-+].*)?$")


def kubernetes_minor(version: int | str) -> int:
    """35 from 35, "1.35", "v1.35.2" or "v1.35.0-gke.1"; ValueError naming the accepted forms."""
    if isinstance(version, int) and not isinstance(version, bool):
        minor = version
    else:
        match = _VERSION.match(str(version).strip())
        if match is None:
            raise ValueError(f"Kubernetes version {version!r} is not of the form 1.MINOR (for example 1.35)")
        minor = int(match.group(1))
    if minor not in SUPPORTED_MINORS:
        raise ValueError(
            f"Kubernetes 1.{minor} is not supported: use 1.{SUPPORTED_MINORS[0]} to 1.{SUPPORTED_MINORS[-1]}"
        )
    return minor


def default_gates(version: int | str = DEFAULT_MINOR) -> frozenset[str]:
    """The DRA feature gates a Kubernetes release enables by default."""
    minor = kubernetes_minor(version)
    enabled = set()
    for gate, history in _VERSIONED_DEFAULTS.items():
        state = None
        for since, default in history:
            if since <= minor:
                state = default
        if state:
            enabled.add(gate)
    return frozenset(enabled)


def default_history(gate: str) -> str:
    """When a gate is on by default, for reports: "off by default in 1.34-1.35, on by default from 1.36"."""
    history = _VERSIONED_DEFAULTS[gate]
    parts = []
    for index, (since, default) in enumerate(history):
        until = history[index + 1][0] - 1 if index + 1 < len(history) else None
        span = f"from 1.{since}" if until is None else (f"in 1.{since}" if until == since else f"in 1.{since}-1.{until}")
        parts.append(f"{'on' if default else 'off'} by default {span}")
    return ", ".join(parts)


def normalize_gates(gates: Collection[str] | dict[str, bool] | None) -> frozenset[str]:
    """The enabled gates as a frozenset: None means the defaults of :data:`DEFAULT_MINOR`; a
    mapping (``{"DRAConsumableCapacity": True}``) keeps the names mapped to true."""
    if gates is None:
        return default_gates(DEFAULT_MINOR)
    if isinstance(gates, dict):
        return frozenset(str(name) for name, on in gates.items() if on)
    if isinstance(gates, str):
        return frozenset({gates})
    return frozenset(str(name) for name in gates)
