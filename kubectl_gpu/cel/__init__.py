"""Kubernetes' DRA CEL environment: compile device selectors once, evaluate them on many devices.

    from kubectl_gpu.cel import compile_selector, devices_from_slice
    selector = compile_selector('device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100"')
    selector.matches(device)  # bool, or CelRuntimeError ("no such key: productName")

Semantics follow Kubernetes (k8s.io/dynamic-resource-allocation/cel): attribute and capacity
names are mapped to ``domain -> name`` (unqualified names belong to the driver's domain), a
missing domain is an empty map, a missing name is a runtime error that makes the scheduler abort
allocation (never a silent non-match), ``&&``/``||`` absorb errors commutatively.
"""

from .device import Device, InvalidResourceSlice, devices_from_slice, is_resource_slice, make_device
from .errors import CelCompileError, CelRuntimeError
from .selector import CELPY, FAST, CompiledSelector, compile_selector
from .values import InvalidValue, Quantity, Semver

__all__ = [
    "CELPY",
    "FAST",
    "CelCompileError",
    "CelRuntimeError",
    "CompiledSelector",
    "Device",
    "InvalidResourceSlice",
    "InvalidValue",
    "Quantity",
    "Semver",
    "compile_selector",
    "devices_from_slice",
    "is_resource_slice",
    "make_device",
]
