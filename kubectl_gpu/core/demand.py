"""What one container really asks for, whatever legacy family it was written in.

Each family has its own units and rules; this module turns them into one vocabulary:
`Demand` = N devices of a kind, whole or as a `Share` of one device each.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from fractions import Fraction

from . import constants as c
from kubectl_gpu.dra.facts import ALPHA_NVIDIA_GPU, DEVICE_PLUGIN_GPU

from .families import TIME_SLICED_GPU, ContainerRef, LegacyRequest, mig_profile_of
from .model import TranslateOptions
from .notes import Note, Severity
from kubectl_gpu.dra.quantity import format_bytes, format_plain

MIB = 2**20
GIB = 2**30
GPU_GROUP = (c.NVIDIA_GPU, c.VCUDA, c.HAMI, c.ALIYUN, c.VGPU_MANAGER, c.VOLCANO, c.VOLCANO_GPUSHARE, c.KOORDINATOR)
# Above this, a GiB figure is surely a MiB figure (no GPU has 1 TiB of memory).
_IMPLAUSIBLE_GIB = 1024


@dataclass(frozen=True)
class Share:
    """Part of one GPU. `memory` is absolute when the legacy request said so; otherwise only
    `fraction` (of a whole GPU) is known."""

    fraction: Fraction | None = None
    memory: int | None = None  # bytes per device
    compute_percent: int | None = None  # a compute limit the legacy system enforced

    def describe(self) -> str:
        parts = []
        if self.memory is not None:
            parts.append(f"{format_bytes(self.memory)} memory")
        if self.fraction is not None:
            parts.append(f"{format_plain(self.fraction)} of a GPU")
        if self.compute_percent is not None:
            parts.append(f"{self.compute_percent}% compute")
        return ", ".join(parts) or "a share"


@dataclass(frozen=True)
class Demand:
    kind: str  # "gpu" | "mig" | "tpu"
    count: int
    family: str
    requests: tuple[LegacyRequest, ...]  # the legacy requests this demand replaces
    share: Share | None = None  # None: whole devices
    profile: str | None = None  # MIG profile, e.g. "1g.10gb"
    # The pod's one demand of a family its scheduler places per pod (pod_level_demands): every container
    # that asked uses the same claim.
    pod_level: bool = False

    @property
    def legacy_text(self) -> str:
        return ", ".join(f"{r.name}: {r.text}" for r in self.requests)


@dataclass(frozen=True)
class ContainerDemands:
    container: ContainerRef
    demands: tuple[Demand, ...]
    zero_requests: tuple[LegacyRequest, ...]  # `nvidia.com/gpu: 0` and friends: removed, no device
    notes: tuple[Note, ...]

    @property
    def failed(self) -> bool:
        return any(n.severity is Severity.ERROR for n in self.notes)


def container_demands(ref: ContainerRef, requests: list[LegacyRequest], annotations: Mapping[str, object],
                      options: TranslateOptions) -> ContainerDemands:
    notes: list[Note] = []
    zero = tuple(r for r in requests if r.amount == 0)
    for r in zero:
        notes.append(Note(Severity.INFO, f"removed {r.name}: {r.text} (asks for no device)", ref.name, r.name))
    live = [r for r in requests if r.amount != 0 and r.family not in options.pass_through_families]
    for r in requests:
        if r.amount != 0 and r.family in options.pass_through_families:
            notes.append(Note(Severity.INFO, f"{r.name} left as is: family {r.family!r} passes through",
                              ref.name, r.name))
    negative = [r for r in live if r.amount < 0]
    if negative:
        for r in negative:
            notes.append(Note(Severity.ERROR, f"{r.name}: {r.text} is negative; use a positive amount",
                              ref.name, r.name))
        return ContainerDemands(ref, (), zero, tuple(notes))

    demands: list[Demand] = []
    for r in live:
        if r.family == c.MIG:
            demands.extend(_whole_devices(ref, r, "mig", notes, profile=mig_profile_of(r.name)))
        elif r.family == c.TPU:
            demands.extend(_whole_devices(ref, r, "tpu", notes))
    gpu_group = [r for r in live if r.family in GPU_GROUP]
    families = sorted({r.family for r in gpu_group})
    if len(families) > 1:
        notes.append(Note(Severity.ERROR,
                          "mixes resources of different GPU device plugins "
                          f"({', '.join(r.name for r in gpu_group)}); keep the ones of one plugin",
                          ref.name))
    elif families:
        builder = _BUILDERS[families[0]]
        demand = builder(ref, {r.name: r for r in gpu_group}, annotations, options, notes)
        if demand is not None:
            demands.append(demand)
    return ContainerDemands(ref, tuple(demands), zero, tuple(notes))


def _whole_devices(ref: ContainerRef, r: LegacyRequest, kind: str, notes: list[Note],
                   profile: str | None = None) -> list[Demand]:
    if r.amount.denominator != 1:
        notes.append(Note(Severity.ERROR, f"{r.name}: {r.text} must be a whole number of devices",
                          ref.name, r.name))
        return []
    return [Demand(kind, int(r.amount), r.family, (r,), profile=profile)]


def _nvidia_gpu(ref: ContainerRef, found: dict[str, LegacyRequest], annotations: Mapping[str, object],
                options: TranslateOptions, notes: list[Note]) -> Demand | None:
    requests = tuple(found.values())
    if TIME_SLICED_GPU in found:
        if len(found) > 1:
            notes.append(Note(Severity.ERROR, f"{TIME_SLICED_GPU} beside {', '.join(k for k in found if k != TIME_SLICED_GPU)}"
                                              ": a container asks for time-sliced replicas or whole GPUs, not both; "
                                              "keep one", ref.name))
            return None
        shared = found[TIME_SLICED_GPU]
        if shared.amount.denominator != 1:
            notes.append(Note(Severity.ERROR, f"{shared.name}: {shared.text} must be a whole number of replicas",
                              ref.name, shared.name))
            return None
        # A replica is an unsized slot on a shared GPU: a share whose size nobody stated.
        return Demand("gpu", int(shared.amount), c.NVIDIA_GPU, requests, share=Share())
    r = found.get(DEVICE_PLUGIN_GPU) or found[ALPHA_NVIDIA_GPU]
    if options.gpu_slots and r.amount.denominator == 1:
        notes.append(Note(Severity.INFO, f"{r.name}: {r.text} read as {r.text} slot(s) of shared GPUs: every GPU node "
                                         "this pod can run on shares each GPU among the device plugin's replicas",
                          ref.name, r.name))
        return Demand("gpu", int(r.amount), c.NVIDIA_GPU, requests, share=Share())
    if r.amount.denominator == 1:
        return Demand("gpu", int(r.amount), c.NVIDIA_GPU, requests)
    if r.amount < 1:
        return Demand("gpu", 1, c.NVIDIA_GPU, requests, share=Share(fraction=r.amount))
    notes.append(Note(Severity.ERROR,
                      f"{r.name}: {r.text} is neither a whole number of GPUs nor a fraction below one "
                      "(e.g. 0.5); use a whole number", ref.name, r.name))
    return None


def _vcuda(ref: ContainerRef, found: dict[str, LegacyRequest], annotations: Mapping[str, object],
           options: TranslateOptions, notes: list[Note]) -> Demand | None:
    domain = "tencent.com" if any(k.startswith("tencent.com/") for k in found) else "nvidia.com"
    # gpu-manager's seed build counts memory in MiB; upstream tkestack in 256 MiB blocks.
    memory_unit = 256 * MIB if domain == "tencent.com" else MIB
    core = found.get(f"{domain}/vcuda-core")
    memory = found.get(f"{domain}/vcuda-memory")
    requests = tuple(found.values())
    memory_bytes = int(memory.amount * memory_unit) if memory else None
    limit = _core_limit(ref, domain, annotations, notes)
    if core is None:
        notes.append(Note(Severity.WARNING, f"{domain}/vcuda-memory without vcuda-core: "
                          "translated as a memory share of one GPU", ref.name))
        return Demand("gpu", 1, c.VCUDA, requests, share=Share(memory=memory_bytes, compute_percent=limit))
    cores = core.amount
    if cores.denominator == 1 and cores % 100 == 0:
        if memory is not None:
            notes.append(Note(Severity.INFO, f"{memory.name} ignored: whole GPUs come with all their memory",
                              ref.name, memory.name))
        return Demand("gpu", int(cores // 100), c.VCUDA, requests)
    if cores.denominator == 1 and 0 < cores < 100:
        return Demand("gpu", 1, c.VCUDA, requests,
                      share=Share(fraction=cores / 100, memory=memory_bytes,
                                  compute_percent=limit if limit is not None else int(cores)))
    notes.append(Note(Severity.ERROR,
                      f"{core.name}: {core.text} is not valid: 100 is one GPU, so use a value below 100 "
                      "(a share of one GPU) or a multiple of 100 (whole GPUs)", ref.name, core.name))
    return None


def _core_limit(ref: ContainerRef, domain: str, annotations: Mapping[str, object],
                notes: list[Note]) -> int | None:
    key = f"{domain}/vcuda-core-limit"
    if key not in annotations:
        return None
    raw = annotations[key]
    try:
        value = int(str(raw).strip())
    except ValueError:
        notes.append(Note(Severity.ERROR, f"annotation {key}: {raw!r} is not a whole percentage (0-100)",
                          ref.name))
        return None
    if not 0 < value <= 100:
        notes.append(Note(Severity.ERROR, f"annotation {key}: {value} must be between 1 and 100", ref.name))
        return None
    return value


def _percent(r: LegacyRequest | None, ref: ContainerRef, notes: list[Note]) -> int | None:
    if r is None:
        return None
    if r.amount.denominator != 1 or not 0 < r.amount <= 100:
        notes.append(Note(Severity.ERROR, f"{r.name}: {r.text} must be a whole percentage from 1 to 100",
                          ref.name, r.name))
        return None
    return int(r.amount)


def _count(r: LegacyRequest | None, ref: ContainerRef, notes: list[Note], default_note: str) -> int | None:
    if r is None:
        notes.append(Note(Severity.WARNING, default_note, ref.name))
        return 1
    if r.amount.denominator != 1:
        notes.append(Note(Severity.ERROR, f"{r.name}: {r.text} must be a whole number of devices",
                          ref.name, r.name))
        return None
    return int(r.amount)


def _vgpu_style(family: str, count_key: str, memory_key: str, cores_key: str, percent_key: str | None):
    """HAMi and vgpu-manager: N virtual GPUs, each with MiB of memory and a % of compute."""

    def build(ref: ContainerRef, found: dict[str, LegacyRequest], annotations: Mapping[str, object],
              options: TranslateOptions, notes: list[Note]) -> Demand | None:
        errors_before = sum(n.severity is Severity.ERROR for n in notes)
        count = _count(found.get(count_key), ref, notes,
                       f"no {count_key}: one virtual GPU assumed, as the {family} scheduler does")
        cores = _percent(found.get(cores_key), ref, notes)
        percent = _percent(found.get(percent_key), ref, notes) if percent_key else None
        memory = found.get(memory_key)
        if sum(n.severity is Severity.ERROR for n in notes) > errors_before or count is None:
            return None
        requests = tuple(found.values())
        if cores == 100 or (memory is None and percent is None and cores is None):
            return Demand("gpu", count, family, requests)
        fraction = Fraction(percent, 100) if percent is not None else (
            Fraction(cores, 100) if cores is not None and memory is None else None)
        share = Share(fraction=fraction, memory=int(memory.amount * MIB) if memory else None,
                      compute_percent=cores)
        return Demand("gpu", count, family, requests, share=share)

    return build


def _aliyun(ref: ContainerRef, found: dict[str, LegacyRequest], annotations: Mapping[str, object],
            options: TranslateOptions, notes: list[Note]) -> Demand | None:
    memory = found.get("aliyun.com/gpu-mem")
    count_r = found.get("aliyun.com/gpu-count")
    percent = _percent(found.get("aliyun.com/gpu-core.percentage"), ref, notes)
    requests = tuple(found.values())
    unit = GIB if options.aliyun_memory_unit.lower() == "gib" else MIB
    if memory is not None and unit == GIB and memory.amount >= _IMPLAUSIBLE_GIB:
        notes.append(Note(Severity.ERROR,
                          f"aliyun.com/gpu-mem: {memory.text} GiB is more memory than any GPU has; if your "
                          "gpushare device plugin counts MiB (--memory-unit=MiB), pass --aliyun-memory-unit MiB",
                          ref.name, memory.name))
        return None
    count = 1
    if count_r is not None:
        if count_r.amount.denominator != 1:
            notes.append(Note(Severity.ERROR, f"aliyun.com/gpu-count: {count_r.text} must be a whole number",
                              ref.name, count_r.name))
            return None
        count = int(count_r.amount)
    if memory is None and percent is None:
        return Demand("gpu", count, c.ALIYUN, requests)
    per_device = int(memory.amount * unit / count) if memory is not None else None
    if memory is not None and count > 1:
        notes.append(Note(Severity.INFO, f"aliyun.com/gpu-mem {memory.text} spread over {count} GPUs: "
                          f"{format_bytes(per_device)} each", ref.name))
    share = Share(fraction=Fraction(percent, 100) if percent and memory is None else None,
                  memory=per_device, compute_percent=percent)
    return Demand("gpu", count, c.ALIYUN, requests, share=share)


def _volcano_gpushare(ref: ContainerRef, found: dict[str, LegacyRequest], annotations: Mapping[str, object],
                      options: TranslateOptions, notes: list[Note]) -> Demand | None:
    """Volcano's GPU share: `volcano.sh/gpu-number` takes that many idle GPUs (no other pod on them);
    `volcano.sh/gpu-memory` is MiB on one GPU with that much idle memory (volcano-sh/volcano
    pkg/scheduler/api/devices/nvidia/gpushare/share.go, predicateGPUbyNumber / predicateGPUbyMemory)."""
    number, memory = found.get("volcano.sh/gpu-number"), found.get("volcano.sh/gpu-memory")
    requests = tuple(found.values())
    if number is not None and memory is not None:
        notes.append(Note(Severity.ERROR, "volcano.sh/gpu-number (whole idle GPUs) beside volcano.sh/gpu-memory "
                                          "(MiB of one shared GPU): Volcano places them as two separate requests; "
                                          "keep the one you mean", ref.name))
        return None
    if number is not None:
        count = _count(number, ref, notes, "")
        return None if count is None else Demand("gpu", count, c.VOLCANO_GPUSHARE, requests)
    assert memory is not None
    return Demand("gpu", 1, c.VOLCANO_GPUSHARE, requests, share=Share(memory=int(memory.amount * MIB)))


_KOORD = "koordinator.sh/"


def _koordinator(ref: ContainerRef, found: dict[str, LegacyRequest], annotations: Mapping[str, object],
                 options: TranslateOptions, notes: list[Note]) -> Demand | None:
    """Koordinator's device share (koordinator-sh/koordinator docs/proposals/scheduling/
    20230803-enhance-gpu-share-api.md): gpu-memory in bytes, gpu-memory-ratio and gpu-core in percent
    of one GPU, totals divided equally over `gpu.shared` GPUs (absent: ratio / 100 when that is whole,
    else one); `koordinator.sh/gpu` is gpu-core and gpu-memory-ratio at once."""
    requests = tuple(found.values())
    combined, shared = found.get(_KOORD + "gpu"), found.get(_KOORD + "gpu.shared")
    core, ratio, memory = (found.get(_KOORD + k) for k in ("gpu-core", "gpu-memory-ratio", "gpu-memory"))
    errors_before = sum(n.severity is Severity.ERROR for n in notes)

    def refuse(message: str) -> None:
        notes.append(Note(Severity.ERROR, message, ref.name))

    core_amount = ratio_amount = None
    if combined is not None:
        if core is not None or ratio is not None:
            refuse(f"{_KOORD}gpu is {_KOORD}gpu-core and {_KOORD}gpu-memory-ratio at once; keep it or them, "
                   "not both")
        core_amount = ratio_amount = combined.amount
    else:
        core_amount = core.amount if core is not None else None
        ratio_amount = ratio.amount if ratio is not None else None
    if memory is not None and ratio_amount is not None:
        refuse(f"{_KOORD}gpu-memory beside {_KOORD}gpu-memory-ratio, which Koordinator rejects: keep one, "
               "not both")
    if memory is None and ratio_amount is None:
        refuse(f"{', '.join(sorted(found))} without {_KOORD}gpu-memory or {_KOORD}gpu-memory-ratio: Koordinator "
               "rejects a GPU share that states no memory; add one")
    if sum(n.severity is Severity.ERROR for n in notes) > errors_before:
        return None
    if shared is not None:
        count = _count(shared, ref, notes, "")
        if count is None:
            return None
    else:
        count = int(ratio_amount // 100) if ratio_amount is not None and ratio_amount % 100 == 0 else 1
    count = max(count, 1)
    ratio_each = ratio_amount / count if ratio_amount is not None else None
    core_each = core_amount / count if core_amount is not None else None
    if any(v is not None and v > 100 for v in (ratio_each, core_each)):
        refuse(f"{', '.join(f'{r.name}: {r.text}' for r in requests)} is more than one GPU on each of {count} "
               f"GPU(s): use a multiple of 100 (whole GPUs) or set {_KOORD}gpu.shared to the number of GPUs")
        return None
    if memory is None and ratio_each == 100 and core_each in (None, 100):
        return Demand("gpu", count, c.KOORDINATOR, requests)
    share = Share(fraction=ratio_each / 100 if ratio_each is not None else None,
                  memory=int(memory.amount / count) if memory is not None else None,
                  compute_percent=-(-int(core_each.numerator) // int(core_each.denominator))
                  if core_each is not None else None)
    return Demand("gpu", count, c.KOORDINATOR, requests, share=share)


_BUILDERS = {
    c.NVIDIA_GPU: _nvidia_gpu,
    c.VCUDA: _vcuda,
    c.HAMI: _vgpu_style(c.HAMI, DEVICE_PLUGIN_GPU, "nvidia.com/gpumem", "nvidia.com/gpucores",
                        "nvidia.com/gpumem-percentage"),
    c.VGPU_MANAGER: _vgpu_style(c.VGPU_MANAGER, "nvidia.com/vgpu-number", "nvidia.com/vgpu-memory",
                                "nvidia.com/vgpu-cores", None),
    c.VOLCANO: _vgpu_style(c.VOLCANO, "volcano.sh/vgpu-number", "volcano.sh/vgpu-memory",
                           "volcano.sh/vgpu-cores", None),
    c.ALIYUN: _aliyun,
    c.VOLCANO_GPUSHARE: _volcano_gpushare,
    c.KOORDINATOR: _koordinator,
}


# Families whose scheduler places a pod's GPU requests as one: the containers' amounts added up (init
# containers' largest if more, as resourceapi.PodRequests), one placement, every GPU container given it.
#   Volcano GPU share: getGPUMemoryOfPod / getGPUNumberOfPod add the containers' limits and the device plugin
#     gives each GPU container all of the pod's GPU ids (volcano-sh/volcano pkg/scheduler/api/devices/nvidia/
#     gpushare/share.go @ 09d37cf3; volcano-sh/devices pkg/plugin/nvidia/server.go Allocate @ 95b591b6).
#   Koordinator: GetPodDeviceRequests reads resourceapi.PodRequests, one allocation in the pod's
#     device-allocated annotation, NVIDIA_VISIBLE_DEVICES from it for each container (koordinator-sh/koordinator
#     pkg/scheduler/plugins/deviceshare/utils.go, pkg/koordlet/runtimehooks/hooks/gpu/gpu.go,
#     apis/extension/device_share.go @ a7a1b76b).
POD_LEVEL_FAMILIES = {c.VOLCANO_GPUSHARE: "Volcano's GPU share", c.KOORDINATOR: "Koordinator"}


def pod_level_demands(containers: list[ContainerDemands], annotations: Mapping[str, object],
                      options: TranslateOptions) -> tuple[list[ContainerDemands], list[Note]]:
    """``containers`` with the demands of a pod-level family, where more than one container asks, read
    once from the pod's totals: each such container keeps its own requests and the pod's one device."""
    notes: list[Note] = []
    for family in POD_LEVEL_FAMILIES:
        holders = [cd for cd in containers if any(d.family == family for d in cd.demands)]
        if len(holders) < 2:
            continue
        running: dict[str, Fraction] = {}
        init: dict[str, Fraction] = {}
        for holder in holders:
            for r in (r for d in holder.demands if d.family == family for r in d.requests):
                if holder.container.sequential_init:
                    init[r.name] = max(init.get(r.name, Fraction(0)), r.amount)
                else:
                    running[r.name] = running.get(r.name, Fraction(0)) + r.amount
        first = holders[0].container
        totals = {name: LegacyRequest(first, name, family, amount, format_plain(amount))
                  for name in sorted({*running, *init})
                  for amount in [max(running.get(name, Fraction(0)), init.get(name, Fraction(0)))]}
        names = ", ".join(h.container.name for h in holders)
        read: list[Note] = []
        pooled = _BUILDERS[family](first, totals, annotations, options, read)
        notes.extend(replace(n, message=f"the pod's {n.message}") if n.severity is Severity.ERROR else n
                     for n in read)
        if pooled is None:
            continue
        notes.append(Note(Severity.INFO, f"{POD_LEVEL_FAMILIES[family]} places a pod's GPU requests as one: containers "
                                         f"{names} share one claim of {_described(pooled)} "
                                         f"({', '.join(f'{r.name}: {r.text}' for r in totals.values())} in all)"))
        containers = [replace(cd, demands=tuple(
            replace(pooled, requests=d.requests, pod_level=True) if d.family == family else d for d in cd.demands))
            if cd in holders else cd for cd in containers]
    return containers, notes


def _described(demand: Demand) -> str:
    return f"{demand.count} GPU(s)" + (f", {demand.share.describe()} each" if demand.share is not None else "")
