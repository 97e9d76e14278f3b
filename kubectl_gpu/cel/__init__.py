"""Kubernetes' DRA CEL environment: compile device selectors once, evaluate them on many devices.

    from kubectl_gpu.cel import compile_selector
    from kubectl_gpu.dra.devices import devices_from_slice
    selector = compile_selector('device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100"')
    selector.matches(device)  # bool, or CelRuntimeError ("no such key: productName")

Semantics follow Kubernetes (k8s.io/dynamic-resource-allocation/cel): attribute and capacity
names are mapped to ``domain -> name`` (unqualified names belong to the driver's domain), a
missing domain is an empty map, a missing name is a runtime error that makes the scheduler abort
allocation (never a silent non-match), ``&&``/``||`` absorb errors commutatively.

Feature gates shape the environment (``device.allowMultipleAllocations`` needs
DRAConsumableCapacity, list attributes and ``includes()`` need DRAListTypeAttributes):

    compile_selector(expression, gates=default_gates("1.35"))        # kubectl_gpu.dra.gates        # a new object on 1.35
    compile_selector(expression, gates=profile_gates, stored=True)    # as the scheduler compiles it
"""

from kubectl_gpu.lazy_exports import homes_of, lazy_exports

# Where each public name lives.  A module is loaded when one of its names is first used: the
# compiler loads cel-python, lark and pendulum only for a selector the quick parser leaves to
# cel-python's grammar, or a uint value.  What the CEL
# environment evaluates on (devices read from ResourceSlices, quantities, versions, feature gates)
# is DRA's own vocabulary and lives in kubectl_gpu.dra.
_HOMES = {
    "errors": ("CelCompileError", "CelRuntimeError"),
    "selector": ("FAST", "CompiledSelector", "Gates", "compile_selector", "environment_for"),
}
__getattr__ = lazy_exports(__name__, globals(), homes_of(_HOMES))

__all__ = [
    "FAST",
    "CelCompileError",
    "CelRuntimeError",
    "CompiledSelector",
    "Gates",
    "compile_selector",
    "environment_for",
]
