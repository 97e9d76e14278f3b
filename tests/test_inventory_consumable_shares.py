"""What the NVIDIA DRA driver v0.5.0 publishes with its ConsumableShares gate and the kubelet plugin's
--consumable-shares, for an A100, an H100 and the H200 (cmd/gpu-kubelet-plugin/consumable_shares.go
applyConsumableShares at main 95932046, 75a2d69f; main.go: the flag needs the gate)."""

from __future__ import annotations

import kubernetes_validate
import pytest

from kubectl_gpu.inventory import DriverSettings, plan_inventory, resource_slices
from kubectl_gpu.inventory.readings import GpuReading, NodeReadings
from tests.test_inventory_dynamic_mig import a100, devices, h200, load, slices

MI = 1024 * 1024


def shares(mode: str, gates: str = "ConsumableShares=true") -> DriverSettings:
    return DriverSettings.parse(gates=gates, consumable_shares=mode)


def test_an_h100_shared_by_memory_defaults_to_all_of_it_in_whole_mebibytes():
    [gpu] = devices(slices(load("h100-80gb-hbm3"), shares("memory"))).values()

    assert gpu["allowMultipleAllocations"] is True
    assert gpu["capacity"] == {"memory": {"value": "81559Mi", "requestPolicy": {
        "default": "81559Mi", "validRange": {"min": "1Mi", "max": "81559Mi", "step": "1Mi"}}}}


def test_an_integer_share_count_adds_a_shares_capacity_and_memory_from_zero():
    [gpu] = devices(slices(load("h100-80gb-hbm3"), shares("4"))).values()

    assert gpu["capacity"] == {
        "memory": {"value": "81559Mi", "requestPolicy": {
            "default": "0", "validRange": {"min": "0", "max": "81559Mi", "step": "1Mi"}}},
        "shares": {"value": "4", "requestPolicy": {
            "default": "1", "validRange": {"min": "1", "max": "4", "step": "1"}}}}


def test_unlimited_sharing_defaults_to_no_memory():
    [gpu] = devices(slices(load("h100-80gb-hbm3"), shares("unlimited"))).values()

    assert gpu["capacity"]["memory"]["requestPolicy"] == {
        "default": "0", "validRange": {"min": "0", "max": "81559Mi", "step": "1Mi"}}


def test_memory_that_is_no_whole_number_of_mebibytes_is_rounded_down():
    """The API server requires validRange.max to be a multiple of step (1Mi)."""
    gpu = GpuReading(index=0, minor=0, uuid="GPU-1", product_name="NVIDIA L4", brand=14, architecture=8,
                     compute_capability=(8, 9), memory_bytes=23034462208 + 123, pci_bus_id="0000:01:00.0",
                     pcie_root=None, mig_enabled=False)
    plan = plan_inventory(NodeReadings("580.159.04", 13000, (gpu,)), shares("memory"))

    [document] = resource_slices(plan, "n")
    assert document["spec"]["devices"][0]["capacity"]["memory"]["value"] == "21967Mi"


def test_static_mig_devices_of_an_a100_are_shared_with_their_memory_slices_untouched():
    by_name = devices(slices(load("a100-sxm4-40gb-mig"), shares("2")))

    mig = by_name["gpu-0-mig-1g5gb-19-0"]
    assert mig["allowMultipleAllocations"] is True
    assert mig["capacity"]["memory"]["value"] == "4864Mi"
    assert mig["capacity"]["memorySlice0"] == {"value": "1"}
    assert mig["capacity"]["shares"]["value"] == "2"


def test_with_dynamic_mig_the_gpus_counter_set_also_counts_the_shares_the_full_gpu_got():
    """partitions.go PartCapacities hands out the GpuInfo's own maxCapacities map; applyConsumableShares
    writes `shares` into it after the full GPU's consumesCounters were built and before the counter
    set is (driver.go generateSplitResourceSlices): the set gains a `shares` counter, no device
    consumes it."""
    documents = slices(h200(), shares("3", "ConsumableShares=true,DynamicMIG=true"))
    by_name = devices(documents)

    [counter_set] = documents[0]["spec"]["sharedCounters"]
    assert counter_set["counters"]["shares"] == {"value": "3"}
    assert "shares" not in by_name["gpu-0"]["consumesCounters"][0]["counters"]
    assert by_name["gpu-0-mig-7g141gb-0-0"]["allowMultipleAllocations"] is True
    assert by_name["gpu-0-mig-7g141gb-0-0"]["capacity"]["shares"]["value"] == "3"


def test_an_ampere_with_mig_on_has_no_full_gpu_so_its_counter_set_gains_nothing():
    documents = slices(a100(), shares("3", "ConsumableShares=true,DynamicMIG=true"))

    assert "shares" not in documents[0]["spec"]["sharedCounters"][0]["counters"]


@pytest.mark.parametrize("kubernetes", ["1.34", "1.35", "1.36", "1.37"])
def test_shared_devices_are_valid_resource_slices(kubernetes):
    for mode in ("memory", "unlimited", "8"):
        for document in slices(load("h100-80gb-hbm3"), shares(mode)) + slices(load("a100-sxm4-40gb-mig"), shares(mode)):
            kubernetes_validate.validate(document, kubernetes, strict=True)


@pytest.mark.parametrize("mode, gates, message", [
    ("memory", "", "needs the driver's ConsumableShares gate"),
    ("half", "ConsumableShares=true", "must be disabled, memory, unlimited or a positive integer"),
    ("0", "ConsumableShares=true", "positive integer"),
])
def test_a_consumable_shares_setting_the_driver_refuses_is_an_error_saying_what_to_change(mode, gates, message):
    with pytest.raises(ValueError, match=message):
        DriverSettings.parse(gates=gates, consumable_shares=mode)


def test_consumable_shares_is_no_gate_of_v0_4_1():
    with pytest.raises(ValueError, match="v0.4.1 has no feature gate ConsumableShares"):
        DriverSettings.parse("v0.4.1", "ConsumableShares=true", "memory")
