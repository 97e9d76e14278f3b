"""The data model of the translation core.

Everything here is plain, immutable data: the core reads a pod template (a mapping
with ``metadata`` and ``spec``) and returns a :class:`PodTranslation`, which says
what to change (an RFC 6902 JSON Patch relative to the pod template), which DRA
objects the changed pod needs, and what a person should be told about it.

The webhook sends the patch as is; ``migrate`` applies it to the comment-preserving
YAML tree.  Neither face decides anything about GPUs on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from .constants import DRA_GROUP, GPU_DEVICE_CLASS, MIG_DEVICE_CLASS, TPU_DEVICE_CLASS
from .notes import Note, Severity

if TYPE_CHECKING:
    from .existing_claims import KnownClaim
    from .families import LegacyRequest


class ApiVersion(str, Enum):
    """The ``resource.k8s.io`` version to emit DRA objects in."""

    V1 = f"{DRA_GROUP}/v1"  # GA in Kubernetes 1.34
    V1BETA2 = f"{DRA_GROUP}/v1beta2"  # Kubernetes 1.33, same shape as v1
    V1BETA1 = f"{DRA_GROUP}/v1beta1"  # Kubernetes 1.32, flat request fields

    @property
    def supports_consumable_capacity(self) -> bool:
        # capacity.requests (KEP-5075) appeared with v1 in 1.34; earlier versions drop it.
        return self is ApiVersion.V1

    @classmethod
    def parse(cls, text: str) -> "ApiVersion":
        wanted = text if "/" in text else f"{DRA_GROUP}/{text}"
        for member in cls:
            if member.value == wanted:
                return member
        valid = ", ".join(m.value.split("/")[1] for m in cls)
        raise ValueError(f"unknown DRA API version {text!r}; use one of: {valid}")


class Sharing(str, Enum):
    """How a fractional GPU request (0.5 GPU, vcuda-core 50, gpumem ...) is expressed in DRA.

    DRA only shares a device between pods in two ways: pods that reference ONE
    ResourceClaim, or devices that offer consumable capacity (KEP-5075).  A per-pod
    template with a TimeSlicing/MPS config gives every pod a whole GPU.
    """

    CONSUMABLE = "consumable"  # per-pod template with capacity.requests (KEP-5075)
    EXCLUSIVE = "exclusive"  # round up to whole GPUs
    TIMESLICING = "timeslicing"  # one shared ResourceClaim per workload, GpuConfig TimeSlicing
    MPS = "mps"  # one shared ResourceClaim per workload, GpuConfig MPS
    # Decided from the cluster (kubectl_gpu.cluster.fit): consumable where the devices allow it,
    # else exclusive.  Unresolved (no cluster profile) it is exclusive.
    AUTO = "auto"


class TargetDriver(str, Enum):
    """Which DRA driver the claims are written for."""

    NVIDIA = "nvidia"  # NVIDIA's driver (gpu.nvidia.com): memory shares accounted, not enforced
    # HAMi's driver (hami-core-gpu.project-hami.io): cores and memory consumed and enforced by HAMi-core
    HAMI = "hami"
    # HAMi's where the cluster publishes its slices or DeviceClass, else NVIDIA's (kubectl_gpu.cluster.fit);
    # unresolved (no cluster profile) it is NVIDIA's.
    AUTO = "auto"


class IntegerGpuMode(str, Enum):
    """What to do with a plain integer ``nvidia.com/gpu: N`` with no selectors."""

    REWRITE = "rewrite"  # always emit an explicit ResourceClaimTemplate
    # Leave it to the scheduler: a DeviceClass with extendedResourceName (KEP-5004) serves it.
    EXTENDED_RESOURCE = "extended-resource"


@dataclass(frozen=True)
class TranslateOptions:
    api_version: ApiVersion = ApiVersion.V1
    sharing: Sharing = Sharing.CONSUMABLE
    integer_gpus: IntegerGpuMode = IntegerGpuMode.REWRITE
    # Memory of one GPU in the node pool, e.g. "80Gi": lets fractions and percentages become
    # consumable memory requests.  Without it they can only become whole GPUs.
    gpu_memory: str | None = None
    # ACK's gpushare device plugin can be run with --memory-unit=MiB; GiB is its default.
    aliyun_memory_unit: str = "GiB"
    gpu_device_class: str = GPU_DEVICE_CLASS
    mig_device_class: str = MIG_DEVICE_CLASS
    tpu_device_class: str = TPU_DEVICE_CLASS
    # Workload identity used to name a shared ResourceClaim (timeslicing/mps), e.g.
    # "Deployment/web". None: the pod has no workload, so nothing is shared across pods.
    sharing_group: str | None = None
    # `nvidia.com/gpu` counts the device plugin's replicas, not GPUs: every GPU node the pods can land on
    # time-slices or shares by MPS (the cluster profile's Nodes say so), so it is read as
    # `nvidia.com/gpu.shared` is: slots of shared GPUs.
    gpu_slots: bool = False
    # A slot of a shared GPU (gpu_slots, nvidia.com/gpu.shared) asks for the NVIDIA driver's integer
    # `shares` capacity of one GPU (driver v0.5 ConsumableShares with --consumable-shares N), a
    # per-pod claim, instead of whole GPUs or one claim per workload (cluster/fit.py decides).
    slot_shares: bool = False
    # Families (see constants.FAMILIES) to leave as legacy requests; the webhook fences such pods
    # off DRA nodes instead.
    pass_through_families: frozenset[str] = frozenset()
    # Why fractional GPUs become whole ones, when the cluster decided it (--sharing auto).
    sharing_reason: str | None = None
    # Capacity requests that make a whole-GPU claim take all of a shareable GPU (KEP-5075 devices
    # whose requestPolicy default is less than the capacity), e.g. (("memory", "81559Mi"),).
    whole_gpu_capacity: tuple[tuple[str, str], ...] = ()
    # DRAPrioritizedList is on (firstAvailable): a GPU share becomes an ordered list of ways to get it.
    prioritized_list: bool = False
    # MIG profiles the cluster publishes, with the memory of each: ((profile, bytes), ...).
    mig_profiles: tuple[tuple[str, int], ...] = ()
    # The ResourceClaimTemplates/ResourceClaims the caller can see (the same input, what a ComputeDomain
    # makes): a container asking for a device-plugin GPU beside a claim of these that allocates GPUs is
    # refused; one beside a claim not among them gets a warning.  None: the caller checks the pod's claims
    # itself with existing_claims.gpus_asked_twice (the webhook reads them from the API).
    known_claims: tuple["KnownClaim", ...] | None = ()
    # Extended resources a DeviceClass's extendedResourceName serves from DRA devices (KEP-5004), e.g.
    # the MIG classes `migrate --device-classes` emits: a whole-device MIG request of one of these
    # names is left for the scheduler, not rewritten.
    dra_extended_resources: frozenset[str] = frozenset()
    # DeviceClasses under names of their own whose selectors select the driver's GPUs (facts.
    # selects_nvidia_gpus), from the input or the cluster: their claims are GPU claims too.
    gpu_device_classes: frozenset[str] = frozenset()
    # The driver the claims are for (hami_target.py holds what changes for HAMi's).
    target_driver: TargetDriver = TargetDriver.NVIDIA


@dataclass(frozen=True)
class ClaimObject:
    """A DRA object the translated pod needs: a ResourceClaimTemplate (per-pod claims) or a
    ResourceClaim (one claim shared by every pod of a workload)."""

    kind: str  # "ResourceClaimTemplate" | "ResourceClaim"
    name: str  # deterministic from the content, DNS-1123, <= 63 chars
    api_version: ApiVersion
    claim_spec: dict[str, Any]  # the ResourceClaimSpec, already shaped for api_version
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)

    def manifest(self, namespace: str | None) -> dict[str, Any]:
        """The full object, ready for the API server or a YAML file."""
        metadata: dict[str, Any] = {"name": self.name}
        if namespace:
            metadata["namespace"] = namespace
        if self.labels:
            metadata["labels"] = dict(self.labels)
        if self.annotations:
            metadata["annotations"] = dict(self.annotations)
        spec = {"spec": self.claim_spec} if self.kind == "ResourceClaimTemplate" else self.claim_spec
        return {
            "apiVersion": self.api_version.value,
            "kind": self.kind,
            "metadata": metadata,
            "spec": _deep_copy(spec),
        }


@dataclass(frozen=True)
class PodTranslation:
    """The result of translating one pod template."""

    patch: tuple[dict[str, Any], ...]  # RFC 6902 ops, paths relative to the pod template
    claims: tuple[ClaimObject, ...]  # DRA objects the patched pod references
    notes: tuple[Note, ...]
    # Every legacy GPU request the template had (zeros included), and those the patched template
    # still has (pass-through families, KEP-5004 integers; all of them when nothing changed), so
    # callers never have to read the containers again.
    legacy: tuple["LegacyRequest", ...] = ()
    remaining: tuple["LegacyRequest", ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.patch)

    @property
    def errors(self) -> tuple[Note, ...]:
        return tuple(n for n in self.notes if n.severity is Severity.ERROR)

    @property
    def warnings(self) -> tuple[Note, ...]:
        return tuple(n for n in self.notes if n.severity is Severity.WARNING)


def _deep_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    return value
