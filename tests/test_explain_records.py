"""The records explain builds per device (kubectl_gpu.dra.devices.Device, kubectl_gpu.explain.DeviceResult)
have hand-written __init__s (one dict per instance instead of one object.__setattr__ per field);
they must stay what the dataclass declares: the same parameters in field order with the same
defaults, a fresh dict for each default map, and frozen."""

import dataclasses
import inspect

import pytest

from kubectl_gpu.dra.devices import Device
from kubectl_gpu.explain import DeviceResult


@pytest.mark.parametrize("cls", [Device, DeviceResult])
def test_the_constructor_takes_the_declared_fields_in_order_with_their_defaults(cls):
    parameters = list(inspect.signature(cls).parameters.values())
    fields = dataclasses.fields(cls)
    assert [p.name for p in parameters] == [f.name for f in fields]
    for parameter, declared in zip(parameters, fields):
        if declared.default is not dataclasses.MISSING:
            assert parameter.default == declared.default, declared.name
        elif declared.default_factory is dataclasses.MISSING:
            assert parameter.default is inspect.Parameter.empty, declared.name
    values = {f.name: f"value of {f.name}" for f in fields}
    built = cls(**values)
    assert {f.name: getattr(built, f.name) for f in fields} == values
    assert dataclasses.asdict(built) == values
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(built, fields[0].name, "changed")


def test_a_device_s_default_maps_are_its_own_empty_dicts():
    first, second = Device("gpu.nvidia.com", "gpu-0"), Device("gpu.nvidia.com", "gpu-1")
    for name in ("attributes", "capacity", "request_policies"):
        assert getattr(first, name) == {} and getattr(first, name) is not getattr(second, name)
    assert (first.pool, first.node_name, first.node_scope, first.slice_name, first.allow_multiple_allocations) == \
        ("", None, "", "", False)
    assert dataclasses.replace(first, pool="p").id == "gpu.nvidia.com/p/gpu-0"
