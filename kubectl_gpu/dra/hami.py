"""HAMi's DRA driver and HAMi's own conversion webhook: what kubectl-gpu targets, in one place.

HAMi's driver is a fork of NVIDIA's whose GPUs carry consumable ``cores`` and ``memory`` that
HAMi-core enforces inside the container; HAMi-DRA is HAMi's webhook that turns HAMi's own
resources into claims for it.  Every spelling here is read from their source, cited beside it;
anything the two share with NVIDIA's driver (the opaque config API, attribute kinds) is imported
from :mod:`kubectl_gpu.dra.facts`, never spelled again.  Pure data and tiny pure functions.

Upstream references:
  Project-HAMi/k8s-dra-driver, read at ebeaad97 (May 2026):
    cmd/hami-kubelet-plugin/main.go          DriverName
    cmd/hami-kubelet-plugin/hami_core.go     HAMiGpuInfo.GetDevice (attributes, capacities, request
                                             policies, allowMultipleAllocations), CanonicalName,
                                             HAMiGpuDeviceType, GetCDIContainerEdits (enforcement)
    cmd/hami-kubelet-plugin/nvlib.go         GetPerGpuAllocatableDevices: with HAMiCoreSupport every
                                             GPU is published as one hami-gpu device, and nothing else
    cmd/hami-kubelet-plugin/device_state.go  prepareDevices: opaque configs for the driver name,
                                             decoded by NVIDIA's configapi; GpuConfig applies to hami-gpu
    pkg/featuregates/featuregates.go         HAMiCoreSupport (default on) and its exclusions
    chart/hami-dra-driver/templates/deviceclass-hami-gpu.yaml   the DeviceClass
  Project-HAMi/HAMi-DRA:
    pkg/constants/constants.go               the annotations, driver and device type it writes
    pkg/config/dra_device.go at ff6cfea3     ConvertMemory (MiB -> bytes), ConvertCores (as is),
                                             draDeviceFromNvidia (resource names, request name)
    pkg/webhook/dra/mutating_test.go at 6ab986b7, and mutating.go with mutating_test.go as stored
    later (the search index that holds them names no commit): handleContainer, addAnnotationSelectors
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .facts import DEVICE_PLUGIN_GPU, GPU_CONFIG, NVIDIA_CONFIG_API_VERSION, Attribute, literal
from .quantity import format_bytes

MIB = 2**20

# --- The driver ---------------------------------------------------------------------------------

# main.go DriverName: the driver name, and so the domain of its unqualified attributes and capacities.
HAMI_DRIVER = "hami-core-gpu.project-hami.io"
HAMI_ATTRIBUTE_DOMAIN = HAMI_DRIVER
# hami_core.go HAMiGpuDeviceType: the `type` attribute of every device it publishes.
HAMI_GPU_TYPE = "hami-gpu"
# hami_core.go CanonicalName: `hami-gpu-<minor>`, one device per physical GPU.
HAMI_DEVICE_NAME_PREFIX = HAMI_GPU_TYPE + "-"
# deviceclass-hami-gpu.yaml: the chart names its one DeviceClass after the driver, and (on
# resource.k8s.io/v1 only) lets it serve `nvidia.com/gpu` as an extended resource (KEP-5004).
HAMI_DEVICE_CLASS = HAMI_DRIVER
HAMI_DEVICE_CLASS_SELECTOR = (f"device.driver == '{HAMI_DRIVER}' && "
                              f"device.attributes['{HAMI_ATTRIBUTE_DOMAIN}'].type == '{HAMI_GPU_TYPE}'")
HAMI_EXTENDED_RESOURCE_NAME = DEVICE_PLUGIN_GPU  # HAMi's device plugin advertises its vGPUs under NVIDIA's name
# featuregates.go: HAMiCoreSupport (on by default) makes the plugin publish hami-gpu devices; the
# plugin refuses to start with it beside any of these.
HAMI_CORE_SUPPORT_GATE = "HAMiCoreSupport"
HAMI_CORE_SUPPORT_EXCLUDES = ("TimeSlicingSettings", "MPSSupport", "PassthroughSupport", "DynamicMIG")

_HAMI = (HAMI_GPU_TYPE,)


def _hami(name: str, kind: str, *, optional: bool = False, domain: str = HAMI_ATTRIBUTE_DOMAIN) -> Attribute:
    return Attribute(name, kind, _HAMI, optional=optional, domain=domain)


# hami_core.go GetDevice: the attributes of a hami-gpu device.  Unlike NVIDIA's current driver it
# still publishes `minor` and its own `pcieBusID` (no standard pciBusID), and no `index`.
ATTRIBUTES: tuple[Attribute, ...] = (
    _hami("type", "string"),
    _hami("uuid", "string"),
    _hami("minor", "int"),
    _hami("productName", "string"),
    _hami("brand", "string"),
    _hami("architecture", "string"),
    _hami("cudaComputeCapability", "version"),
    _hami("driverVersion", "version"),
    _hami("cudaDriverVersion", "version"),
    _hami("pcieBusID", "string"),
    # The standard PCIe root (nvlib.go: nil when sysfs cannot say; GetDevice then has no guard).
    _hami("pcieRoot", "string", optional=True, domain="resource.kubernetes.io"),
)


@dataclass(frozen=True)
class ConsumableCapacity:
    """A capacity of a hami-gpu device that claims consume (KEP-5075): its value, and the request
    policy the scheduler applies.  ``value`` None: the GPU's memory in bytes.  The policy's default
    and maximum are the whole value: a claim that does not name the capacity takes all of it."""

    name: str
    unit: str  # what one unit of a request is, in words
    value: int | None
    minimum: int
    step: int
    binary: bool  # resource.BinarySI (bytes) or DecimalSI

    def whole(self, memory_bytes: int) -> int:
        return memory_bytes if self.value is None else self.value


# hami_core.go GetDevice Capacity: `cores` 0-100 in steps of 1, default 100 (a whole GPU's compute);
# `memory` 1Mi up to the GPU's memory in steps of 1Mi, default all of it.
CORES = ConsumableCapacity("cores", "percent of one GPU's compute (100 = the whole GPU)", 100, 0, 1, binary=False)
MEMORY = ConsumableCapacity("memory", "bytes of GPU memory", None, MIB, MIB, binary=True)
CAPACITIES: tuple[ConsumableCapacity, ...] = (CORES, MEMORY)
# hami_core.go GetDevice: AllowMultipleAllocations, so claims share a device until a capacity runs out.
ALLOWS_MULTIPLE_ALLOCATIONS = True

_BY_NAME = {a.name: a for a in ATTRIBUTES}


def hami_attribute(name: str) -> Attribute:
    return _BY_NAME[name]


def published_key(a: Attribute) -> str:
    """The attribute's key in a ResourceSlice: bare in the driver's domain, qualified otherwise."""
    return a.name if a.domain == HAMI_ATTRIBUTE_DOMAIN else f"{a.domain}/{a.name}"


def device_name(minor: int) -> str:
    return f"{HAMI_DEVICE_NAME_PREFIX}{minor}"


def _quantity(c: ConsumableCapacity, amount: int) -> str:
    return format_bytes(amount) if c.binary else str(amount)


def published_capacity(memory_bytes: int) -> dict[str, Any]:
    """A hami-gpu device's `capacity` as the driver publishes it for a GPU of ``memory_bytes``."""
    published: dict[str, Any] = {}
    for c in CAPACITIES:
        whole = _quantity(c, c.whole(memory_bytes))
        published[c.name] = {"value": whole, "requestPolicy": {
            "default": whole,
            "validRange": {"min": _quantity(c, c.minimum), "max": whole, "step": _quantity(c, c.step)}}}
    return published


# --- Opaque configuration ---------------------------------------------------------------------
# device_state.go prepareDevices decodes configs whose driver is HAMI_DRIVER with NVIDIA's config
# API (resource.nvidia.com/v1beta1, strictly); only GpuConfig applies to hami-gpu devices, and its
# sharing strategies need gates HAMiCoreSupport excludes.  So a claim for HAMi carries no config:
# what the container may use comes from the capacity it consumed.
HAMI_CONFIG_API_VERSION = NVIDIA_CONFIG_API_VERSION
HAMI_CONFIG_KINDS = (GPU_CONFIG,)

# --- Enforcement ------------------------------------------------------------------------------
# hami_core.go GetCDIContainerEdits: HAMi-core (libvgpu.so, preloaded) is given, per allocated
# device, the consumed capacities as limits: memory in MiB and cores as the SM percentage.  HAMi-core
# limits no compute at 0 or at 100 and more (Project-HAMi/HAMi-core src/multiprocess/
# multiprocess_utilization_watcher.c, rate_limiter).
NO_CORE_LIMIT = 0  # the cores a share asks for when it states no compute: accounted as none, not limited
ENFORCED_BY_HAMI_CORE = {
    MEMORY.name: "CUDA_DEVICE_MEMORY_LIMIT_<i> (consumed memory, MiB)",
    CORES.name: "CUDA_DEVICE_SM_LIMIT_<i> (consumed cores, % of the GPU's SMs)",
}

# --- HAMi-DRA: HAMi's own conversion of HAMi's resources ------------------------------------------
# dra_device.go draDeviceFromNvidia: the resources it converts (count, MiB of memory, % of compute),
# the request name, and the type selector every request starts with (TypeSelectorExpression).
HAMI_DRA_COUNT_RESOURCE = HAMI_EXTENDED_RESOURCE_NAME  # the device plugin's GPU (HAMi's vGPU) count
HAMI_DRA_MEMORY_RESOURCE = "nvidia.com/gpumem"
HAMI_DRA_CORES_RESOURCE = "nvidia.com/gpucores"
HAMI_DRA_REQUEST_NAME = "gpu"
HAMI_DRA_TYPE_SELECTOR = f"device.attributes[{literal(HAMI_ATTRIBUTE_DOMAIN)}].type == {literal(HAMI_GPU_TYPE)}"
# constants.go: HAMi's card-choice annotations, read by HAMi's scheduler and by HAMi-DRA.
USE_GPU_UUID = "nvidia.com/use-gpuuuid"
NO_USE_GPU_UUID = "nvidia.com/nouse-gpuuuid"
USE_GPU_TYPE = "nvidia.com/use-gputype"
NO_USE_GPU_TYPE = "nvidia.com/nouse-gputype"


@dataclass(frozen=True)
class CardAnnotation:
    """One of HAMi's card-choice annotations: the attribute it compares and whether it excludes."""

    key: str
    attribute: str
    excludes: bool


# mutating.go addAnnotationSelectors: the annotations in the order it turns them into selectors.
CARD_ANNOTATIONS: tuple[CardAnnotation, ...] = (
    CardAnnotation(USE_GPU_UUID, "uuid", False),
    CardAnnotation(NO_USE_GPU_UUID, "uuid", True),
    CardAnnotation(USE_GPU_TYPE, "productName", False),
    CardAnnotation(NO_USE_GPU_TYPE, "productName", True),
)


def annotation_values(raw: object) -> list[str]:
    """mutating.go celStringList: comma-separated, each trimmed, empty ones dropped."""
    return [v.strip() for v in str(raw).split(",") if v.strip()]


def card_selector(annotation: CardAnnotation, values: Iterable[str]) -> str:
    """The CEL selector HAMi-DRA writes for an annotation: `device.attributes["<driver>"].uuid in
    ["a","b"]`, negated as `!(...)`.  The whole value must equal the attribute: HAMi-DRA compares
    product names exactly, where HAMi's scheduler matched a case-insensitive part of one."""
    listed = ",".join(literal(v) for v in values)
    expression = f"device.attributes[{literal(HAMI_ATTRIBUTE_DOMAIN)}].{annotation.attribute} in [{listed}]"
    return f"!({expression})" if annotation.excludes else expression


def memory_bytes_of_gpumem(mib: int) -> int:
    """dra_device.go ConvertMemory: HAMi's memory resources count MiB; the driver's capacity bytes."""
    return mib * MIB


def is_hami_device_class(device_class: Mapping[str, Any]) -> bool:
    """True for a DeviceClass object that selects HAMi's GPUs: its name, or its selector's driver."""
    metadata = device_class.get("metadata")
    if isinstance(metadata, Mapping) and metadata.get("name") == HAMI_DEVICE_CLASS:
        return True
    spec = device_class.get("spec")
    selectors = spec.get("selectors") if isinstance(spec, Mapping) else None
    for selector in selectors if isinstance(selectors, list) else []:
        cel = selector.get("cel") if isinstance(selector, Mapping) else None
        expression = cel.get("expression") if isinstance(cel, Mapping) else None
        if isinstance(expression, str) and (f"'{HAMI_DRIVER}'" in expression or f'"{HAMI_DRIVER}"' in expression):
            return True
    return False
