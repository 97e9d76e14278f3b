"""What NVIDIA DRA driver v0.5.0 publishes and refuses, as the project states it.

Read at kubernetes-sigs/dra-driver-nvidia-gpu main 95932046 (7 August 2026, VERSION v0.5.0-dev: the
newest commit of the stored snapshot, which has no v0.5.0 tag); earlier releases at their tags.
"""

from __future__ import annotations

import pytest

from kubectl_gpu.dra import facts
from kubectl_gpu.inventory import driver_names


def test_rubin_is_an_architecture_the_driver_names():
    """go-nvml const.go DEVICE_ARCH_RUBIN = 13; go-nvlib v0.12.0 device.go GetArchitectureAsString
    returns "Rubin" for it; the driver vendors go-nvlib v0.12.0 since 95a1b03f (go.mod)."""
    assert driver_names.architecture_name(13) == "Rubin"
    # GPU Feature Discovery's family label for such nodes selects the same name.
    assert facts.architecture_of_gfd_family("rubin") == "Rubin"


def test_numa_node_is_a_standard_attribute_of_every_device_from_v0_5_0():
    """deviceinfo.go addNumaNodeAttribute (3b59d66e, "Align NUMA attribute with KEP-6072"):
    resource.kubernetes.io/numaNode on GPU, MIG and VFIO devices, only when sysfs gives 0 or more."""
    numa = facts.attribute("numaNode")
    assert (numa.domain, numa.added, numa.optional) == ("resource.kubernetes.io", "v0.5.0", True)
    assert set(numa.device_types) == {facts.GPU_TYPE, facts.MIG_TYPE, facts.VFIO_TYPE}
    assert facts.ATTR.numaNode == "resource.kubernetes.io/numaNode"
    # VFIO devices' own `numa` attribute is gone in v0.5.0 (VfioDeviceInfo.GetDevice).
    assert facts.attribute("numa").removed == "v0.5.0"


def test_fabric_manager_partition_attributes_are_known_with_their_release():
    """deviceinfo.go addFabricManagerAttributes (bdad5512, 62ee668a), behind FabricManagerPartitioning."""
    for name in ("gpuModuleID", "partition1", "partition2", "partition4", "partition8"):
        attribute = facts.attribute(name)
        assert (attribute.kind, attribute.added, attribute.optional) == ("int", "v0.5.0", True)
        assert facts.VFIO_TYPE in attribute.device_types and facts.GPU_TYPE in attribute.device_types
    assert facts.driver_gate(facts.FABRIC_MANAGER_PARTITIONING) == facts.DriverGate(
        "FabricManagerPartitioning", "v0.5.0", False)


def test_the_newest_release_is_v0_5_0_and_multi_user_mps_shipped_in_it():
    """api/nvidia.com/resource/v1beta1/sharing.go MpsConfig.MultiUser (421c0f49, 6 June 2026), an
    ancestor of 95932046 and not of v0.4.1."""
    assert facts.NEWEST_DRIVER_RELEASE == "v0.5.0"
    assert facts.MPS_CONFIG_FIELDS_SINCE == {"multiUser": "v0.5.0"}


# pkg/featuregates/featuregates.go at each tag: which gates exist and their default.
@pytest.mark.parametrize("release, gates", [
    ("v25.8.0", {"TimeSlicingSettings": False, "MPSSupport": False, "IMEXDaemonsWithDNSNames": True}),
    ("v0.4.1", {"TimeSlicingSettings": False, "MPSSupport": False, "IMEXDaemonsWithDNSNames": True,
                "PassthroughSupport": False, "DynamicMIG": False, "NVMLDeviceHealthCheck": False,
                "ComputeDomainCliques": True, "CrashOnNVLinkFabricErrors": True, "DeviceMetadata": False}),
    ("v0.5.0", {"TimeSlicingSettings": False, "MPSSupport": False, "IMEXDaemonsWithDNSNames": True,
                "PassthroughSupport": False, "DynamicMIG": False, "NVMLDeviceHealthCheck": False,
                "ComputeDomainCliques": True, "CrashOnNVLinkFabricErrors": True, "DeviceMetadata": False,
                "FabricManagerPartitioning": False, "HostManagedIMEXDaemon": False,
                "DRAListTypeAttributes": False, "ConsumableShares": False}),
])
def test_each_release_has_its_gates_with_their_defaults(release, gates):
    assert facts.driver_gates_of(release) == gates


@pytest.mark.parametrize("other", ["PassthroughSupport", "NVMLDeviceHealthCheck", "MPSSupport"])
def test_dynamic_mig_is_refused_with_the_gates_the_driver_excludes(other):
    """featuregates.go ValidateFeatureGates: DynamicMIG "is currently mutually exclusive with" each."""
    [problem] = facts.driver_gate_problems("v0.5.0", {"DynamicMIG": True, other: True})
    assert "DynamicMIG" in problem and other in problem and "turn one of them off" in problem
    assert other in facts.driver_gate_requirement("DynamicMIG")


def test_a_gate_a_release_does_not_have_is_named_with_the_ones_it_has():
    [problem] = facts.driver_gate_problems("v0.4.1", {"ConsumableShares": True})
    assert "v0.4.1 has no feature gate ConsumableShares" in problem and "DynamicMIG" in problem


def test_an_unknown_release_names_the_known_ones():
    with pytest.raises(ValueError, match="v0.5.0"):
        facts.driver_release_index("v9.9.9")
    assert facts.driver_release_index("v25.12.1") == facts.DRIVER_RELEASES.index("v25.12.0")
