"""The one table of DRA and NVIDIA driver facts agrees with the driver's own output and with the
names every face uses (kubectl_gpu/dra/facts.py; ../shared/STYLE.md items 1-3)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from kubectl_gpu.core import ApiVersion
from kubectl_gpu.dra import facts
from kubectl_gpu.core.families import mig_profile_of

DRIVER = Path(__file__).resolve().parent / "data" / "driver"
SLICES = [p for p in sorted(DRIVER.glob("*.yaml")) if p.name != "legacy-pods.yaml"]
_KINDS = {"string": "string", "version": "version", "int": "int", "bool": "bool"}


def devices():
    for path in SLICES:
        yield from yaml.safe_load(path.read_text())["spec"]["devices"]


def test_every_attribute_the_driver_publishes_is_in_the_table_with_its_kind_and_device_type():
    for device in devices():
        device_type = device["attributes"]["type"]["string"]
        for qualified, value in device["attributes"].items():
            name = qualified.rsplit("/", 1)[-1]
            attribute = facts.attribute(name)
            ((kind, _),) = value.items()
            assert attribute.kind == _KINDS[kind], qualified
            assert device_type in attribute.device_types, qualified
            assert attribute.removed is None, qualified
            assert (attribute.domain == "resource.kubernetes.io") == ("/" in qualified), qualified
        for name in device.get("capacity", {}):
            if not re.fullmatch(r"memorySlice\d+", name):
                assert device_type in facts.capacity(name).device_types, name


def test_attributes_every_device_of_a_type_has_are_the_ones_a_selector_may_read_unguarded():
    for device in devices():
        device_type = device["attributes"]["type"]["string"]
        required = {a.name for a in facts.ATTRIBUTES
                    if device_type in a.device_types and not a.optional and not a.removed}
        assert required <= set(device["attributes"]), device["name"]


def test_index_minor_and_the_drivers_own_pcie_bus_id_are_known_as_removed():
    """kubernetes-sigs/dra-driver-nvidia-gpu cmd/gpu-kubelet-plugin/deviceinfo.go: index and minor are gone
    at v25.8.0, pcieBusID (gpu.nvidia.com domain) at v25.12.0, for resource.kubernetes.io/pciBusID."""
    assert set(facts.REMOVED_NVIDIA_ATTRIBUTES) == {"index", "minor", "pcieBusID"}
    assert facts.attribute("pcieBusID").replaced_by == facts.ATTR.pciBusID


def test_the_api_versions_the_core_writes_are_the_ones_the_facts_list():
    assert [v.value for v in ApiVersion] == [f"{facts.DRA_GROUP}/{v}" for v in facts.DRA_VERSIONS]


@pytest.mark.parametrize("minor, version", [(32, "v1beta1"), (33, "v1beta2"), (34, "v1"), (37, "v1")])
def test_each_kubernetes_minor_is_served_its_newest_dra_version(minor, version):
    assert facts.dra_version_for(minor) == version


def test_a_kubernetes_without_dra_is_told_so():
    with pytest.raises(ValueError, match="1.32"):
        facts.dra_version_for(31)


@pytest.mark.parametrize("suffix", facts.MIG_PROFILE_SUFFIXES)
@pytest.mark.parametrize("base", ["1g.10gb", "2g.20gb", "1c.2g.20gb", "7g.141gb"])
def test_every_spelling_of_a_mig_profile_maps_back_to_the_drivers(base, suffix):
    profile = base + suffix
    assert facts.driver_mig_profile(profile) == profile  # the driver's own
    assert mig_profile_of(facts.device_plugin_mig_resource(profile)) == profile  # device plugin: + -> .
    assert facts.driver_mig_profile(profile.replace("+", "")) == profile  # GFD's product label drops +


@pytest.mark.parametrize("spelling", ["", "INVALID", "1g", "1g.10gb+foo", "1g.10gb.-me", "0g.5gb", "1g.10gb+"])
def test_what_is_no_mig_profile_is_recognised_as_none(spelling):
    assert facts.driver_mig_profile(spelling) is None


def test_gfd_families_name_the_drivers_architectures():
    assert set(facts.GFD_FAMILY_ARCHITECTURES.values()) <= set(facts.ARCHITECTURES.values())
    assert facts.architecture_of_gfd_family("ada-lovelace") == "Ada Lovelace"
    assert facts.architecture_of_gfd_family("Ada Lovelace") == "Ada Lovelace"
    assert facts.architecture_of_gfd_family("fermi") is None


def test_device_classes_select_their_device_type_as_the_drivers_chart_does():
    for device_type, device_class in facts.DEVICE_CLASS_OF_TYPE.items():
        assert facts.DEVICE_CLASS_SELECTORS[device_class].endswith(f".type == '{device_type}'")


@pytest.mark.parametrize("recording", ["h100-80gb-hbm3", "a100-sxm4-80gb-mig", "a100-sxm4-40gb-mig", "gh200-480gb-ats"])
def test_inventorys_preview_publishes_only_attributes_the_table_knows(recording, monkeypatch):
    """inventory mirrors the driver from NVML; the facts mirror it from its source: they must agree."""
    from kubectl_gpu.inventory import nvml_reader
    from kubectl_gpu.inventory.published_devices import plan_inventory
    from kubectl_gpu.inventory.recorded_nvml import RecordedNvml
    from kubectl_gpu.inventory.resource_slice import resource_slice

    RecordedNvml.from_file(Path(__file__).parent / "data" / "nvml" / f"{recording}.json").install(monkeypatch.setattr)
    preview = resource_slice(plan_inventory(nvml_reader.read_node(Path("/nonexistent"))), "node")
    assert preview["spec"]["devices"]
    for device in preview["spec"]["devices"]:
        device_type = device["attributes"]["type"]["string"]
        for qualified, value in device["attributes"].items():
            attribute = facts.attribute(qualified.rsplit("/", 1)[-1])
            ((kind, _),) = value.items()
            assert attribute.kind == _KINDS[kind] and device_type in attribute.device_types, qualified
        for name in device.get("capacity", {}):
            if not re.fullmatch(r"memorySlice\d+", name):
                assert device_type in facts.capacity(name).device_types, name


def test_mig_device_names_in_the_fixtures_are_the_ones_inventory_derives_like_the_driver():
    from kubectl_gpu.inventory import driver_names

    migs = [d for d in devices() if d["attributes"]["type"]["string"] == "mig"]
    assert migs
    for device in migs:
        minor, profile_id, start = re.fullmatch(r"gpu-(\d+)-mig-.+-(\d+)-(\d+)", device["name"]).groups()
        profile = device["attributes"]["profile"]["string"]
        assert driver_names.mig_device_name(int(minor), profile, int(profile_id), int(start)) == device["name"]


@pytest.mark.parametrize("labels", [{"pool": "dra"}, {"pool": "other"}, {"ack.node.gpu.schedule": "disabled"},
                                    {"ack.node.gpu.schedule": "enabled"}, {}])
def test_the_webhook_and_describe_doctor_agree_on_which_nodes_are_dra_nodes(labels):
    """One marker rule: a key alone matches any value, key=value that value only."""
    from kubectl_gpu.inspect import dra_nodes
    from webhook import fencing

    for markers in (facts.DEFAULT_DRA_NODE_MARKERS, (facts.DraNodeMarker("pool"),),
                    (facts.DraNodeMarker.parse("pool=dra"),)):
        assert fencing.is_dra_node(labels, markers) == dra_nodes.is_dra_node(labels, markers)
    assert dra_nodes.is_dra_node(labels, (facts.DraNodeMarker("pool"),)) == ("pool" in labels)


def test_a_dra_node_label_flag_without_a_value_says_how_to_write_it():
    with pytest.raises(ValueError, match="KEY=VALUE"):
        facts.DraNodeMarker.parse("pool")


READERS_OF_PUBLISHED_NAMES = ("kubectl_gpu/inventory/published_devices.py", "kubectl_gpu/inventory/table.py",
                              "kubectl_gpu/cli/inventory.py", "kubectl_gpu/inspect/devices.py")


@pytest.mark.parametrize("module", READERS_OF_PUBLISHED_NAMES)
def test_modules_that_read_or_write_driver_attributes_take_their_names_from_the_facts(module):
    """One fact in one place: a driver rename is one edit in facts.py.  Attribute and capacity names
    may appear in these modules only as facts.ATTR.<name> / facts.CAP.<name>, never as string
    literals passed to a lookup or used as a key (output field names of describe -o json aside)."""
    import ast

    names = {a.name for a in (*facts.ATTRIBUTES, *facts.CAPACITIES)}
    tree = ast.parse((Path(__file__).resolve().parents[1] / module).read_text())
    literal = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            used = list(node.args)
        elif isinstance(node, ast.Subscript):
            used = [node.slice]
        elif isinstance(node, ast.Compare):
            used = [node.left, *node.comparators]
        elif isinstance(node, ast.Dict) and not any(
                isinstance(k, ast.Constant) and k.value in ("resourceSlice", "migProfile") for k in node.keys):
            used = [k for k in node.keys if k is not None]
        else:
            continue
        literal += [u.value for u in used if isinstance(u, ast.Constant) and u.value in names]
    assert literal == [], f"{module}: literal driver names {literal}; use facts.ATTR / facts.CAP"


def test_iommufd_enabled_is_known_as_new_in_v0_4_0():
    """kubernetes-sigs/dra-driver-nvidia-gpu cmd/gpu-kubelet-plugin/deviceinfo.go, VfioDeviceInfo.GetDevice:
    v25.12.0 publishes no `iommuFDEnabled`; v0.4.0, v0.4.1 and main do.  A selector reading it unguarded
    is a runtime error on a v25.12.0 node."""
    assert facts.attribute("iommuFDEnabled").added == "v0.4.0"
