"""What the NVIDIA DRA driver publishes with its DynamicMIG gate, for an A100, an H100 and the H200,
device by device, as its code builds them (kubernetes-sigs/dra-driver-nvidia-gpu main 95932046,
v0.5.0): nvlib.go GetPerGpuAllocatableDevices / inspectMigProfilesAndPlacements / isDynamicMIGCapable,
partitions.go PartGetDevice / PartSharedCounterSets / PartConsumesCounters, mig.go CommonAttributesMig
/ CommonCapacitiesMig / ToCanonicalName / camelToDNSName, driver.go generateSplitResourceSlices /
generateCombinedResourceSlices, consumable_shares.go applyConsumableShares."""

from __future__ import annotations

import json

import kubernetes_validate
import pytest

from kubectl_gpu.inventory import DriverSettings, local_inventory
from kubectl_gpu.inventory.recorded_nvml import RecordedNvml
from tests.mig_tables import MISSING, SHARED_NVML, lgip_profiles, with_placements
from tests.test_inventory_fake_nvml import DATA

DYNAMIC_MIG = DriverSettings.parse(gates="DynamicMIG=true")
MI = 1024 * 1024


def slices(node: dict, settings: DriverSettings = DYNAMIC_MIG, name: str = "gpu-node-1") -> list[dict]:
    recorded = RecordedNvml(node)
    return list(local_inventory(name, recorded.sysfs, settings, nvml=recorded.module()).slices)


def devices(documents: list[dict]) -> dict[str, dict]:
    return {d["name"]: d for s in documents for d in s["spec"].get("devices", ())}


def load(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


def a100() -> dict:
    node = load("a100-sxm4-40gb-mig")
    gpu = node["gpus"][0]
    gpu["gpuInstanceProfiles"] = with_placements(gpu["gpuInstanceProfiles"])
    return node


def h200() -> dict:
    if not SHARED_NVML.is_dir():
        pytest.skip(MISSING)
    node = json.loads((SHARED_NVML / "h200-141gb-real.json").read_text())
    node["gpus"][0]["gpuInstanceProfiles"] = lgip_profiles((SHARED_NVML / "h200-mig-lgip.txt").read_text())
    return node


H100_NAMES = [
    "gpu-0",
    "gpu-0-mig-1g10gb-19-0", "gpu-0-mig-1g10gb-19-1", "gpu-0-mig-1g10gb-19-2", "gpu-0-mig-1g10gb-19-3",
    "gpu-0-mig-1g10gb-19-4", "gpu-0-mig-1g10gb-19-5", "gpu-0-mig-1g10gb-19-6",
    # "1g.10gb+me": dots dropped, then toRFC1123Compliant turns "+" into "-".
    "gpu-0-mig-1g10gb-me-20-0", "gpu-0-mig-1g10gb-me-20-1", "gpu-0-mig-1g10gb-me-20-2", "gpu-0-mig-1g10gb-me-20-3",
    "gpu-0-mig-1g10gb-me-20-4", "gpu-0-mig-1g10gb-me-20-5", "gpu-0-mig-1g10gb-me-20-6",
    "gpu-0-mig-1g20gb-15-0", "gpu-0-mig-1g20gb-15-2", "gpu-0-mig-1g20gb-15-4", "gpu-0-mig-1g20gb-15-6",
    "gpu-0-mig-2g20gb-14-0", "gpu-0-mig-2g20gb-14-2", "gpu-0-mig-2g20gb-14-4",
    "gpu-0-mig-3g40gb-9-0", "gpu-0-mig-3g40gb-9-4",
    "gpu-0-mig-4g40gb-5-0",
    "gpu-0-mig-7g80gb-0-0",
]
# The largest of each capacity over all profiles (the 7g.80gb's) and one counter per memory slice.
H100_COUNTERS = {
    "copy-engines": {"value": "8"}, "decoders": {"value": "7"}, "encoders": {"value": "0"},
    "jpeg-engines": {"value": "7"}, "memory": {"value": "81152Mi"}, "multiprocessors": {"value": "132"},
    "ofa-engines": {"value": "1"}, **{f"memory-slice-{i}": {"value": "1"} for i in range(8)},
}


def test_an_h100_is_its_full_gpu_plus_every_mig_placement_in_one_slice_after_its_counters():
    documents = slices(load("h100-80gb-hbm3-mig-profiles"))

    counters, gpu_slice = documents
    assert counters["spec"]["sharedCounters"] == [{"name": "gpu-0-counter-set", "counters": H100_COUNTERS}]
    assert "devices" not in counters["spec"]
    assert [d["name"] for d in gpu_slice["spec"]["devices"]] == sorted(H100_NAMES)  # Go's sorted names
    assert "sharedCounters" not in gpu_slice["spec"]
    for index, document in enumerate(documents):
        assert document["spec"]["pool"] == {"name": "gpu-node-1", "generation": 1, "resourceSliceCount": 2}
        assert document["metadata"]["generateName"] == f"0000{index}-gpu.nvidia.com-gpu-node-1-"


def test_the_h100_full_gpu_consumes_its_whole_counter_set_and_has_the_largest_profiles_capacity():
    full = devices(slices(load("h100-80gb-hbm3-mig-profiles")))["gpu-0"]

    assert full["capacity"] == {
        "copyEngines": {"value": "8"}, "decoders": {"value": "7"}, "encoders": {"value": "0"},
        "jpegEngines": {"value": "7"}, "memory": {"value": "81152Mi"}, "multiprocessors": {"value": "132"},
        "ofaEngines": {"value": "1"}}
    assert full["consumesCounters"] == [{"counterSet": "gpu-0-counter-set", "counters": H100_COUNTERS}]
    assert full["attributes"]["type"] == {"string": "gpu"}
    assert full["attributes"]["uuid"] == {"string": "GPU-4b7828e9-d6cf-1bb6-9018-02be0a309155"}


def test_an_h100_mig_placement_consumes_its_profile_and_its_memory_slices_and_has_no_uuid_yet():
    mig = devices(slices(load("h100-80gb-hbm3-mig-profiles")))["gpu-0-mig-3g40gb-9-4"]

    assert mig["capacity"] == {
        "copyEngines": {"value": "3"}, "decoders": {"value": "3"}, "encoders": {"value": "0"},
        "jpegEngines": {"value": "3"}, "memory": {"value": "40448Mi"}, "multiprocessors": {"value": "60"},
        "ofaEngines": {"value": "0"}}  # no memorySlice<N>: those are the static MIG devices'
    assert mig["consumesCounters"] == [{"counterSet": "gpu-0-counter-set", "counters": {
        "copy-engines": {"value": "3"}, "decoders": {"value": "3"}, "encoders": {"value": "0"},
        "jpeg-engines": {"value": "3"}, "memory": {"value": "40448Mi"},
        "memory-slice-4": {"value": "1"}, "memory-slice-5": {"value": "1"}, "memory-slice-6": {"value": "1"},
        "memory-slice-7": {"value": "1"}, "multiprocessors": {"value": "60"}, "ofa-engines": {"value": "0"}}}]
    assert mig["attributes"]["profile"] == {"string": "3g.40gb"}
    assert mig["attributes"]["parentUUID"] == {"string": "GPU-4b7828e9-d6cf-1bb6-9018-02be0a309155"}
    assert "uuid" not in mig["attributes"]


def test_an_a100_with_mig_on_publishes_only_its_placements_but_still_its_counter_set():
    """Ampere cannot leave MIG mode without a reset: the full GPU is not allocatable, its counter set
    is still published (the partitions reference it)."""
    documents = slices(a100())
    by_name = devices(documents)

    assert "gpu-0" not in by_name
    assert sorted(by_name) == sorted(
        [f"gpu-0-mig-1g5gb-19-{s}" for s in range(7)] + [f"gpu-0-mig-1g5gb-me-20-{s}" for s in range(7)]
        + [f"gpu-0-mig-1g10gb-15-{s}" for s in (0, 2, 4, 6)] + [f"gpu-0-mig-2g10gb-14-{s}" for s in (0, 2, 4)]
        + ["gpu-0-mig-3g20gb-9-0", "gpu-0-mig-3g20gb-9-4", "gpu-0-mig-4g20gb-5-0", "gpu-0-mig-7g40gb-0-0"])
    [counter_set] = documents[0]["spec"]["sharedCounters"]
    assert counter_set["counters"]["memory"] == {"value": "40192Mi"}
    assert counter_set["counters"]["multiprocessors"] == {"value": "98"}
    assert by_name["gpu-0-mig-1g5gb-19-6"]["consumesCounters"][0]["counters"]["memory-slice-6"] == {"value": "1"}


def test_an_a100_with_mig_off_is_no_dynamic_mig_gpu():
    node = a100()
    node["gpus"][0]["migMode"] = [0, 0]
    node["gpus"][0].pop("migDevices")

    counters, document = slices(node)

    # device_state.go IsMigCapable: the GPU can do MIG, so the driver splits its slices (1.35+), but
    # nvlib.go isDynamicMIGCapable: an Ampere with MIG off is announced the static way, so there is
    # no counter set and the first slice holds nothing.
    assert "sharedCounters" not in counters["spec"] and not counters["spec"].get("devices")
    [full] = document["spec"]["devices"]
    assert full["name"] == "gpu-0" and "consumesCounters" not in full
    assert "sharedCounters" not in document["spec"]


def test_gpus_that_cannot_do_mig_share_no_counters_and_one_slice_each():
    node = load("h100-80gb-hbm3")
    node["gpus"][0].pop("migMode")  # not MIG capable: nvmlDeviceGetMigMode is NotSupported

    [document] = slices(node)

    [full] = document["spec"]["devices"]
    assert full["name"] == "gpu-0" and "consumesCounters" not in full


def test_kubernetes_1_34_gets_counters_and_devices_of_a_gpu_in_one_slice():
    settings = DriverSettings.parse(gates="DynamicMIG=true", kubernetes_minor=34)

    [document] = slices(load("h100-80gb-hbm3-mig-profiles"), settings)

    assert document["spec"]["sharedCounters"][0]["name"] == "gpu-0-counter-set"
    assert len(document["spec"]["devices"]) == len(H100_NAMES)


def test_the_h200_is_predicted_from_its_real_recording_and_mig_profile_table():
    documents = slices(h200())
    by_name = devices(documents)

    assert sorted(by_name) == sorted(
        ["gpu-0"] + [f"gpu-0-mig-1g18gb-19-{s}" for s in range(7)] + [f"gpu-0-mig-1g18gb-me-20-{s}" for s in range(7)]
        + [f"gpu-0-mig-1g35gb-15-{s}" for s in (0, 2, 4, 6)] + [f"gpu-0-mig-2g35gb-14-{s}" for s in (0, 2, 4)]
        + ["gpu-0-mig-3g71gb-9-0", "gpu-0-mig-3g71gb-9-4", "gpu-0-mig-4g71gb-5-0", "gpu-0-mig-7g141gb-0-0"])
    assert [p for p in (by_name[n]["attributes"].get("profile") for n in sorted(by_name)) if p][-1] == {
        "string": "7g.141gb"}
    assert by_name["gpu-0"]["capacity"]["memory"] == {"value": "140Gi"}  # the 7g.141gb's 143360 MiB
    assert by_name["gpu-0-mig-1g18gb-me-20-3"]["capacity"] == {
        "copyEngines": {"value": "1"}, "decoders": {"value": "1"}, "encoders": {"value": "0"},
        "jpegEngines": {"value": "1"}, "memory": {"value": "16Gi"}, "multiprocessors": {"value": "16"},
        "ofaEngines": {"value": "1"}}
    assert documents[0]["spec"]["sharedCounters"][0]["counters"]["memory-slice-7"] == {"value": "1"}


@pytest.mark.parametrize("kubernetes", ["1.34", "1.35", "1.36", "1.37"])
def test_dynamic_mig_slices_are_valid_resource_slices(kubernetes):
    settings = DriverSettings.parse(gates="DynamicMIG=true", kubernetes_minor=int(kubernetes[2:]))
    for node in (load("h100-80gb-hbm3-mig-profiles"), a100()):
        for document in slices(node, settings):
            kubernetes_validate.validate(document, kubernetes, strict=True)
