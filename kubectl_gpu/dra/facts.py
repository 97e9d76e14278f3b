"""What kubectl-gpu knows about Kubernetes DRA and NVIDIA's DRA driver, in one place.

Every name, spelling and version here is taken from upstream source, cited beside it; the core,
inventory, inspect, explain and the webhook read them from this module, so a driver change is one
edit.  Pure data and tiny pure functions: no I/O.

Upstream references (kubernetes-sigs/dra-driver-nvidia-gpu, formerly NVIDIA/k8s-dra-driver-gpu):
  cmd/gpu-kubelet-plugin/deviceinfo.go   GPU/VFIO attributes and capacity (GetDevice, Attributes)
  cmd/gpu-kubelet-plugin/mig.go          MIG attributes and capacity (CommonAttributesMig/CapacitiesMig),
                                         device names (ToCanonicalName)
  site/content/docs/reference/resourceslice-attributes.md   the same, documented
  deployments/helm/.../deviceclass-*.yaml   the DeviceClasses
  api/nvidia.com/resource/v1beta1/         the opaque config API (see dra/driver_config.py)
NVIDIA/k8s-device-plugin:
  internal/rm/rm.go, internal/resource/nvml-mig-device.go   MIG resource names ("+" -> ".")
  internal/lm/resource.go                GFD labels (sanitise() drops "+", getArchFamily())
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

# --- Kubernetes DRA API -----------------------------------------------------------------------

DRA_GROUP = "resource.k8s.io"
# Versions of resource.k8s.io kubectl-gpu reads and writes, newest first, with the Kubernetes
# minor that first serves each (v1beta1 1.32, v1beta2 1.33, v1 GA in 1.34).  Only v1 is served by
# default: beta API versions are off unless enabled (KEP-3136, since 1.24), so a 1.32 or 1.33
# cluster serves its DRA version only where DRA was switched on (kube-apiserver
# --runtime-config=resource.k8s.io/v1beta1=true, and v1beta2 on 1.33), as DRA needs anyway.
# v1beta1 (and v1alpha3 before it) put a request's fields flat on the request (no `exactly:`) and
# wrap device fields in `basic:`.  v1alpha3 (1.31) is read, by explain, never written: its minor
# is older than any kubectl-gpu supports.


@dataclass(frozen=True)
class DraApiVersion:
    name: str  # "v1"
    since_minor: int  # the Kubernetes minor that first serves it
    flat_requests: bool  # the v1beta1 shape of a request
    written: bool = True  # kubectl-gpu writes it (and a cluster profile may be read at it)
    until_minor: int | None = None  # the last Kubernetes minor that serves it; None: still served
    # The first Kubernetes minor serving DeviceTaintRule (KEP-5055) at this version; None: never.
    taint_rules_since: int | None = None

    def served_by(self, minor: int) -> bool:
        return self.since_minor <= minor and (self.until_minor is None or minor <= self.until_minor)


# The one table of resource.k8s.io versions, newest first; every other spelling derives from it.
# v1beta1 is no longer served from Kubernetes 1.38 (the beta's removal, as issue 25 records it for
# 1.38; no 1.38 source is in this project's snapshots): a 1.38 cluster is never written v1beta1.
DRA_API_VERSIONS = (
    DraApiVersion("v1", 34, flat_requests=False, taint_rules_since=37),
    DraApiVersion("v1beta2", 33, flat_requests=False, taint_rules_since=36),
    DraApiVersion("v1beta1", 32, flat_requests=True, until_minor=37),
    DraApiVersion("v1alpha3", 31, flat_requests=True, written=False, taint_rules_since=33),
)
DRA_VERSIONS = tuple(v.name for v in DRA_API_VERSIONS if v.written)
# The resource.k8s.io versions serving DeviceTaintRule (KEP-5055), newest first, with the first
# Kubernetes minor serving each (k8s.io/api resource/{v1,v1beta2,v1alpha3}/types.go: v1alpha3 from
# v0.33.0, v1beta2 from v0.36.0, v1 from v0.37.0-beta.0, commit e0ab441b2).  Up to 1.34 v1alpha3's
# deviceSelector could also name a deviceClassName and CEL selectors; 1.35 removed them.
DEVICE_TAINT_RULE_VERSIONS = tuple((v.name, v.taint_rules_since) for v in DRA_API_VERSIONS if v.taint_rules_since)
DRA_VERSION_SINCE = {v.name: (1, v.since_minor) for v in DRA_API_VERSIONS if v.written}
# The apiVersion of what kubectl-gpu writes without a cluster to fit ("resource.k8s.io/v1").
NEWEST_DRA_API_VERSION = f"{DRA_GROUP}/{DRA_VERSIONS[0]}"
# Versions no supported release serves, which a claim may still be written in: the alphas.
RETIRED_DRA_VERSIONS = ("v1alpha1", "v1alpha2", *(v.name for v in DRA_API_VERSIONS if not v.written))
FLAT_REQUEST_VERSIONS = tuple(v.name for v in DRA_API_VERSIONS if v.written and v.flat_requests)
# Every version whose claims explain reads, by shape.
READ_WRAPPED_VERSIONS = frozenset(v.name for v in DRA_API_VERSIONS if not v.flat_requests)
READ_FLAT_VERSIONS = frozenset(v.name for v in DRA_API_VERSIONS if v.flat_requests)
# The newest Kubernetes release kubectl-gpu knows (its feature gates: dra/gates.py).  The releases
# it supports (and validates emitted objects against) run from the first serving a version it writes.
NEWEST_KUBERNETES_MINOR = 38
SUPPORTED_KUBERNETES_MINORS = range(min(v.since_minor for v in DRA_API_VERSIONS if v.written),
                                    NEWEST_KUBERNETES_MINOR + 1)


def versions_served_text() -> str:
    """The written versions and their releases, for help: "v1 (Kubernetes 1.34+), v1beta2 (1.33), ..."."""
    newest, *older = DRA_VERSIONS
    return ", ".join([f"{newest} (Kubernetes 1.{DRA_VERSION_SINCE[newest][1]}+)",
                      *(f"{v} (1.{DRA_VERSION_SINCE[v][1]})" for v in older)])


def served_dra_versions(minor: int) -> tuple[str, ...]:
    """The written versions a 1.<minor> API server can serve, newest first (v1beta1 not from 1.38)."""
    return tuple(v.name for v in DRA_API_VERSIONS if v.written and v.served_by(minor))


def dra_version_for(minor: int) -> str:
    """The newest resource.k8s.io version a 1.<minor> API server serves where DRA is enabled (v1
    from 1.34 by default; on 1.32-1.33 the beta version DRA's --runtime-config switches on)."""
    for version in served_dra_versions(minor):
        return version
    raise ValueError(f"Kubernetes 1.{minor} serves no resource.k8s.io version kubectl-gpu writes "
                     f"(DRA needs 1.{SUPPORTED_KUBERNETES_MINORS[0]}+)")


# --- kubectl-gpu's own labels, annotations and report kinds --------------------------------------

# The apiVersion of every report kubectl-gpu prints for scripts (-o json|yaml: GpuClusterSummary,
# GpuNode, GpuPod, GpuClaim, GpuDoctorReport, Explanation, MigrationPlan, MigrationResult, NodeWave,
# RollbackResult); each kind's JSON Schema is docs/schemas/<Kind>.json.  Not served by any API server:
# the group only keeps these kinds apart from Kubernetes' own.
REPORT_API_VERSION = "kubectl-gpu.io/v1alpha1"

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "kubectl-gpu"
# JSON of the legacy requests and node constraints a rewrite replaced: makes every
# rewrite traceable and reversible.
ORIGINAL_RESOURCES_ANNOTATION = "kubectl-gpu.io/original-resources"
# On generated claim objects: a one-line description of what the claim asks for.
SUMMARY_ANNOTATION = "kubectl-gpu.io/summary"
# On a ResourceQuota: the spec.hard entries migrate added for DRA (comma-separated), which rollback removes.
QUOTA_ENTRIES_ANNOTATION = "kubectl-gpu.io/quota-entries"
OPT_OUT_LABEL = "kubectl-gpu.io/opt-out"
# On a Node that `migrate nodes` switched: JSON of what the wave changed and what was there before
# (`{"unschedulable": false, "labels": {"ack.node.gpu.schedule": null}}`), so that a failed wave
# can be undone and `rollback node/NAME` restores exactly what the node had.
NODE_WAVE_ANNOTATION = "kubectl-gpu.io/node-wave"
# The default marker of a node whose GPUs are served by DRA (ACK's label: the GPU device plugin
# stops advertising nvidia.com/gpu there); configurable in the webhook.
DRA_NODE_LABEL_KEY = "ack.node.gpu.schedule"
DRA_NODE_LABEL_VALUE = "disabled"


@dataclass(frozen=True)
class DraNodeMarker:
    """A node label that marks a DRA node: ``key=value``, or just ``key`` (any value).  One rule
    for the webhook (which fences legacy pods off such nodes) and describe/doctor (which count them)."""

    key: str
    value: str | None = None

    @classmethod
    def parse(cls, text: str) -> "DraNodeMarker":
        """KEY=VALUE, as command-line flags write it (they also set the label, so a value is needed);
        configuration files give ``{key, value?}`` and build the marker directly."""
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--dra-node-label {text!r} must be KEY=VALUE, "
                             f"e.g. {DRA_NODE_LABEL_KEY}={DRA_NODE_LABEL_VALUE}")
        return cls(key.strip(), value.strip())

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.key not in labels:
            return False
        return self.value is None or labels[self.key] == self.value

    def render(self) -> str:
        return self.key if self.value is None else f"{self.key}={self.value}"

    __str__ = render


DEFAULT_DRA_NODE_MARKERS = (DraNodeMarker(DRA_NODE_LABEL_KEY, DRA_NODE_LABEL_VALUE),)

# --- NVIDIA's DRA driver ----------------------------------------------------------------------

NVIDIA_DRIVER = "gpu.nvidia.com"
NVIDIA_ATTRIBUTE_DOMAIN = NVIDIA_DRIVER  # unqualified attribute names belong to the driver's domain
NVIDIA_CONFIG_API_VERSION = "resource.nvidia.com/v1beta1"

# Device types (the `type` attribute) and the DeviceClass the driver installs for each.
GPU_TYPE, MIG_TYPE, VFIO_TYPE = "gpu", "mig", "vfio"
GPU_DEVICE_CLASS = "gpu.nvidia.com"
MIG_DEVICE_CLASS = "mig.nvidia.com"
# The chart installs all three whenever GPUs are enabled (deviceclass-{gpu,mig,vfio-gpu}.yaml, since v25.12.0);
# vfio devices appear only with the driver's PassthroughSupport gate (cmd/gpu-kubelet-plugin/nvlib.go).
VFIO_DEVICE_CLASS = "vfio.gpu.nvidia.com"
DEVICE_CLASS_OF_TYPE = {GPU_TYPE: GPU_DEVICE_CLASS, MIG_TYPE: MIG_DEVICE_CLASS, VFIO_TYPE: VFIO_DEVICE_CLASS}
# Each class's selector, as in the driver's Helm chart (deviceclass-gpu.yaml & co.).
DEVICE_CLASS_SELECTORS = {
    cls: f"device.driver == '{NVIDIA_DRIVER}' && device.attributes['{NVIDIA_ATTRIBUTE_DOMAIN}'].type == '{t}'"
    for t, cls in DEVICE_CLASS_OF_TYPE.items()
}
# GKE's TPU DeviceClass.
TPU_DEVICE_CLASS = "tpu.google.com"
# Classes whose devices are GPUs (whole, MIG, passthrough): a legacy GPU request beside a claim of one
# in the same container asks for GPUs twice.  Besides the driver's three, NVIDIA names per-profile
# classes `<name>.gpu.nvidia.com` (demo/specs/extended-resources/mig-1g-12gb.yaml: mig-1g-12gb.gpu.nvidia.com).
GPU_ALLOCATING_DEVICE_CLASSES = (GPU_DEVICE_CLASS, MIG_DEVICE_CLASS, VFIO_DEVICE_CLASS)
GPU_DEVICE_CLASS_SUFFIX = "." + GPU_DEVICE_CLASS
# The driver's ComputeDomain (IMEX) classes: IMEX channels and daemons, not GPUs
# (cmd/compute-domain-controller/computedomain.go; deployments/helm/.../deviceclass-compute-domain-*.yaml).
COMPUTE_DOMAIN_DEVICE_CLASSES = ("compute-domain-default-channel.nvidia.com", "compute-domain-channel.nvidia.com",
                                 "compute-domain-daemon.nvidia.com")
# A ComputeDomain (resource.nvidia.com) makes the controller create, in its namespace, the
# ResourceClaimTemplate named by spec.channel.resourceClaimTemplate.name with the default-channel class
# (cmd/compute-domain-controller/resourceclaimtemplate.go, WorkloadResourceClaimTemplateManager.Create).
COMPUTE_DOMAIN_KIND = "ComputeDomain"
COMPUTE_DOMAIN_CHANNEL_CLASS = COMPUTE_DOMAIN_DEVICE_CLASSES[0]


def allocates_gpus(device_class: str) -> bool:
    """True for a DeviceClass whose devices are NVIDIA GPUs (or MIG slices of them), by its name: the
    driver's own classes.  A class under another name is known by its selectors (selects_nvidia_gpus)."""
    return device_class in GPU_ALLOCATING_DEVICE_CLASSES or device_class.endswith(GPU_DEVICE_CLASS_SUFFIX)


# The driver publishes every device it serves (GPU, MIG, vfio) under the driver name gpu.nvidia.com,
# which is also their attribute and capacity domain: a selector that requires the driver, or reads an
# attribute or capacity of that domain, can only be true for the driver's GPUs (a missing attribute
# aborts the evaluation, it never matches).  Admins make such classes under their own names, e.g.
# `gpu-targeted.nvidia.com` selecting one GPU by uuid.
# A pattern, compiled by re (and kept in its cache) on first use: describe reads no DeviceClass.
_DRIVER_LITERAL = rf"""(?:'{re.escape(NVIDIA_DRIVER)}'|"{re.escape(NVIDIA_DRIVER)}")"""
_SELECTS_NVIDIA_DEVICES = (rf"device\.driver\s*==\s*{_DRIVER_LITERAL}|{_DRIVER_LITERAL}\s*==\s*device\.driver"
                           rf"|device\.(?:attributes|capacity)\s*\[\s*{_DRIVER_LITERAL}\s*\]")


def selects_nvidia_gpus(device_class: object) -> bool:
    """True for a DeviceClass object one of whose CEL selectors selects only the driver's GPUs (its
    driver name, or its attribute/capacity domain).  A class without selectors is not counted."""
    spec = device_class.get("spec") if isinstance(device_class, Mapping) else None
    selectors = spec.get("selectors") if isinstance(spec, Mapping) else None
    for selector in selectors if isinstance(selectors, list) else []:
        cel = selector.get("cel") if isinstance(selector, Mapping) else None
        expression = cel.get("expression") if isinstance(cel, Mapping) else None
        if isinstance(expression, str) and re.search(_SELECTS_NVIDIA_DEVICES, expression):
            return True
    return False


def gpu_device_class_names(objects: object) -> frozenset[str]:
    """The names of the DeviceClass objects among ``objects`` that select the driver's GPUs under a
    name :func:`allocates_gpus` does not know."""
    found = set()
    for obj in objects if isinstance(objects, (list, tuple)) else []:
        metadata = obj.get("metadata") if isinstance(obj, Mapping) else None
        name = metadata.get("name") if isinstance(metadata, Mapping) else None
        if isinstance(name, str) and not allocates_gpus(name) and selects_nvidia_gpus(obj):
            found.add(name)
    return frozenset(found)

_ALL = (GPU_TYPE, MIG_TYPE, VFIO_TYPE)
_GPU_MIG = (GPU_TYPE, MIG_TYPE)


@dataclass(frozen=True)
class Attribute:
    """One attribute (or capacity) the driver publishes.  ``kind`` is the DeviceAttribute field
    (string, version, int, bool) or "quantity" for a capacity; ``optional``: absent on some nodes,
    so a selector must guard it.  ``removed`` is the first driver release without it, ``replaced_by``
    the published key that took its place there, if any."""

    name: str
    kind: str
    device_types: tuple[str, ...]
    optional: bool = False
    added: str | None = None
    removed: str | None = None
    domain: str = NVIDIA_ATTRIBUTE_DOMAIN
    replaced_by: str | None = None


ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute("type", "string", _ALL),
    Attribute("uuid", "string", _ALL),
    Attribute("productName", "string", _ALL),
    Attribute("brand", "string", _GPU_MIG),
    Attribute("architecture", "string", _GPU_MIG),
    Attribute("cudaComputeCapability", "version", _GPU_MIG),
    Attribute("driverVersion", "version", _GPU_MIG),
    Attribute("cudaDriverVersion", "version", _GPU_MIG),
    Attribute("parentUUID", "string", (MIG_TYPE,)),
    Attribute("profile", "string", (MIG_TYPE,)),
    Attribute("addressingMode", "string", _GPU_MIG, optional=True, added="v25.12.0"),
    Attribute("deviceID", "string", (VFIO_TYPE,)),
    Attribute("vendorID", "string", (VFIO_TYPE,)),
    Attribute("iommuFDEnabled", "bool", (VFIO_TYPE,), added="v0.4.0"),
    Attribute("index", "int", _GPU_MIG, removed="v25.8.0"),
    Attribute("minor", "int", _GPU_MIG, removed="v25.8.0"),
    # The PCI address in the driver's own domain up to v25.8.1; v25.12.0 publishes the standard one instead.
    Attribute("pcieBusID", "string", _GPU_MIG, removed="v25.12.0", replaced_by="resource.kubernetes.io/pciBusID"),
    # Standard attributes (k8s.io/dynamic-resource-allocation/deviceattribute), when sysfs has them.
    Attribute("pciBusID", "string", _ALL, optional=True, domain="resource.kubernetes.io"),
    Attribute("pcieRoot", "string", _ALL, optional=True, domain="resource.kubernetes.io"),
    # numaNode (KEP-6072, stable in Kubernetes 1.37): v0.5.0 publishes sysfs numa_node when it is 0 or
    # more, on every device (deviceinfo.go addNumaNodeAttribute, 3b59d66e); with the driver's own
    # DRAListTypeAttributes gate as a one-element list (intValues).  v25.12.0-v0.4.1 published VFIO
    # devices' NUMA node as `numa`.
    Attribute("numaNode", "int", _ALL, optional=True, added="v0.5.0", domain="resource.kubernetes.io"),
    Attribute("numa", "int", (VFIO_TYPE,), removed="v0.5.0"),
    # FabricManagerPartitioning (v0.5.0, bdad5512): the GPU's NVSwitch module and, per partition size
    # N, the id of the Fabric Manager partition of N GPUs that holds it (GPU and VFIO devices).
    Attribute("gpuModuleID", "int", (GPU_TYPE, VFIO_TYPE), optional=True, added="v0.5.0"),
    *(Attribute(f"partition{n}", "int", (GPU_TYPE, VFIO_TYPE), optional=True, added="v0.5.0") for n in (1, 2, 4, 8)),
)

CAPACITIES: tuple[Attribute, ...] = (
    # Bytes; a whole GPU without NVML memory info publishes no capacity at all.
    Attribute("memory", "quantity", _GPU_MIG, optional=True),
    # MIG devices always; whole GPUs only with DynamicMIG (the largest profile's figures).
    *(Attribute(n, "quantity", _GPU_MIG, optional=True)
      for n in ("multiprocessors", "copyEngines", "decoders", "encoders", "jpegEngines", "ofaEngines")),
    Attribute("addressableMemory", "quantity", (VFIO_TYPE,)),
    # ConsumableShares with --consumable-shares N (cmd/gpu-kubelet-plugin/consumable_shares.go, v0.5.0): an
    # integer share count N, requestPolicy default 1, 1..N in steps of 1 (resource.DecimalSI).
    Attribute("shares", "quantity", _GPU_MIG, optional=True, added="v0.5.0"),
)

_BY_NAME = {a.name: a for a in ATTRIBUTES}
_CAPACITY_BY_NAME = {a.name: a for a in CAPACITIES}
# Attributes the driver stopped publishing: a selector on them is a runtime error for every device.
# (`numa` is left out: VFIO devices of v0.4.x drivers, still widely run, publish it.)
REMOVED_NVIDIA_ATTRIBUTES = tuple(a.name for a in ATTRIBUTES if a.removed and a.name != "numa")


def attribute(name: str) -> Attribute:
    return _BY_NAME[name]


def removed_attribute_advice(name: str) -> str | None:
    """What to select by instead of an attribute the NVIDIA driver stopped publishing (None for any
    other name): one wording for explain's hint and doctor's fix."""
    if name not in REMOVED_NVIDIA_ATTRIBUTES:
        return None
    removed = _BY_NAME[name]
    instead = f"select by {removed.replaced_by}" if removed.replaced_by else "select by uuid or productName"
    return f"the NVIDIA DRA driver stopped publishing {name} in {removed.removed}: {instead} instead"


def published_key(a: Attribute) -> str:
    """The attribute's key in a ResourceSlice as the driver writes it: bare in its own domain
    (`productName`), qualified otherwise (`resource.kubernetes.io/pciBusID`)."""
    return a.name if a.domain == NVIDIA_ATTRIBUTE_DOMAIN else f"{a.domain}/{a.name}"


class _Keys:
    """``ATTR.productName`` -> "productName": every published name read from the tables above, so a
    name the driver does not publish is an AttributeError at once, never a silent miss."""

    def __init__(self, table: tuple[Attribute, ...]) -> None:
        self.__dict__.update({a.name: published_key(a) for a in table})


ATTR = _Keys(ATTRIBUTES)
CAP = _Keys(CAPACITIES)
# deviceinfo.go: one `memorySlice<N>` capacity per memory slice a MIG placement covers.
MEMORY_SLICE_CAPACITY_PREFIX = "memorySlice"
# NVML_DEVICE_ADDRESSING_MODE_* -> go-nvlib GetAddressingModeAsString, the `addressingMode` attribute.
# The driver publishes it (on GPUs and their MIG devices) only when NVML has nvmlDeviceGetAddressingMode
# and it succeeds: NOT_SUPPORTED (a platform without coherent memory) means no attribute at all
# (cmd/gpu-kubelet-plugin/nvlib.go; go-nvlib pkg/nvlib/device/device.go).
ADDRESSING_MODES: dict[int, str] = {0: "None", 1: "HMM", 2: "ATS"}


def capacity(name: str) -> Attribute:
    return _CAPACITY_BY_NAME[name]


# --- CEL spellings of the above: every read is guarded ----------------------------------------
# In Kubernetes a missing attribute is an evaluation ERROR that aborts scheduling of the pod, not
# a non-match; so each expression first checks the name is there.


def attr(name: str) -> str:
    """`device.attributes["gpu.nvidia.com"].<name>` for a known attribute."""
    a = _BY_NAME[name]
    return f'device.attributes["{a.domain}"].{a.name}'


def cap(name: str) -> str:
    a = _CAPACITY_BY_NAME[name]
    return f'device.capacity["{a.domain}"].{a.name}'


def guarded_attr(name: str, condition: str) -> str:
    """`(<name> is published && <condition>)`: false on a device without it, never an error."""
    a = _BY_NAME[name]
    return f'("{a.name}" in device.attributes["{a.domain}"] && {condition})'


def guarded_cap(name: str, condition: str) -> str:
    a = _CAPACITY_BY_NAME[name]
    return f'("{a.name}" in device.capacity["{a.domain}"] && {condition})'


def literal(value: str) -> str:
    """A CEL string literal (JSON's escaping is valid CEL)."""
    return json.dumps(value)


# --- Architectures ----------------------------------------------------------------------------

# NVML_DEVICE_ARCH_* -> go-nvlib GetArchitectureAsString: the driver's `architecture` attribute.
# Rubin (NVML_DEVICE_ARCH_RUBIN 13) since go-nvlib v0.12.0, which v0.5.0 vendors (go.mod, 95a1b03f;
# vendor/github.com/NVIDIA/go-nvlib/pkg/nvlib/device/device.go GetArchitectureAsString).
ARCHITECTURES: dict[int, str] = {
    2: "Kepler", 3: "Maxwell", 4: "Pascal", 5: "Volta", 6: "Turing", 7: "Ampere",
    8: "Ada Lovelace", 9: "Hopper", 10: "Blackwell", 13: "Rubin", 0xFFFFFFFF: "Unknown",
}
HOPPER_ARCHITECTURE = 9  # NVML_DEVICE_ARCH_HOPPER: MIG mode toggles without a GPU reset from here on
# NVIDIA's device plugin's resource: a whole GPU (0.5 arrives as 500m), or a replica of one on a
# time-sliced pool; and Kubernetes' own GPU resource from before device plugins (gone in 1.11).
DEVICE_PLUGIN_GPU = "nvidia.com/gpu"
ALPHA_NVIDIA_GPU = "alpha.kubernetes.io/nvidia-gpu"
# GPU Feature Discovery's node labels (k8s-device-plugin internal/lm/resource.go) that describe a
# node's GPUs: what device-plugin pods chose GPUs by, and what predicts a node's devices.
GFD_PRODUCT_LABEL = "nvidia.com/gpu.product"
GFD_MEMORY_LABEL = "nvidia.com/gpu.memory"  # MiB
GFD_FAMILY_LABEL = "nvidia.com/gpu.family"
GFD_COUNT_LABEL = "nvidia.com/gpu.count"  # physical GPUs, shared or not
# The device plugin's sharing, as GFD labels it (baseLabeler, getProductName): replicas per GPU (1
# unshared, 0 when the plugin has no sharing config), the strategy (`time-slicing` or `mps` only when
# replicas > 1, else `none`), and `-SHARED` after the product when shared without renaming the resource.
GFD_REPLICAS_LABEL = "nvidia.com/gpu.replicas"
GFD_SHARING_STRATEGY_LABEL = "nvidia.com/gpu.sharing-strategy"
GFD_SHARED_PRODUCT_SUFFIX = "-SHARED"
# GPU Feature Discovery's `nvidia.com/gpu.family` label (k8s-device-plugin internal/lm/resource.go
# getArchFamily, from the compute capability) -> the driver's `architecture`.  GFD families the
# driver has no name for (tesla, fermi, undefined) are absent: no selector can match them.
GFD_FAMILY_ARCHITECTURES: dict[str, str] = {
    "kepler": "Kepler", "maxwell": "Maxwell", "pascal": "Pascal", "volta": "Volta", "turing": "Turing",
    "ampere": "Ampere", "ada-lovelace": "Ada Lovelace", "hopper": "Hopper", "blackwell": "Blackwell",
    "rubin": "Rubin",
}


def architecture_of_gfd_family(family: str) -> str | None:
    """`ada-lovelace` -> `Ada Lovelace`; the driver's own spelling is accepted too."""
    key = family.strip().lower()
    if key in GFD_FAMILY_ARCHITECTURES:
        return GFD_FAMILY_ARCHITECTURES[key]
    by_driver_name = {v.lower(): v for v in GFD_FAMILY_ARCHITECTURES.values()}
    return by_driver_name.get(key)


# --- MIG profiles -----------------------------------------------------------------------------

# go-nvlib MigProfileInfo.String(): "[<c>c.]<g>g.<gb>gb" plus a media-extension suffix from the GPU
# instance profile: REV1 "+me", ALL_ME "+me.all", GFX "+gfx", NO_ME "-me".
MIG_PROFILE_SUFFIXES = ("", "+me", "+me.all", "+gfx", "-me")
# NVML_GPU_INSTANCE_PROFILE_* -> (GPU slices, profile-name suffix).
GPU_INSTANCE_PROFILES: dict[int, tuple[int, str]] = {
    0x0: (1, ""), 0x1: (2, ""), 0x2: (3, ""), 0x3: (4, ""), 0x4: (7, ""), 0x5: (8, ""), 0x6: (6, ""),
    0x7: (1, "+me"), 0x8: (2, "+me"), 0x9: (1, ""), 0xA: (1, "+gfx"), 0xB: (2, "+gfx"), 0xC: (4, "+gfx"),
    0xD: (1, "-me"), 0xE: (2, "-me"), 0xF: (1, "+me.all"), 0x10: (2, "+me.all"),
}
# A MIG profile's base (`1g.10gb`, `1c.2g.20gb`) and what follows it; compiled by re on first use.
_MIG_BASE = r"^(?P<base>(?:[1-9]\d*c\.)?[1-9]\d*g\.[1-9]\d*gb)(?P<ext>.*)$"
# The extension after the base, as each tool spells it -> the driver's suffix.  The device plugin
# turns "+" into "." (nvidia.com/mig-1g.10gb.me); GFD's product label drops "+" (...-MIG-1g.10gbme).
_MIG_EXTENSIONS = {"": "", "me": "+me", "me.all": "+me.all", "gfx": "+gfx", "-me": "-me"}


def driver_mig_profile(spelling: str) -> str | None:
    """The driver's `profile` attribute for a MIG profile as the device plugin, GFD or the driver
    spells it (`1g.10gb.me`, `1g.10gbme`, `1g.10gb+me` -> `1g.10gb+me`); None when it is not one."""
    match = re.match(_MIG_BASE, spelling.strip())
    if match is None:
        return None
    ext = match["ext"]
    if ext.startswith(("+", ".")):
        ext = ext[1:]
        if ext in ("", "-me"):  # a separator with nothing after it, or two of them
            return None
    suffix = _MIG_EXTENSIONS.get(ext)
    return None if suffix is None else match["base"] + suffix


def device_plugin_mig_resource(profile: str) -> str:
    """nvidia.com/mig-<profile> as the device plugin names it (`+` -> `.`)."""
    return "nvidia.com/mig-" + profile.replace("+", ".")


# --- Opaque configuration (the API; shapes and validator live in dra/driver_config.py) ---------

GPU_CONFIG, MIG_DEVICE_CONFIG, VFIO_DEVICE_CONFIG = "GpuConfig", "MigDeviceConfig", "VfioDeviceConfig"
GPU_DRIVER_CONFIG_KINDS = (GPU_CONFIG, MIG_DEVICE_CONFIG, VFIO_DEVICE_CONFIG)
COMPUTE_DOMAIN_DRIVER = "compute-domain.nvidia.com"
COMPUTE_DOMAIN_CONFIG_KINDS = ("ComputeDomainChannelConfig", "ComputeDomainDaemonConfig")
TIME_SLICING, MPS = "TimeSlicing", "MPS"
SHARING_STRATEGIES = (TIME_SLICING, MPS)
TIME_SLICE_INTERVALS = ("Default", "Short", "Medium", "Long")
IOMMU_BACKEND_POLICIES = ("PreferIommuFD", "LegacyOnly")
# mpsConfig fields and the driver release that added each (api/nvidia.com/resource/v1beta1/sharing.go:
# multiUser, 421c0f49, in v0.5.0).  Older kubelet plugins decode opaque configs strictly
# (cmd/gpu-kubelet-plugin/device_state.go, configapi.StrictDecoder, v0.4.1): an unknown field
# fails the whole config when the pod starts.
MPS_CONFIG_FIELDS_SINCE = {"multiUser": "v0.5.0"}

# --- The driver's releases and its own feature gates ----------------------------------------------
# kubernetes-sigs/dra-driver-nvidia-gpu releases, oldest first: calendar versions until v25.12.0, then
# semantic versions (v0.4.0 follows v25.12.0; pkg/featuregates/featuregates.go maps ~25.8 -> 0.2,
# ~25.12 -> 0.3, ~26.4 -> 0.4).  v0.5.0 is read at main 95932046 (August 2026, VERSION v0.5.0-dev;
# the snapshot this project reads has no v0.5.0 tag).
DRIVER_RELEASES = ("v25.3.0", "v25.8.0", "v25.12.0", "v0.4.0", "v0.4.1", "v0.5.0")
NEWEST_DRIVER_RELEASE = DRIVER_RELEASES[-1]


def driver_release_index(release: str) -> int:
    """The release's place in DRIVER_RELEASES (v25.12.1 counts as v25.12.0: gates change only with
    minor releases); ValueError naming the known releases."""
    text = release.strip()
    text = text if text.startswith("v") else "v" + text
    major_minor = text.rsplit(".", 1)[0] + "."
    for index in range(len(DRIVER_RELEASES) - 1, -1, -1):
        known = DRIVER_RELEASES[index]
        if known == text or (known.startswith(major_minor) and known.count(".") == text.count(".")):
            return index
    raise ValueError(f"NVIDIA DRA driver release {release!r} is not one kubectl-gpu knows: use one of "
                     f"{', '.join(DRIVER_RELEASES)}")


@dataclass(frozen=True)
class DriverGate:
    """One of the driver's own feature gates (``--feature-gates`` of its kubelet plugin and
    controller): the first release that has it and its default there (pkg/featuregates/featuregates.go,
    defaultFeatureGates; every gate has kept its default since it appeared)."""

    name: str
    since: str
    default: bool


DYNAMIC_MIG, CONSUMABLE_SHARES = "DynamicMIG", "ConsumableShares"
DRIVER_LIST_TYPE_ATTRIBUTES, FABRIC_MANAGER_PARTITIONING = "DRAListTypeAttributes", "FabricManagerPartitioning"
MPS_SUPPORT, PASSTHROUGH_SUPPORT, NVML_DEVICE_HEALTH_CHECK = "MPSSupport", "PassthroughSupport", "NVMLDeviceHealthCheck"
DRIVER_GATES: tuple[DriverGate, ...] = (
    DriverGate("TimeSlicingSettings", "v25.8.0", False),
    DriverGate(MPS_SUPPORT, "v25.8.0", False),
    DriverGate("IMEXDaemonsWithDNSNames", "v25.8.0", True),
    DriverGate(PASSTHROUGH_SUPPORT, "v25.12.0", False),
    DriverGate(DYNAMIC_MIG, "v25.12.0", False),
    DriverGate(NVML_DEVICE_HEALTH_CHECK, "v25.12.0", False),
    DriverGate("ComputeDomainCliques", "v25.12.0", True),
    DriverGate("CrashOnNVLinkFabricErrors", "v25.12.0", True),
    DriverGate("DeviceMetadata", "v0.4.0", False),
    # The driver's gate of this name: publish list-valued attributes (numaNode as a one-element list);
    # the cluster needs Kubernetes' gate of the same name first.
    DriverGate(DRIVER_LIST_TYPE_ATTRIBUTES, "v0.5.0", False),
    DriverGate(FABRIC_MANAGER_PARTITIONING, "v0.5.0", False),
    DriverGate("HostManagedIMEXDaemon", "v0.5.0", False),
    DriverGate(CONSUMABLE_SHARES, "v0.5.0", False),
)
_DRIVER_GATE = {g.name: g for g in DRIVER_GATES}

# ValidateFeatureGates (featuregates.go): pairs the driver refuses to start with, and gates that need
# another; each with the first release that checks it.
DRIVER_GATE_EXCLUSIONS: tuple[tuple[str, str, str], ...] = (
    (DYNAMIC_MIG, PASSTHROUGH_SUPPORT, "v25.12.0"),
    (DYNAMIC_MIG, NVML_DEVICE_HEALTH_CHECK, "v25.12.0"),
    (DYNAMIC_MIG, MPS_SUPPORT, "v25.12.0"),
    (PASSTHROUGH_SUPPORT, NVML_DEVICE_HEALTH_CHECK, "v0.4.0"),
)
DRIVER_GATE_REQUIREMENTS: tuple[tuple[str, str, str], ...] = (
    ("ComputeDomainCliques", "IMEXDaemonsWithDNSNames", "v25.12.0"),
    ("DeviceMetadata", PASSTHROUGH_SUPPORT, "v0.4.0"),
)


def driver_gate(name: str) -> DriverGate:
    return _DRIVER_GATE[name]


def driver_gates_of(release: str) -> dict[str, bool]:
    """The driver's gates in ``release`` and their defaults."""
    index = driver_release_index(release)
    return {g.name: g.default for g in DRIVER_GATES if driver_release_index(g.since) <= index}


def driver_gate_problems(release: str, gates: Mapping[str, bool]) -> list[str]:
    """What the driver of ``release`` refuses in ``gates`` (names it lacks, exclusions, requirements),
    each worded as what to change; empty when it starts."""
    known = driver_gates_of(release)
    problems = [f"the NVIDIA DRA driver {release} has no feature gate {name} "
                f"(it has {', '.join(sorted(known))})" for name in gates if name not in known]
    enabled = {**known, **{k: v for k, v in gates.items() if k in known}}
    index = driver_release_index(release)
    for a, b, since in DRIVER_GATE_EXCLUSIONS:
        if driver_release_index(since) <= index and enabled.get(a) and enabled.get(b):
            problems.append(f"feature gate {a} is mutually exclusive with {b} in the NVIDIA DRA driver: "
                            f"turn one of them off")
    for gate, needed, since in DRIVER_GATE_REQUIREMENTS:
        if driver_release_index(since) <= index and enabled.get(gate) and not enabled.get(needed):
            problems.append(f"feature gate {gate} requires {needed} in the NVIDIA DRA driver: enable it too")
    return problems


def driver_gate_requirement(name: str) -> str:
    """"NVIDIA DRA driver v0.5.0+ with its ConsumableShares feature gate on (off by default)": one
    wording of what a feature needs, with the exclusions the driver enforces."""
    gate = _DRIVER_GATE[name]
    state = "on by default" if gate.default else "off by default"
    excluded = sorted({b if a == name else a for a, b, _ in DRIVER_GATE_EXCLUSIONS if name in (a, b)})
    exclusion = f"; the driver refuses it together with {', '.join(excluded)}" if excluded else ""
    return f"NVIDIA DRA driver {gate.since}+ with its {name} feature gate on ({state}{exclusion})"
