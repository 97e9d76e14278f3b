"""What kubectl-gpu knows of HAMi's DRA driver (Project-HAMi/k8s-dra-driver, read at ebeaad97) and of
HAMi's own conversion webhook (Project-HAMi/HAMi-DRA), pinned to their source: a change upstream
shows here first.  The files each fact comes from are named in kubectl_gpu/dra/hami.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubectl_gpu.cel import compile_selector
from kubectl_gpu.dra import facts, hami
from kubectl_gpu.dra.devices import devices_from_slice
from kubectl_gpu.dra.quantity import parse_quantity

CASES = yaml.safe_load((Path(__file__).parent / "data" / "hami_dra" / "mutating_cases.yaml").read_text())
GIB = 2**30


def hami_device(minor: int, uuid: str, product: str, memory_bytes: int) -> dict:
    """One device as hami_core.go GetDevice publishes it."""
    attributes = {
        "type": {"string": hami.HAMI_GPU_TYPE}, "uuid": {"string": uuid}, "minor": {"int": minor},
        "productName": {"string": product}, "brand": {"string": "Nvidia"}, "architecture": {"string": "Ampere"},
        "cudaComputeCapability": {"version": "8.0.0"}, "driverVersion": {"version": "570.133.20"},
        "cudaDriverVersion": {"version": "12.8.0"}, "pcieBusID": {"string": f"0000:0{minor}:00.0"},
        "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"},
    }
    return {"name": hami.device_name(minor), "attributes": attributes,
            "capacity": hami.published_capacity(memory_bytes),
            "allowMultipleAllocations": hami.ALLOWS_MULTIPLE_ALLOCATIONS}


def slice_of(driver: str, devices: list[dict]) -> dict:
    return {"apiVersion": facts.NEWEST_DRA_API_VERSION, "kind": "ResourceSlice", "metadata": {"name": f"n-{driver}"},
            "spec": {"driver": driver, "nodeName": "n", "pool": {"name": "n", "generation": 1, "resourceSliceCount": 1},
                     "devices": devices}}


HAMI_DEVICES = devices_from_slice(slice_of(hami.HAMI_DRIVER, [
    hami_device(0, "GPU-aaa", "A100", 40 * GIB),
    hami_device(1, "gpu-123", "H100", 80 * GIB),
]))
NVIDIA_GPU = devices_from_slice(slice_of(facts.NVIDIA_DRIVER, [
    {"name": "gpu-0", "attributes": {"type": {"string": facts.GPU_TYPE}, "uuid": {"string": "GPU-n"}},
     "capacity": {"memory": {"value": "40Gi"}}}]))


def test_the_driver_name_device_type_and_class_are_the_drivers():
    # main.go DriverName; hami_core.go HAMiGpuDeviceType, CanonicalName; deviceclass-hami-gpu.yaml.
    assert hami.HAMI_DRIVER == "hami-core-gpu.project-hami.io"
    assert hami.HAMI_GPU_TYPE == "hami-gpu"
    assert hami.device_name(3) == "hami-gpu-3"
    assert hami.HAMI_DEVICE_CLASS == "hami-core-gpu.project-hami.io"
    assert hami.HAMI_DEVICE_CLASS_SELECTOR == ("device.driver == 'hami-core-gpu.project-hami.io' && "
                                               "device.attributes['hami-core-gpu.project-hami.io'].type == 'hami-gpu'")
    assert hami.HAMI_EXTENDED_RESOURCE_NAME == "nvidia.com/gpu"


def test_the_device_class_selects_hami_gpus_and_nothing_of_nvidias_driver():
    selector = compile_selector(hami.HAMI_DEVICE_CLASS_SELECTOR)
    assert [selector.matches(d) for d in HAMI_DEVICES] == [True, True]
    assert [selector.matches(d) for d in NVIDIA_GPU] == [False]


def test_a_hami_gpu_publishes_the_attributes_of_hami_core_go():
    assert [(a.name, a.kind) for a in hami.ATTRIBUTES] == [
        ("type", "string"), ("uuid", "string"), ("minor", "int"), ("productName", "string"), ("brand", "string"),
        ("architecture", "string"), ("cudaComputeCapability", "version"), ("driverVersion", "version"),
        ("cudaDriverVersion", "version"), ("pcieBusID", "string"), ("pcieRoot", "string")]
    assert hami.published_key(hami.hami_attribute("uuid")) == "uuid"
    assert hami.published_key(hami.hami_attribute("pcieRoot")) == "resource.kubernetes.io/pcieRoot"
    (device, _) = HAMI_DEVICES
    assert device.driver == hami.HAMI_DRIVER


def test_cores_and_memory_are_consumable_with_the_drivers_request_policies():
    # hami_core.go GetDevice: cores 100 (DecimalSI), default 100, range 0..100 step 1; memory the
    # GPU's bytes (BinarySI), default all of it, range 1Mi..all step 1Mi; multiple allocations allowed.
    assert hami.published_capacity(80 * GIB) == {
        "cores": {"value": "100", "requestPolicy": {"default": "100",
                                                    "validRange": {"min": "0", "max": "100", "step": "1"}}},
        "memory": {"value": "80Gi", "requestPolicy": {"default": "80Gi",
                                                      "validRange": {"min": "1Mi", "max": "80Gi", "step": "1Mi"}}},
    }
    assert hami.ALLOWS_MULTIPLE_ALLOCATIONS is True
    assert set(hami.ENFORCED_BY_HAMI_CORE) == {c.name for c in hami.CAPACITIES} == {"cores", "memory"}


def test_the_opaque_config_is_nvidias_api_under_hamis_driver_name():
    # device_state.go prepareDevices: GetOpaqueDeviceConfigs(configapi.StrictDecoder, DriverName, ...).
    assert hami.HAMI_CONFIG_API_VERSION == facts.NVIDIA_CONFIG_API_VERSION
    assert hami.HAMI_CONFIG_KINDS == (facts.GPU_CONFIG,)
    assert hami.HAMI_CORE_SUPPORT_GATE == "HAMiCoreSupport"
    assert set(hami.HAMI_CORE_SUPPORT_EXCLUDES) == {"TimeSlicingSettings", "MPSSupport", "PassthroughSupport",
                                                    "DynamicMIG"}


def test_hami_dra_converts_hamis_three_resources_with_its_units():
    # dra_device.go draDeviceFromNvidia and ConvertMemory.
    assert (hami.HAMI_DRA_COUNT_RESOURCE, hami.HAMI_DRA_MEMORY_RESOURCE, hami.HAMI_DRA_CORES_RESOURCE) == (
        "nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpucores")
    assert hami.HAMI_DRA_REQUEST_NAME == "gpu"
    assert hami.HAMI_DRA_TYPE_SELECTOR == 'device.attributes["hami-core-gpu.project-hami.io"].type == "hami-gpu"'
    for case in CASES["conversions"]:
        mib = case["limits"].get(hami.HAMI_DRA_MEMORY_RESOURCE)
        if mib is not None:
            assert hami.memory_bytes_of_gpumem(int(mib)) == parse_quantity(case["want"]["capacity"]["memory"])


@pytest.mark.parametrize("case", CASES["selectors"], ids=lambda c: c["name"])
def test_card_selectors_are_spelled_as_hami_dra_writes_them(case):
    written, refused = [], False
    for annotation in hami.CARD_ANNOTATIONS:
        if annotation.key in case["annotations"]:
            values = hami.annotation_values(case["annotations"][annotation.key])
            refused = refused or not values
            written.append(hami.card_selector(annotation, values))
    if case.get("error"):
        assert refused
    else:
        assert written == case["want"]


def test_card_selectors_pick_the_devices_hami_dra_means():
    by_uuid = compile_selector(hami.card_selector(hami.CARD_ANNOTATIONS[0], ["gpu-123"]))
    not_h100 = compile_selector(hami.card_selector(hami.CARD_ANNOTATIONS[3], ["H100"]))
    assert [by_uuid.matches(d) for d in HAMI_DEVICES] == [False, True]
    assert [not_h100.matches(d) for d in HAMI_DEVICES] == [True, False]


def test_a_device_class_of_hamis_driver_is_known_by_name_or_by_selector():
    assert hami.is_hami_device_class({"metadata": {"name": hami.HAMI_DEVICE_CLASS}})
    own = {"metadata": {"name": "a100-shared"},
           "spec": {"selectors": [{"cel": {"expression": hami.HAMI_DEVICE_CLASS_SELECTOR}}]}}
    assert hami.is_hami_device_class(own)
    nvidia = {"metadata": {"name": facts.GPU_DEVICE_CLASS},
              "spec": {"selectors": [{"cel": {"expression": facts.DEVICE_CLASS_SELECTORS[facts.GPU_DEVICE_CLASS]}}]}}
    assert not hami.is_hami_device_class(nvidia)


def test_hamis_names_are_spelled_only_in_dra_hami():
    from tests.test_one_home_per_fact import ROOT, _string_constants

    home = ROOT / "kubectl_gpu" / "dra" / "hami.py"
    names = {hami.HAMI_DRIVER, hami.HAMI_GPU_TYPE, hami.HAMI_DEVICE_CLASS_SELECTOR, hami.HAMI_DRA_TYPE_SELECTOR,
             *(a.key for a in hami.CARD_ANNOTATIONS)}
    found = {str(path.relative_to(ROOT)): hits for package in ("kubectl_gpu", "webhook")
             for path in (ROOT / package).rglob("*.py") if path != home and (hits := _string_constants(path) & names)}
    assert found == {}
