"""Which resource names are legacy GPU requests, and reading them out of a pod template.

Extended resources must be set in `limits` (the API server rejects a request without a limit,
and requests must equal limits); real manifests break both rules, so reading says what it
assumed in a note instead of failing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from . import constants as c
from kubectl_gpu.dra import hami
from kubectl_gpu.dra.facts import ALPHA_NVIDIA_GPU, DEVICE_PLUGIN_GPU, driver_mig_profile
from .hints import ANNOTATION_ONLY_KEYS
from .notes import Note, Severity
from kubectl_gpu.dra.quantity import QuantityError, parse_quantity

TIME_SLICED_GPU = "nvidia.com/gpu.shared"
# Every legacy resource name with a fixed spelling (MIG names are a prefix, MIG_PREFIX), by family.
LEGACY_RESOURCE_NAMES: dict[str, str] = {
    DEVICE_PLUGIN_GPU: c.NVIDIA_GPU,
    ALPHA_NVIDIA_GPU: c.NVIDIA_GPU,
    "nvidia.com/vcuda-core": c.VCUDA,
    "nvidia.com/vcuda-memory": c.VCUDA,
    "tencent.com/vcuda-core": c.VCUDA,
    "tencent.com/vcuda-memory": c.VCUDA,
    hami.HAMI_DRA_MEMORY_RESOURCE: c.HAMI,
    "nvidia.com/gpumem-percentage": c.HAMI,
    hami.HAMI_DRA_CORES_RESOURCE: c.HAMI,
    "aliyun.com/gpu-mem": c.ALIYUN,
    "aliyun.com/gpu-count": c.ALIYUN,
    "aliyun.com/gpu-core.percentage": c.ALIYUN,
    "nvidia.com/vgpu-number": c.VGPU_MANAGER,
    "nvidia.com/vgpu-cores": c.VGPU_MANAGER,
    "nvidia.com/vgpu-memory": c.VGPU_MANAGER,
    # Volcano's vGPU device plugin (HAMi-core inside): count, MiB and % per vGPU, as vgpu-manager.
    "volcano.sh/vgpu-number": c.VOLCANO,
    "volcano.sh/vgpu-memory": c.VOLCANO,
    "volcano.sh/vgpu-cores": c.VOLCANO,
    # Volcano's older GPU share (volcano-sh/volcano pkg/scheduler/api/devices/nvidia/gpushare/type.go):
    # MiB of one GPU, or whole idle GPUs.
    "volcano.sh/gpu-memory": c.VOLCANO_GPUSHARE,
    "volcano.sh/gpu-number": c.VOLCANO_GPUSHARE,
    # Koordinator's device share (koordinator-sh/koordinator apis/extension/device_share.go).
    "koordinator.sh/gpu": c.KOORDINATOR,
    "koordinator.sh/gpu.shared": c.KOORDINATOR,
    "koordinator.sh/gpu-core": c.KOORDINATOR,
    "koordinator.sh/gpu-memory": c.KOORDINATOR,
    "koordinator.sh/gpu-memory-ratio": c.KOORDINATOR,
    # The device plugin's time-slicing with `renameByDefault: true` advertises replicas under this name.
    TIME_SLICED_GPU: c.NVIDIA_GPU,
    "google.com/tpu": c.TPU,
}
MIG_PREFIX = "nvidia.com/mig-"
OBSOLETE = {ALPHA_NVIDIA_GPU: DEVICE_PLUGIN_GPU}
# Accelerator resources kubectl-gpu does not translate: reported by name, never rewritten, never
# silently passed.  (prefix, what to tell the person)
UNTRANSLATED_ACCELERATORS: tuple[tuple[str, str], ...] = (
    ("cloud-tpus.google.com/", "Cloud TPU (legacy) has no DRA driver"),
    ("hygon.com/", "Hygon DCU has no DRA driver"),
    ("huawei.com/Ascend", "Huawei Ascend has no DRA driver kubectl-gpu can target"),
    ("amd.com/gpu", "AMD's DRA driver (gpu.amd.com) exists, but kubectl-gpu does not translate to it yet"),
    ("gpu.intel.com/", "Intel's DRA driver (gpu.intel.com) exists, but kubectl-gpu does not translate to it yet"),
    # The domains under which these vendors' device plugins (and HAMi's sharing of them: Project-HAMi/HAMi
    # pkg/device/devices_test.go loadTestConfig) advertise: iluvatar.ai/vgpu|vcuda-memory|vcuda-core,
    # metax-tech.com/gpu, mthreads.com/vgpu|sgpu-memory|sgpu-core, cambricon.com/mlu|vmlu|mlu.smlu.*,
    # kunlunxin.com/xpu, aws.amazon.com/neuron|neuroncore|neurondevice, habana.ai/gaudi.  A prefix each, so a
    # product's new name is named too.
    ("iluvatar.ai/", "Iluvatar CoreX GPUs have no DRA driver kubectl-gpu can target"),
    ("metax-tech.com/", "MetaX GPUs have no DRA driver kubectl-gpu can target"),
    ("mthreads.com/", "Moore Threads GPUs have no DRA driver kubectl-gpu can target"),
    ("cambricon.com/", "Cambricon MLUs have no DRA driver kubectl-gpu can target"),
    ("aws.amazon.com/neuron", "AWS Neuron devices have no DRA driver kubectl-gpu can target"),
    ("habana.ai/", "Intel Gaudi (Habana) accelerators have no DRA driver kubectl-gpu can target"),
    ("kunlunxin.com/", "Kunlunxin XPUs have no DRA driver kubectl-gpu can target"),
)
# A value some templating fills in before the manifest is applied: envsubst `$X`/`${X}` (kro's
# `${schema.spec...}` too), Helm/Go and Argo `{{ ... }}`.
_PLACEHOLDER = re.compile(r"\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\{\{.*?\}\}")
# NVIDIA resource names that look like GPUs but that no family knows (a renamed device-plugin
# resource, a new vGPU product): warned about rather than passed over.
NVIDIA_DOMAIN = "nvidia.com/"
_NVIDIA_GPU_LIKE = re.compile("^" + re.escape(NVIDIA_DOMAIN) + "(?:.*gpu.*|mig.*|vcuda.*)$", re.IGNORECASE)


def family_of(resource: str) -> str | None:
    """The legacy family a resource name belongs to, or None for anything else."""
    name = resource.strip()
    if name in LEGACY_RESOURCE_NAMES:
        return LEGACY_RESOURCE_NAMES[name]
    if name.startswith(MIG_PREFIX) and len(name) > len(MIG_PREFIX):
        return c.MIG
    return None


def legacy_texts() -> frozenset[str]:
    """Lower-case texts of which every resource name `family_of` or `untranslated_accelerator`
    knows contains one, and every annotation key that asks for a GPU alone (hints.py): a pod
    template, quota or queue whose text (lower-cased) holds none of them gets nothing from the
    core (no request, no note).  What a YAML escape (`\\x2f`) can spell is the caller's to rule
    out.  Shortest form: a text that contains another one is left out."""
    texts = {name.lower() for name in LEGACY_RESOURCE_NAMES} | {MIG_PREFIX, NVIDIA_DOMAIN}
    texts |= {prefix.lower() for prefix, _ in UNTRANSLATED_ACCELERATORS} | set(ANNOTATION_ONLY_KEYS)
    return frozenset(t for t in texts if not any(other != t and other in t for other in texts))


def untranslated_accelerator(resource: str) -> str | None:
    """Why a GPU-like resource is left alone (None: it is not one, or the core translates it)."""
    name = resource.strip()
    for prefix, why in UNTRANSLATED_ACCELERATORS:
        if name.startswith(prefix):
            return why
    if family_of(name) is None and _NVIDIA_GPU_LIKE.match(name):
        return "kubectl-gpu knows no NVIDIA GPU resource of this name"
    return None


def is_unsupported_accelerator(resource: str) -> bool:
    return untranslated_accelerator(resource) is not None


def mig_profile_of(resource: str) -> str | None:
    """The driver's `profile` for a device-plugin MIG resource (`nvidia.com/mig-1g.10gb.me` ->
    `1g.10gb+me`), None when the name spells no MIG profile."""
    name = resource.strip()
    return driver_mig_profile(name[len(MIG_PREFIX):]) if name.startswith(MIG_PREFIX) else None


@dataclass(frozen=True)
class ContainerRef:
    """A container of a pod template, by position (patch paths) and name (reports)."""

    field: str  # "containers" | "initContainers"
    index: int
    name: str
    # A sidecar (init container with restartPolicy Always) runs beside the main containers.
    sidecar: bool = False

    @property
    def path(self) -> str:
        return f"/spec/{self.field}/{self.index}"

    @property
    def sequential_init(self) -> bool:
        return self.field == "initContainers" and not self.sidecar


@dataclass(frozen=True)
class LegacyRequest:
    container: ContainerRef
    resource: str  # the key as written in the manifest
    family: str
    amount: Fraction
    text: str  # the value as written, for reports and the reversal annotation

    @property
    def name(self) -> str:
        return self.resource.strip()


def iter_containers(spec: Mapping[str, Any]) -> Iterator[tuple[ContainerRef, Mapping[str, Any]]]:
    for field in ("initContainers", "containers"):
        containers = spec.get(field) or []
        if not isinstance(containers, list):
            continue
        for index, container in enumerate(containers):
            if not isinstance(container, Mapping):
                continue
            ref = ContainerRef(
                field=field,
                index=index,
                name=str(container.get("name") or f"{field}[{index}]"),
                sidecar=field == "initContainers" and container.get("restartPolicy") == "Always",
            )
            yield ref, container


def _resource_maps(container: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    resources = container.get("resources")
    if not isinstance(resources, Mapping):
        return {}, {}
    limits = resources.get("limits")
    requests = resources.get("requests")
    return (limits if isinstance(limits, Mapping) else {}, requests if isinstance(requests, Mapping) else {})


def read_container(ref: ContainerRef, container: Mapping[str, Any]) -> tuple[list[LegacyRequest], list[Note]]:
    """The legacy GPU requests of one container, with notes about how they were read.

    An unreadable value yields an ERROR note and no request for that resource.
    """
    limits, requests = _resource_maps(container)
    found: list[LegacyRequest] = []
    notes: list[Note] = []
    keys = list(dict.fromkeys([*limits.keys(), *requests.keys()]))
    for key in keys:
        name = str(key).strip()
        why = untranslated_accelerator(name)
        if why is not None:
            notes.append(Note(Severity.WARNING, f"{name}: {why}; it stays with its device plugin (not rewritten)",
                              ref.name, name))
            continue
        family = family_of(name)
        if family is None:
            continue
        in_limits, in_requests = key in limits, key in requests
        raw = limits[key] if in_limits else requests[key]
        try:
            amount = parse_quantity(raw)
            if in_limits and in_requests and parse_quantity(requests[key]) != amount:
                notes.append(Note(Severity.WARNING,
                                  f"{name}: requests ({requests[key]}) differ from limits ({raw}); "
                                  "the API server rejects that for extended resources, so the limit was used",
                                  ref.name, name))
        except QuantityError as err:
            notes.append(Note(Severity.ERROR, _unreadable(name, raw, err), ref.name, name))
            continue
        if not in_limits:
            notes.append(Note(Severity.WARNING,
                              f"{name} is set in requests without limits, which the API server rejects "
                              "for extended resources; translated from the request", ref.name, name))
        if name == TIME_SLICED_GPU:
            notes.append(Note(Severity.WARNING,
                              f"{name} is the device plugin's time-slicing replica of a GPU; read as a share "
                              "of nvidia.com/gpu (no size: a whole GPU unless --sharing timeslicing or mps "
                              "shares one claim across the workload)", ref.name, name))
        if family == c.MIG and mig_profile_of(name) is None:
            notes.append(Note(Severity.ERROR,
                              f"{name} names no MIG profile the NVIDIA driver publishes (e.g. "
                              "nvidia.com/mig-1g.10gb or nvidia.com/mig-1g.10gb.me); correct the resource name",
                              ref.name, name))
            continue
        if name in OBSOLETE:
            notes.append(Note(Severity.WARNING,
                              f"{name} is obsolete (removed in Kubernetes 1.10); read as {OBSOLETE[name]}",
                              ref.name, name))
        found.append(LegacyRequest(ref, str(key), family, amount, str(raw)))
    return _absorb_counts(found), notes


def _unreadable(name: str, raw: Any, err: QuantityError) -> str:
    placeholder = _PLACEHOLDER.search(str(raw))
    if placeholder is None:
        return f"{name}: {err}"
    return (f"{name}: {str(raw)!r} is a template placeholder ({placeholder.group(0)}), not an amount: render the "
            "manifest first (helm template, envsubst, kustomize build, the operator's own rendering) and migrate "
            "what it renders; one filled in only at run time (an Argo parameter) needs a fixed amount here, or "
            "the admission webhook, which sees the pods with their amounts")


def _absorb_counts(found: list[LegacyRequest]) -> list[LegacyRequest]:
    # With HAMi's memory/core resources, nvidia.com/gpu counts HAMi vGPUs, not whole GPUs.
    families = {r.family for r in found}
    if c.HAMI in families:
        return [LegacyRequest(r.container, r.resource, c.HAMI, r.amount, r.text)
                if r.family == c.NVIDIA_GPU else r for r in found]
    return found


def legacy_requests(pod_template: Mapping[str, Any]) -> list[LegacyRequest]:
    """Every legacy GPU request in a pod template (Pod object or workload template), zeros included."""
    spec = pod_template.get("spec")
    if not isinstance(spec, Mapping):
        return []
    result: list[LegacyRequest] = []
    for ref, container in iter_containers(spec):
        result.extend(read_container(ref, container)[0])
    return result


def is_plain_integer_gpu(request: LegacyRequest) -> bool:
    """A whole-GPU `nvidia.com/gpu` request: the one shape a DeviceClass's extendedResourceName
    (KEP-5004) can serve from DRA devices without rewriting the pod."""
    return (request.family == c.NVIDIA_GPU and request.name == DEVICE_PLUGIN_GPU
            and request.amount > 0 and request.amount.denominator == 1)


def has_legacy_gpu_request(pod_template: Mapping[str, Any]) -> bool:
    """True when some container asks for a legacy GPU resource with a non-zero amount."""
    return any(r.amount > 0 for r in legacy_requests(pod_template))
