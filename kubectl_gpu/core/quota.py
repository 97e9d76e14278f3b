"""ResourceQuotas follow the migration: the DRA entry that caps what a legacy GPU entry capped.

Kubernetes counts a pod's device-plugin GPUs and its DRA devices under different names
(kubernetes/kubernetes ``pkg/quota/v1/evaluator/core``):

* ``pods.go`` (commit d7ce957d8a8729e0e9c2e365288277d742491a5b) charges an extended resource only as
  ``requests.<name>``: "only quota objects in format of "requests.resourceName" is allowed for
  extended resource".  ``nvidia.com/gpu`` or ``limits.nvidia.com/gpu`` in ``spec.hard`` passes
  validation but no evaluator matches it, so it never capped anything.
* ``resource_claims.go`` (commit 95f08499d652a6211121d8af35f470609217c730 and its resource.k8s.io/v1
  successor) charges a ResourceClaim per request to ``<deviceClassName>.deviceclass.resource.k8s.io/
  devices`` (the count; ``All`` as 32), on every release this tool targets (1.32+).  Only with
  DRAExtendedResource on (KEP-5004: alpha 1.34, on by default from 1.36) is a claim also charged to
  ``requests.<extendedResourceName>`` of a DeviceClass that names one.

So once pods hold claims instead of ``nvidia.com/gpu``, ``requests.nvidia.com/gpu: 4`` stops
counting them unless that last case holds: the cap is gone.  ``plan_quota`` computes, for one
ResourceQuota, the entries to add so the same devices stay capped, and keeps the legacy entries
(pods not yet migrated still use them).  Legacy entries that map to one DeviceClass add up: after
the move one counter holds what several did.  What no quota entry can express is a WARNING naming
the quota, the resource and what to do: a MIG profile's own cap (claims of every profile share the
MIG class's count), the memory or cores of a shared GPU (quota counts devices, not capacity), and any
cap in a scoped quota (``scopes``/``scopeSelector``: the claim evaluator matches no scope, so a scoped
quota never counts claims).

Pure: a quota mapping in, a ``QuotaPlan`` out (entries, notes and the JSON patch that adds them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from . import constants as c
from kubectl_gpu.dra.facts import DEVICE_PLUGIN_GPU

from .families import MIG_PREFIX, family_of, mig_profile_of
from .json_patch import escape
from .model import IntegerGpuMode, Sharing, TranslateOptions
from .notes import Note, Severity
from kubectl_gpu.dra.quantity import QuantityError, format_plain, parse_quantity

REQUESTS_PREFIX = "requests."  # corev1.DefaultResourceRequestsPrefix
LIMITS_PREFIX = "limits."
DEVICES_PER_CLASS_SUFFIX = ".deviceclass.resource.k8s.io/devices"  # corev1.ResourceClaimsPerClass

# Legacy resources that measure a share of a GPU rather than a number of (v)GPUs: no quota entry counts
# DRA capacity, so their caps cannot follow.  Every other legacy name counts devices.
SHARE_RESOURCES: dict[str, str] = {
    "nvidia.com/vcuda-core": "cores", "tencent.com/vcuda-core": "cores", "nvidia.com/gpucores": "cores",
    "aliyun.com/gpu-core.percentage": "cores", "nvidia.com/vgpu-cores": "cores", "volcano.sh/vgpu-cores": "cores",
    "nvidia.com/vcuda-memory": "memory", "tencent.com/vcuda-memory": "memory", "nvidia.com/gpumem": "memory",
    "nvidia.com/gpumem-percentage": "memory", "aliyun.com/gpu-mem": "memory", "nvidia.com/vgpu-memory": "memory",
    "volcano.sh/vgpu-memory": "memory", "volcano.sh/gpu-memory": "memory",
    # Koordinator (apis/extension/device_share.go): gpu is core and memory ratio together (100 = one GPU);
    # gpu.shared is the number of GPUs a share is spread over, a count.
    "koordinator.sh/gpu": "cores and memory", "koordinator.sh/gpu-core": "cores",
    "koordinator.sh/gpu-memory": "memory", "koordinator.sh/gpu-memory-ratio": "memory",
}


def devices_entry(device_class: str) -> str:
    """The quota resource counting the devices that claims of ``device_class`` request."""
    return device_class + DEVICES_PER_CLASS_SUFFIX


def is_resource_quota(doc: object) -> bool:
    return isinstance(doc, Mapping) and doc.get("kind") == "ResourceQuota" and doc.get("apiVersion") == "v1"


@dataclass(frozen=True)
class QuotaTarget:
    """What the target cluster's quota counts (from its profile: version, gates, DeviceClasses)."""

    extended_resource: bool = False  # DRAExtendedResource is on
    # (DeviceClass name, its spec.extendedResourceName) for the classes that name one.
    class_extended_resources: tuple[tuple[str, str], ...] = ()

    def counted_as(self, device_class: str) -> str | None:
        """The extended resource whose ``requests.`` entry also counts claims of ``device_class``."""
        if not self.extended_resource:
            return None
        return dict(self.class_extended_resources).get(device_class)


@dataclass(frozen=True)
class QuotaEntry:
    key: str  # e.g. gpu.nvidia.com.deviceclass.resource.k8s.io/devices
    value: str
    carries: tuple[str, ...]  # the legacy entries whose cap it carries
    device_class: str = ""  # whose claims it counts


@dataclass(frozen=True)
class QuotaPlan:
    namespace: str
    name: str
    entries: tuple[QuotaEntry, ...]  # to add to spec.hard
    notes: tuple[Note, ...]
    caps_gpus: bool  # some legacy entry caps GPUs that move to DRA
    uncapped: tuple[str, ...]  # legacy entries whose cap no DRA entry carries

    @property
    def patch(self) -> tuple[dict[str, Any], ...]:
        """RFC 6902 ops (relative to the quota object) adding the entries to ``spec.hard``."""
        return tuple({"op": "add", "path": f"/spec/hard/{escape(e.key)}", "value": e.value} for e in self.entries)

    @property
    def changed(self) -> bool:
        return bool(self.entries)


def stays_legacy(resource: str, options: TranslateOptions) -> str | None:
    """Why pods keep asking for ``resource`` after migration (so its entry keeps counting), or None."""
    family = family_of(resource)
    if family in options.pass_through_families:
        return f"family {family!r} passes through: pods keep {resource}"
    if resource in options.dra_extended_resources:
        return (f"pods keep {resource}: a DeviceClass's extendedResourceName serves it from DRA devices "
                "(KEP-5004), and the pod still requests it")
    if resource == DEVICE_PLUGIN_GPU and options.integer_gpus is IntegerGpuMode.EXTENDED_RESOURCE:
        return f"pods keep {DEVICE_PLUGIN_GPU} (--integer-gpus extended-resource): the entry keeps counting them"
    return None


def read_cap(where: str, resource: str, raw_value: Any, options: TranslateOptions, owner: str,
             refused_by: str) -> tuple[Fraction, None] | tuple[None, Note]:
    """The amount a legacy cap on ``resource`` holds, or the note saying why it is not carried: its pods
    keep the legacy request, or the value cannot be read, or it is negative (which ``refused_by``)."""
    why = stays_legacy(resource, options)
    if why is not None:
        return None, Note(Severity.INFO, f"{where} keeps its cap: {why}", resource=resource)
    try:
        amount = parse_quantity(raw_value)
    except QuantityError as err:
        return None, Note(Severity.ERROR, f"{where}: {err}; correct {owner}", resource=resource)
    if amount < 0:
        return None, Note(Severity.ERROR, f"{where}: {raw_value} is negative, which {refused_by}; correct {owner}",
                          resource=resource)
    return amount, None


def target_class(resource: str, options: TranslateOptions) -> str:
    family = family_of(resource)
    if family == c.MIG:
        return options.mig_device_class
    if family == c.TPU:
        return options.tpu_device_class
    return options.gpu_device_class


def plan_quota(quota: Mapping[str, Any], options: TranslateOptions = TranslateOptions(),
               target: QuotaTarget = QuotaTarget()) -> QuotaPlan:
    meta = quota.get("metadata") if isinstance(quota.get("metadata"), Mapping) else {}
    name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
    spec = quota.get("spec") if isinstance(quota.get("spec"), Mapping) else {}
    hard = spec.get("hard") if isinstance(spec.get("hard"), Mapping) else {}
    label = f"ResourceQuota {namespace + '/' if namespace else ''}{name}"
    scoped = bool(spec.get("scopes") or spec.get("scopeSelector"))
    notes: list[Note] = []
    sums: dict[str, Fraction] = {}
    classes: dict[str, str] = {}
    carried: dict[str, list[str]] = {}
    uncapped: list[str] = []
    caps_gpus = False
    for raw_key, raw_value in hard.items():
        key = str(raw_key).strip()
        prefix = REQUESTS_PREFIX if key.startswith(REQUESTS_PREFIX) else (
            LIMITS_PREFIX if key.startswith(LIMITS_PREFIX) else "")
        resource = key[len(prefix):]
        if family_of(resource) is None:
            continue
        if prefix != REQUESTS_PREFIX:
            notes.append(Note(Severity.WARNING,
                              f"{label}: {key}: {raw_value} caps nothing: Kubernetes counts extended resources only "
                              f"as {REQUESTS_PREFIX}{resource} (pkg/quota/v1/evaluator/core/pods.go); to cap these "
                              f"GPUs, write {REQUESTS_PREFIX}{resource} and {devices_entry(target_class(resource, options))}"
                              , resource=resource))
            continue
        amount, unread = read_cap(f"{label}: {key}", resource, raw_value, options, "the quota",
                                  "the API server refuses (a cap is 0 or more)")
        if unread is not None:
            notes.append(unread)
            continue
        caps_gpus = True
        role = SHARE_RESOURCES.get(resource)
        device_class = target_class(resource, options)
        if role is not None:
            uncapped.append(key)
            notes.append(Note(Severity.WARNING,
                              f"{label}: {key}: {raw_value} caps the {role} of shared GPUs, which no quota entry can "
                              f"count for DRA claims (quota counts devices, not their capacity); set "
                              f"{devices_entry(device_class)} to the number of GPUs (whole or shared) the namespace "
                              "may hold, or keep these workloads on the device plugin (--pass-through)",
                              resource=resource))
            continue
        if scoped:
            uncapped.append(key)
            notes.append(Note(Severity.WARNING,
                              f"{label}: {key}: {raw_value} is in a scoped quota, which never counts ResourceClaims "
                              "(the claim evaluator matches no scope: pkg/quota/v1/evaluator/core/resource_claims.go), "
                              "so no entry here can cap these pods once they hold claims; cap the namespace's claims "
                              f"with {devices_entry(device_class)} in an unscoped quota (it counts every claim of the "
                              "namespace, whatever the scope picked), or keep these workloads on the device plugin "
                              "(--pass-through)", resource=resource))
            continue
        counted = target.counted_as(device_class)
        if counted == resource:
            notes.append(Note(Severity.INFO,
                              f"{label}: {key} also counts claims of DeviceClass {device_class} here "
                              f"(extendedResourceName {resource}, DRAExtendedResource on): it caps legacy and DRA "
                              "GPUs together", resource=resource))
        if resource.startswith(MIG_PREFIX):
            notes.append(Note(Severity.WARNING,
                              f"{label}: {key}: {raw_value} caps MIG profile {mig_profile_of(resource)} alone, which "
                              f"no entry can once its pods hold claims of {device_class} (every profile counts under "
                              f"{devices_entry(device_class)}, which carries the MIG caps' sum); to keep a cap per "
                              "profile, migrate with --device-classes on a cluster with DRAExtendedResource on, so the "
                              f"pods keep {resource}", resource=resource))
        if options.sharing in (Sharing.TIMESLICING, Sharing.MPS) and role is None and not resource.startswith(MIG_PREFIX):
            notes.append(Note(Severity.INFO,
                              f"{label}: with --sharing {options.sharing.value}, the one claim a workload's pods share "
                              f"is charged once to {devices_entry(device_class)}, not once per pod", resource=resource))
        entry = devices_entry(device_class)
        classes[entry] = device_class
        sums[entry] = sums.get(entry, Fraction(0)) + amount
        carried.setdefault(entry, []).append(key)
    entries = []
    for entry, amount in sums.items():
        legacy = ", ".join(carried[entry])
        if any(str(k).strip() == entry for k in hard):
            notes.append(Note(Severity.INFO, f"{label}: {entry} is already set ({hard[entry]}); it caps the DRA "
                                             f"devices of {legacy}"))
            continue
        value = format_plain(amount)
        entries.append(QuotaEntry(entry, value, tuple(carried[entry]), classes[entry]))
        notes.append(Note(Severity.INFO, f"{label}: added {entry}: {value} (the DRA devices of {legacy}; "
                                         "the legacy entries stay for pods not yet migrated)"))
    return QuotaPlan(namespace, name, tuple(entries), tuple(notes), caps_gpus, tuple(uncapped))
