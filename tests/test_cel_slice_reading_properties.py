"""Reading a ResourceSlice quickly changes nothing: a differential property test.

`devices_from_slice` reads the common device (the same attribute names and kinds from device to
device, one capacity ``value`` each) on a quick path, because explain reads 8,000 devices in a
1,000-node cluster.  The general reading (``_general_devices``: each attribute and capacity entry
checked one by one, as the API server's validation does) is the reference.  For every slice,
valid or not, `devices_from_slice` gives what the general reading gives: the same devices with the
same values, of the same types, in the same key order, or the same InvalidResourceSlice message.

Generated slices are valid ones with, most often, one or two things the API server refuses
(kubernetes/kubernetes pkg/apis/resource/validation/validation.go: validateDeviceAttribute,
validateDeviceCapacity, validateRequestPolicy): every attribute kind and list kind, kinds spelled
wrong, two kinds or none, values of another type (a bool under int, an int under bool, a wrong
item in a list, an empty list), versions valid and not,
names qualified or not and YAML's non-string keys (1, True, null), capacities with and without a
requestPolicy, v1alpha3's bare quantity, v1beta1's ``basic:`` wrapper, per-device nodeName and
allowMultipleAllocations.  Devices of one slice share their shape, as a driver's do, so a shape
the quick path has already seen meets values it must still check.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kubectl_gpu.dra.devices import InvalidResourceSlice, PlacementFacts, devices_from_slice
from kubectl_gpu.dra import devices as device_module
from kubectl_gpu.dra.values import Quantity, Semver

DATA = Path(__file__).parent / "data" / "slices"
SETTINGS = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])

NAMES = st.sampled_from([
    "productName", "uuid", "driverVersion", "features", "index",
    "gpu.nvidia.com/productName", "resource.kubernetes.io/pciBusID", "dom.example.com/x", "a/b/c", "/x", "x/",
])
ODD_NAMES = st.sampled_from([1, True, 0, False, None, 1.5])  # YAML keys that are not strings
CAPACITY_NAMES = st.sampled_from(["memory", "cores", "dom.example.com/memory"])
KINDS = st.sampled_from(["string", "int", "bool", "version", "strings", "ints", "bools", "versions"])
ODD_KINDS = st.sampled_from(["String", "float", "quantity", "", 1, True, None])
VERSIONS = st.sampled_from(["1.2.3", "12.8.0", "570.133.20", "1.0.0-rc.1+build.5", "9.0.0"])
NOT_VERSIONS = st.sampled_from(["01.2.3", "1.2", "v1.2.3", "", "1.2.3-", "1.2.3+"])  # as blang/semver refuses
SCALARS = st.one_of(
    st.sampled_from(["NVIDIA H100", "gpu", "", "GPU-0"]), VERSIONS, NOT_VERSIONS, st.integers(-3, 2**70), st.booleans(),
    st.none(), st.just(1.5),
)
VALUES = SCALARS | st.lists(SCALARS, max_size=3) | st.dictionaries(st.sampled_from(["string", "a"]), SCALARS, max_size=2)
WELL_TYPED = {"string": st.sampled_from(["NVIDIA H100", "gpu", ""]), "int": st.integers(-3, 2**70),
              "bool": st.booleans(), "version": VERSIONS}
WELL_TYPED.update({f"{kind}s": st.lists(items, min_size=1, max_size=3) for kind, items in WELL_TYPED.items()})
# What each kind is confused with: a bool is not an int to the API server, nor an int a bool.
CONFUSED = {"string": st.sampled_from([1, True, None, ["gpu"]]), "int": st.sampled_from([True, False, "1", 1.0, [1]]),
            "bool": st.sampled_from([0, 1, "true", None]), "version": NOT_VERSIONS | st.sampled_from([1, None, ["1.2.3"]])}
CONFUSED.update({f"{kind}s": st.one_of(WELL_TYPED[kind], st.just([]),
                                       st.tuples(WELL_TYPED[f"{kind}s"], confused).map(lambda t: [*t[0], t[1]]))
                 for kind, confused in CONFUSED.items()})


QUANTITIES = st.sampled_from(["80Gi", "40Gi", "81559Mi", "1", "1e3", "0.5"])
ODD_QUANTITIES = st.sampled_from([" 80Gi ", "bad", "", 80, 1.5, True, None, ["80Gi"]])
POLICIES = st.sampled_from([{"default": "1Gi"}, {"validValues": ["1Gi", "2Gi"]}, {"validRange": {"min": "1Gi", "step": "1Gi"}}])
ODD_POLICIES = st.sampled_from([{"validRange": {"min": "1Gi", "step": "0"}}, {"validRange": {}}, {"validValues": "1Gi"},
                                {"default": "x"}, "x", None, {}])


def mostly(usual: st.SearchStrategy, unusual: st.SearchStrategy, one_in: int = 6) -> st.SearchStrategy:
    """``unusual`` once in ``one_in`` (not at an end: hypothesis tries the ends often)."""
    return st.integers(0, one_in - 1).flatmap(lambda n: unusual if n == 2 else usual)


def attribute(kind: str) -> st.SearchStrategy:
    return st.builds(lambda value: {kind: value}, WELL_TYPED[kind])


# What is wrong with a slice, one thing at a time: each takes (draw, device) and changes the device.
def confused_value(draw, device: dict) -> None:
    attributes = device.get("attributes")
    names = [name for name, typed in attributes.items() if typed.__class__ is dict and len(typed) == 1
             and next(iter(typed)) in CONFUSED] if attributes.__class__ is dict else []
    if names:
        name = draw(st.sampled_from(names))
        kind = next(iter(attributes[name]))
        attributes[name] = {kind: draw(CONFUSED[kind] if draw(st.integers(0, 3)) else VALUES)}


def extra_kind(draw, device: dict) -> None:
    attributes = device.get("attributes")
    names = [name for name, typed in attributes.items() if typed.__class__ is dict] if attributes.__class__ is dict else []
    if names:
        typed = attributes[draw(st.sampled_from(names))]
        kind = draw(KINDS)
        typed[kind] = draw(WELL_TYPED[kind])  # a second kind, or the value of the one given changed


def odd_typed_value(draw, device: dict) -> None:
    attributes = device.get("attributes")
    if attributes.__class__ is not dict or not attributes:
        return
    name = draw(st.sampled_from(list(attributes)))
    attributes[name] = draw(st.one_of(
        st.builds(lambda k, v: {k: v}, ODD_KINDS, VALUES),
        st.dictionaries(KINDS, VALUES, max_size=3).filter(lambda typed: len(typed) != 1),  # no kind, or two
        VALUES,  # not a map
    ))


def odd_name(draw, device: dict) -> None:
    if device.get("attributes").__class__ is dict:
        device["attributes"][draw(ODD_NAMES)] = draw(attribute(draw(KINDS)))


def odd_capacity(draw, device: dict) -> None:
    if device.get("capacity").__class__ is not dict:
        return
    name = draw(CAPACITY_NAMES | ODD_NAMES)
    device["capacity"][name] = draw(st.one_of(
        st.builds(lambda q: {"value": q}, ODD_QUANTITIES),
        st.builds(lambda q, p: {"value": q, "requestPolicy": p}, QUANTITIES | ODD_QUANTITIES, POLICIES | ODD_POLICIES),
        QUANTITIES | ODD_QUANTITIES,  # v1alpha3: the quantity itself
        st.dictionaries(st.sampled_from(["value", "requestPolicy", "other"]), QUANTITIES, max_size=3),
    ))


def odd_device_field(draw, device: dict) -> None:
    key, values = draw(st.sampled_from([
        ("name", ["", 7, None]), ("attributes", [{}, None, [], "x"]), ("capacity", [{}, None, [], "x"]),
        ("nodeName", ["node-b", "", None, 3]), ("allowMultipleAllocations", [True, False, "yes", None]),
    ]))
    device[key] = draw(st.sampled_from(values))


DEFECTS = [confused_value, confused_value, extra_kind, odd_typed_value, odd_name, odd_capacity, odd_device_field]


@st.composite
def resource_slices(draw) -> dict:
    """A valid slice whose devices share one shape (names and kinds), each with its own values,
    then (most often) a few things wrong with it."""
    shape = draw(st.dictionaries(NAMES, KINDS, max_size=6))
    capacity_names = draw(st.lists(CAPACITY_NAMES, max_size=2, unique=True))
    ignored_field = draw(st.sampled_from([None, None, "consumesCounters", "taints"]))
    devices: list[Any] = []
    for index in range(draw(st.integers(1, 4)) if draw(st.integers(0, 3)) == 2 else 2):
        attributes = {name: draw(attribute(kind)) for name, kind in shape.items()}
        if draw(st.integers(0, 5)) == 3:
            attributes = dict(reversed(attributes.items()))  # the same names in another order
        capacity = {name: draw(mostly(
            st.builds(lambda q: {"value": q}, QUANTITIES),
            st.builds(lambda q, p: {"value": q, "requestPolicy": p}, QUANTITIES, POLICIES),
        )) for name in capacity_names}
        device = {"name": f"gpu-{index}", "attributes": attributes, "capacity": capacity}
        for field in draw(st.lists(st.sampled_from(["attributes", "capacity"]), max_size=2, unique=True)):
            if not device[field]:
                del device[field]  # an empty map, or none at all
        if ignored_field:
            device[ignored_field] = [{"counterSet": "memory"}]  # a field the reading ignores
        devices.append(device)
    for _ in range(draw(mostly(st.just(1), st.integers(0, 2)))):
        # Most often not the first device: a shape's reader is made from the first device, and
        # must check the next ones itself.
        index = draw(st.integers(0, len(devices) - 1)) if draw(st.integers(0, 3)) == 2 else len(devices) - 1
        if devices[index].__class__ is dict:
            draw(st.sampled_from(DEFECTS))(draw, devices[index])
        if draw(st.integers(0, 20)) == 7:
            devices[index] = draw(VALUES)  # not a device at all
    for index, device in enumerate(devices):
        if device.__class__ is dict and draw(st.integers(0, 6)) == 3:
            devices[index] = {"name": device.pop("name", None), "basic": device}  # v1beta1 and v1alpha3
    # Two drivers: devices of one shape from another driver go to other domains.
    spec: dict[str, Any] = {"driver": draw(st.sampled_from(["gpu.nvidia.com", "dom.example.com"])),
                            "pool": {"name": "node-a"}, "devices": devices}
    spec.update(draw(st.sampled_from([{"nodeName": "node-a"}, {"allNodes": True}, {"nodeSelector": {"x": 1}}, {}])))
    return {"apiVersion": draw(st.sampled_from(["resource.k8s.io/v1", "resource.k8s.io/v1beta1"])),
            "kind": "ResourceSlice", "metadata": {"name": "node-a-gpu"}, "spec": spec}


def described(value: Any) -> Any:
    """A value with its type and, for maps, its key order, so that equal means identical."""
    if isinstance(value, dict):
        return ("map", [(described(k), described(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [described(item) for item in value])
    if isinstance(value, (Quantity, Semver)):
        return (type(value).__name__, sorted(vars(value).items()))
    if isinstance(value, PlacementFacts):
        return ("PlacementFacts", described(dataclasses.asdict(value)))
    assert isinstance(value, (str, int, float, type(None), Fraction, tuple)), value
    return (type(value).__name__, value)


def outcome(read, slice_obj: Any) -> Any:
    """Every field of every device read, or the error."""
    try:
        devices = read(slice_obj)
    except InvalidResourceSlice as error:
        return ("refused", str(error))
    return [described(vars(device)) for device in devices]


def everything_in(value: Any) -> list:
    found = [value]
    for item in value.values() if isinstance(value, dict) else value if isinstance(value, list) else ():
        found += everything_in(item)
    return found


def read_generally(slice_obj: Any) -> list:
    return device_module._general_devices(*device_module._slice_fields(slice_obj))


@SETTINGS
@given(resource_slices())
def test_a_slice_reads_as_the_general_reading_reads_it(slice_obj) -> None:
    expected = outcome(read_generally, slice_obj)
    event("refused" if expected[:1] == ("refused",) else f"{len(expected)} devices read")
    try:
        event("read quickly" if device_module._quick_devices(*device_module._slice_fields(slice_obj)) else "not quickly")
    except InvalidResourceSlice:
        pass
    assert outcome(devices_from_slice, slice_obj) == expected


@SETTINGS
@given(resource_slices())
def test_the_values_read_are_the_devices_own_not_the_slices_lists(slice_obj) -> None:
    # A list attribute is copied: a caller changing a device's list does not change the slice.
    try:
        devices = devices_from_slice(slice_obj)
    except InvalidResourceSlice:
        return
    given_lists = {id(value) for value in everything_in(slice_obj) if isinstance(value, list)}
    for device in devices:
        for domain in device.attributes.values():
            assert not any(id(value) in given_lists for value in domain.values() if isinstance(value, list))


def a_slice(*devices: dict) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "node-a-gpu"},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": "node-a", "pool": {"name": "node-a"}, "devices": list(devices)}}


ALL_KINDS = {"type": {"string": "gpu"}, "index": {"int": 3}, "mig": {"bool": True}, "driverVersion": {"version": "570.133.20"},
             "features": {"strings": ["mig"]}, "ids": {"ints": [1, 2]}, "flags": {"bools": [False]},
             "gpu.nvidia.com/cudaVersions": {"versions": ["12.8.0"]}, "resource.kubernetes.io/pciBusID": {"string": "0000:10:00.0"}}


@pytest.mark.parametrize("devices", [
    pytest.param(yaml.safe_load((DATA / "nvidia-h100-node.yaml").read_text())["spec"]["devices"], id="nvidia-h100-node"),
    pytest.param([{"name": "gpu-0", "attributes": ALL_KINDS, "capacity": {"memory": {"value": "80Gi"}}},
                  {"name": "gpu-1", "attributes": ALL_KINDS, "capacity": {"memory": {"value": "40Gi"}}}], id="every-kind"),
    pytest.param([{"name": "gpu-0-mig-1g", "attributes": {"type": {"string": "mig"}},
                   "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": {"value": "10Gi"}}}]}],
                 id="no-capacity-and-counters"),
    pytest.param([{"name": "gpu-0"}, {"name": "gpu-1", "attributes": {}, "capacity": {}}], id="bare"),
])
def test_the_devices_drivers_publish_are_read_quickly(devices) -> None:
    # Not a timing: the quick reading takes these shapes (the property above would hold trivially
    # if it gave every slice up), and reads them as the general reading does.
    slice_obj = a_slice(*devices)
    quick = device_module._quick_devices(*device_module._slice_fields(slice_obj))
    assert quick is not None
    assert outcome(lambda _: quick, slice_obj) == outcome(read_generally, slice_obj)


@pytest.mark.parametrize("path", sorted(DATA.glob("*.yaml")), ids=lambda p: p.name)
def test_the_slices_drivers_publish_read_as_the_general_reading_reads_them(path) -> None:
    for document in yaml.safe_load_all(path.read_text()):
        for slice_obj in (document or {}).get("items", [document]) if document else ():
            if device_module.is_resource_slice(slice_obj):
                assert outcome(devices_from_slice, slice_obj) == outcome(read_generally, slice_obj)


WELL_FORMED = {"name": "gpu-0", "attributes": {"type": {"string": "gpu"}, "driverVersion": {"version": "570.133.20"},
                                               "features": {"strings": ["mig"]}, "index": {"int": 0}},
               "capacity": {"memory": {"value": "80Gi"}}}


def _with(**changes: Any) -> dict:
    device = {**WELL_FORMED, "name": "gpu-1", "attributes": dict(WELL_FORMED["attributes"])}
    for name, value in changes.items():
        if name == "name":
            device["name"] = value
        elif name == "memory":
            device["capacity"] = {"memory": {"value": value}}
        else:
            device["attributes"][name] = value
    return device


@pytest.mark.parametrize("defect, message", [
    (_with(features={"strings": []}), "features: strings must be a non-empty list"),
    (_with(name=""), "every device needs a name"),
    (_with(index={"int": True}), "is not a valid attribute value"),
    (_with(type={"bool": "gpu"}), "is not a valid attribute value"),
    (_with(driverVersion={"version": "v570"}), "is not semantic versioning 2.0"),
    (_with(memory="eighty"), "capacity.memory"),
], ids=["empty-strings-list", "empty-name", "bool-under-int", "string-under-bool", "not-a-version", "not-a-quantity"])
def test_a_defect_in_a_device_after_the_first_is_refused_as_the_api_server_refuses_it(defect, message) -> None:
    # The first device is of the shape the quick reading takes, so the defective second one meets
    # a reader that must check it (the property above finds these only now and then).
    slice_obj = a_slice(dict(WELL_FORMED), defect)
    assert device_module._quick_devices(*device_module._slice_fields(a_slice(dict(WELL_FORMED)))) is not None
    with pytest.raises(InvalidResourceSlice, match="spec.devices\\[1\\]") as refused:
        devices_from_slice(slice_obj)
    assert message in str(refused.value)
    assert outcome(devices_from_slice, slice_obj) == outcome(read_generally, slice_obj)
