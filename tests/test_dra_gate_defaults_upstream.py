"""The DRA gate defaults per Kubernetes minor (dra/gates.py) are upstream's versioned feature-gate
specs, replayed: a gate's default in a release is that of its newest spec at or before the release.

The specs below are transcribed as data from kubernetes/kubernetes
staging/src/k8s.io/kube-scheduler/pkg/features/kube_features.go at ead35706ec68f83822a56d53b1577fa8a185ca14
(``defaultVersionedKubernetesFeatureGates``): each DRA gate's (version, default) entries.  That file
(master, with DefaultKubeBinaryVersion still 1.37) has no 1.38 entry for any DRA gate, so 1.38 keeps
1.37's defaults as the API server of 1.38 does until a spec says otherwise.
"""

from __future__ import annotations

import pytest

from kubectl_gpu.dra.gates import DRA_GATES, SUPPORTED_MINORS, default_gates

UPSTREAM_SPECS: dict[str, tuple[tuple[int, bool], ...]] = {
    "DRAAdminAccess": ((32, False), (34, True), (36, True)),
    "DRAConsumableCapacity": ((34, False), (36, True)),
    "DRADerivedAttributes": ((37, False),),
    "DRADeviceBindingConditions": ((34, False), (36, True)),
    "DRADeviceCompatibilityGroups": ((37, False),),
    "DRADeviceTaintRules": ((35, False), (36, False), (37, True)),
    "DRADeviceTaints": ((33, False), (36, True), (37, True)),
    "DRAExtendedResource": ((34, False), (36, True), (37, True)),
    "DRAListTypeAttributes": ((36, False),),
    "DRANodeAllocatableResources": ((36, False),),
    "DRAOptionalNodeOperations": ((37, False),),
    "DRAPartitionableDevices": ((33, False), (36, True)),
    "DRAPrioritizedList": ((33, False), (34, True), (36, True), (37, True)),
    "DRAResourceClaimDeviceStatus": ((32, False), (33, True), (37, True)),
    "DRASchedulerFilterTimeout": ((34, True),),
    "DRAWorkloadResourceClaims": ((36, False), (37, False)),
    "DynamicResourceAllocation": ((26, False), (32, False), (34, True), (35, True)),
}


def upstream_default(gate: str, minor: int) -> bool:
    state = False  # a gate not yet registered in that release is not on
    for since, default in UPSTREAM_SPECS[gate]:
        if since <= minor:
            state = default
    return state


def test_every_gate_the_table_knows_is_one_upstream_specifies():
    assert DRA_GATES <= set(UPSTREAM_SPECS)


@pytest.mark.parametrize("minor", list(SUPPORTED_MINORS))
def test_the_defaults_of_each_supported_minor_are_upstreams(minor):
    expected = {gate for gate in DRA_GATES if upstream_default(gate, minor)}

    assert default_gates(minor) == expected


def test_1_38_has_no_upstream_spec_of_its_own_so_it_keeps_1_37s_defaults():
    assert not any(since >= 38 for specs in UPSTREAM_SPECS.values() for since, _ in specs)
    assert default_gates(38) == default_gates(37)
