"""Translation fitted to one cluster: options chosen from its profile, claims checked against it.

Both faces do the same three things with a profile, in this order:
1. ``fit_options``: the ``resource.k8s.io`` version the API server serves, the sharing mode the
   devices allow (``--sharing auto``), and how whole-GPU claims stay whole on shareable GPUs;
2. translate with the core (pure, knows nothing of clusters);
3. ``unsatisfiable``: explain every emitted claim against the published devices; a claim no
   device can satisfy is an error (migrate) or a deny/warning (webhook), with explain's reason.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from kubectl_gpu.dra.gates import CONSUMABLE_CAPACITY as DRA_CONSUMABLE_CAPACITY
from kubectl_gpu.dra.gates import EXTENDED_RESOURCE as DRA_EXTENDED_RESOURCE
from kubectl_gpu.core import constants as c
from kubectl_gpu.dra import facts
from kubectl_gpu.core import (ApiVersion, ClaimObject, Note, PodTranslation, Severity, Sharing, TargetDriver,
                              TranslateOptions, for_target)
from kubectl_gpu.dra import hami
from kubectl_gpu.dra.facts import (DRA_VERSIONS, GFD_REPLICAS_LABEL, GFD_SHARING_STRATEGY_LABEL, device_plugin_mig_resource,
                                   gpu_device_class_names)

from .shared_gpus import every_gpu_node_shares, shared_pools

if TYPE_CHECKING:
    from .profile import ClusterProfile  # loaded by whoever built a profile; offline migrate never does
    from kubectl_gpu.dra.devices import Device
    from kubectl_gpu.explain import DeviceClassSpec
    from kubectl_gpu.explain.model import ClaimResult
    from kubectl_gpu.allocator import Allocator
    from kubectl_gpu.explain.judge import Cluster

Translator = Callable[[Mapping[str, Any], TranslateOptions], PodTranslation]
MIG_RESOURCE_PREFIX = device_plugin_mig_resource("")  # nvidia.com/mig-

# What NVIDIA's driver needs for each sharing mode (kubernetes-sigs/dra-driver-nvidia-gpu v0.5.0:
# pkg/featuregates/featuregates.go, cmd/gpu-kubelet-plugin/consumable_shares.go).
DRIVER_REQUIREMENTS: dict[Sharing, str] = {
    Sharing.CONSUMABLE: (
        f"{facts.driver_gate_requirement(facts.CONSUMABLE_SHARES)} and --consumable-shares set, plus Kubernetes' "
        f"{DRA_CONSUMABLE_CAPACITY} gate; memory is accounted by the scheduler, not enforced on the GPU; "
        "MPS is refused while consumable shares are on"),
    Sharing.TIMESLICING: facts.driver_gate_requirement("TimeSlicingSettings"),
    Sharing.MPS: f"{facts.driver_gate_requirement(facts.MPS_SUPPORT)}; refused while consumable shares are on",
}


@dataclass(frozen=True)
class FittedOptions:
    options: TranslateOptions
    notes: tuple[str, ...]  # what was decided from the profile, for the report


def fit_options(options: TranslateOptions, profile: ClusterProfile | None, *,
                api_version_given: bool, driver_shares: int | None = None) -> FittedOptions:
    """``options`` adjusted to the cluster.  ``api_version_given``: the user chose a version, so the
    profile only checks it (a version the cluster does not serve is reported, not silently changed).
    ``driver_shares``: the integer share count the NVIDIA driver its GPU nodes will run publishes
    (ConsumableShares on, --consumable-shares N; plan's prediction), beside what the profile's slices show."""
    notes: list[str] = []
    options = _fit_target(options, profile, notes)
    if profile is not None:
        served = profile.api_version
        if served is None:
            notes.append(f"the cluster serves no {c.DRA_GROUP} version kubectl-gpu writes ({', '.join(DRA_VERSIONS)}): "
                         "DRA is not enabled there; claims are written as " + options.api_version.value)
        elif not api_version_given:
            options = replace(options, api_version=served)
            notes.append(f"claims written as {served.value}, the newest {c.DRA_GROUP} version the cluster serves")
        elif options.api_version.value.split("/")[1] not in profile.served_versions:
            notes.append(f"--api-version {options.api_version.value} is not served by the cluster (it serves "
                         f"{', '.join(profile.served_versions)}): the API server will refuse these claims")
    options = _fit_gpu_memory(options, profile, notes)
    options = _fit_gpu_slots(options, profile, notes)
    options = _fit_slot_shares(options, profile, driver_shares, notes)
    options = _fit_sharing(options, profile, notes)
    options = _keep_whole_gpus_whole(options, profile, notes)
    options = _fit_prioritized_list(options, profile, notes)
    options = _fit_extended_resources(options, profile, notes)
    options = _fit_gpu_classes(options, profile, notes)
    return FittedOptions(options, tuple(notes))


def _nvidia_devices(profile: ClusterProfile, kind: str) -> list[Device]:
    return [d for d in profile.devices if d.driver == c.NVIDIA_DRIVER and d.attribute("type") == kind]


def _target_gpus(profile: ClusterProfile, options: TranslateOptions) -> tuple[str, list[Device]]:
    """The whole GPUs of the driver the claims are for, and that driver's name in words."""
    if options.target_driver is TargetDriver.HAMI:
        return "HAMi", [d for d in profile.devices if d.driver == hami.HAMI_DRIVER
                        and d.attribute("type") == hami.HAMI_GPU_TYPE]
    return "NVIDIA", _nvidia_devices(profile, "gpu")


def _fit_target(options: TranslateOptions, profile: ClusterProfile | None, notes: list[str]) -> TranslateOptions:
    """--target-driver auto: HAMi's driver where the cluster publishes its slices or DeviceClass,
    else NVIDIA's (also without a profile).  The options then carry the target's DeviceClass."""
    if options.target_driver is TargetDriver.AUTO:
        target = TargetDriver.HAMI if profile is not None and profile.publishes_hami else TargetDriver.NVIDIA
        notes.append(f"--target-driver auto: claims are for {'HAMi' if target is TargetDriver.HAMI else 'NVIDIA'}'s "
                     "DRA driver (" + (f"the cluster publishes {hami.HAMI_DRIVER} slices or its DeviceClass"
                                       if target is TargetDriver.HAMI else
                                       f"no {hami.HAMI_DRIVER} slice or DeviceClass"
                                       + (" in the cluster" if profile is not None else " without a cluster profile"))
                     + ")")
        return for_target(options, target)
    return for_target(options)


def _fit_gpu_memory(options: TranslateOptions, profile: ClusterProfile | None, notes: list[str]) -> TranslateOptions:
    """Without --gpu-memory, a cluster whose GPUs all have one memory size says what a fraction is."""
    if options.gpu_memory or profile is None:
        return options
    who, gpus = _target_gpus(profile, options)
    sizes = {str(d.capacity_value("memory")) for d in gpus if d.capacity_value("memory")}
    if len(sizes) != 1:
        return options
    (size,) = sizes
    notes.append(f"every {who} GPU in the cluster has {size} of memory: fractions of a GPU are shares of it")
    return replace(options, gpu_memory=size)


def _fit_gpu_slots(options: TranslateOptions, profile: ClusterProfile | None, notes: list[str]) -> TranslateOptions:
    """Every GPU node of the profile's Nodes shares its GPUs (device-plugin time-slicing or MPS): there
    nvidia.com/gpu counted slots, so it is read as slots (shared_gpus.py)."""
    if profile is None or not every_gpu_node_shares(profile.nodes):
        return options
    notes.append("every GPU node in the profile shares its GPUs through the device plugin (GFD "
                 f"{GFD_SHARING_STRATEGY_LABEL}, {GFD_REPLICAS_LABEL}): nvidia.com/gpu is read as slots of shared GPUs "
                 "(one ResourceClaim per workload with --sharing timeslicing or mps; a whole GPU each otherwise)")
    return replace(options, gpu_slots=True)


def _fit_slot_shares(options: TranslateOptions, profile: ClusterProfile | None, driver_shares: int | None,
                     notes: list[str]) -> TranslateOptions:
    """A profile showing pools whose device plugin shares GPUs (shared_gpus.py), with --sharing auto or
    consumable: their slots become per-pod claims for one of a GPU's integer `shares` where the NVIDIA
    driver publishes them (driver v0.5 ConsumableShares, --consumable-shares N), else stay as today
    (one claim per workload with --sharing timeslicing, whole GPUs otherwise).  The report says which."""
    if profile is None or options.sharing not in (Sharing.AUTO, Sharing.CONSUMABLE) or not shared_pools(profile.nodes):
        return options
    needs = (f"{facts.driver_gate_requirement(facts.CONSUMABLE_SHARES)} and --consumable-shares N (N: the pool's "
             f"replicas), plus Kubernetes' {DRA_CONSUMABLE_CAPACITY} gate")
    published = sorted({str(d.capacity_value(facts.CAP.shares)) for d in profile.shareable_devices(c.NVIDIA_DRIVER)
                        if d.capacity_value(facts.CAP.shares) is not None})
    source = (f"the cluster's NVIDIA GPUs publish {facts.CAP.shares} ({', '.join(published)})" if published
              else f"the driver predicted for its GPU nodes publishes {driver_shares} {facts.CAP.shares} per GPU"
              if driver_shares else None)
    blocked = (None if source is None
               else f"it needs {ApiVersion.V1.value}" if not options.api_version.supports_consumable_capacity
               else f"the cluster's {DRA_CONSUMABLE_CAPACITY} gate is off" if not profile.gate(DRA_CONSUMABLE_CAPACITY)
               else None)
    if source is None or blocked is not None:
        why = f"{source}, but {blocked}" if source is not None else "no NVIDIA GPU publishes shares"
        notes.append(f"shared GPU pools: their nvidia.com/gpu slots are not claims for a GPU's {facts.CAP.shares} "
                     f"({why}); that needs the {needs}; until then --sharing timeslicing keeps each workload's pods "
                     "on one shared ResourceClaim")
        return options
    notes.append(f"shared GPU pools: their nvidia.com/gpu slots become per-pod claims for {facts.CAP.shares} of a GPU "
                 f"({source}); needs the {needs}")
    return replace(options, slot_shares=True)


def _fit_prioritized_list(options: TranslateOptions, profile: ClusterProfile | None,
                          notes: list[str]) -> TranslateOptions:
    if profile is None:
        return options
    from .profile import PRIORITIZED_LIST, prioritized_list_on

    if not prioritized_list_on(profile) or options.target_driver is TargetDriver.HAMI:
        return options  # HAMi's driver publishes no MIG devices to list first
    mig: dict[str, int] = {}
    for device in _nvidia_devices(profile, "mig"):
        name, memory = device.attribute("profile"), device.capacity_value("memory")
        if isinstance(name, str) and memory is not None:
            mig[name] = int(memory.value)
    notes.append(f"{PRIORITIZED_LIST} is on: GPU shares become firstAvailable lists (the smallest MIG profile that "
                 "holds the memory, else a consumable share, else a whole GPU, tried in that order)"
                 + (f"; MIG profiles published: {', '.join(sorted(mig))}" if mig else ""))
    return replace(options, prioritized_list=True, mig_profiles=tuple(sorted(mig.items())))


def _fit_extended_resources(options: TranslateOptions, profile: ClusterProfile | None,
                            notes: list[str]) -> TranslateOptions:
    """KEP-5004: where DRAExtendedResource is on, a MIG extended resource that one of the cluster's
    DeviceClasses names in extendedResourceName is served by the scheduler from DRA devices of that
    class, so those requests are left as written (nvidia.com/gpu stays with --integer-gpus)."""
    if profile is None or not profile.gate(DRA_EXTENDED_RESOURCE):
        return options
    served = sorted({str(name) for cls in profile.device_classes
                     if isinstance(name := (cls.get("spec") or {}).get("extendedResourceName"), str)
                     and name.startswith(MIG_RESOURCE_PREFIX)})
    if not served:
        return options
    notes.append(f"{DRA_EXTENDED_RESOURCE} is on and the cluster's DeviceClasses serve {', '.join(served)} "
                 "(extendedResourceName, KEP-5004): those MIG requests are left for the scheduler")
    return replace(options, dra_extended_resources=options.dra_extended_resources | frozenset(served))


def _fit_gpu_classes(options: TranslateOptions, profile: ClusterProfile | None,
                     notes: list[str]) -> TranslateOptions:
    """The cluster's DeviceClasses under names of their own that select the driver's GPUs: a claim of
    one beside a device-plugin GPU asks for GPUs twice, as one of the driver's classes does."""
    found = gpu_device_class_names(profile.device_classes) if profile is not None else frozenset()
    if not found - options.gpu_device_classes:
        return options
    notes.append(f"the cluster's DeviceClasses {', '.join(sorted(found))} select NVIDIA GPUs: their claims count "
                 "as GPU claims")
    return replace(options, gpu_device_classes=options.gpu_device_classes | found)


def _fit_sharing(options: TranslateOptions, profile: ClusterProfile | None, notes: list[str]) -> TranslateOptions:
    if options.target_driver is TargetDriver.HAMI:
        return _fit_hami_sharing(options, profile, notes)
    if options.sharing is not Sharing.AUTO:
        requirement = DRIVER_REQUIREMENTS.get(options.sharing)
        if requirement:
            notes.append(f"--sharing {options.sharing.value} needs the {requirement}")
        return options
    if profile is None:
        reason = "--sharing auto without a cluster profile (--cluster or --from-cluster) gives whole GPUs"
        return replace(options, sharing=Sharing.EXCLUSIVE, sharing_reason=reason)
    shareable = profile.shareable_devices(c.NVIDIA_DRIVER)
    if not options.api_version.supports_consumable_capacity:
        reason = f"--sharing auto: consumable capacity needs {ApiVersion.V1.value} (Kubernetes 1.34+)"
    elif not shareable:
        reason = ("--sharing auto: no NVIDIA GPU in the cluster advertises allowMultipleAllocations (that needs "
                  f"Kubernetes' {DRA_CONSUMABLE_CAPACITY} gate and the driver's ConsumableShares gate with "
                  "--consumable-shares)")
    elif not profile.gate(DRA_CONSUMABLE_CAPACITY):
        reason = f"--sharing auto: the cluster's {DRA_CONSUMABLE_CAPACITY} feature gate is off"
    else:
        notes.append(f"--sharing auto: consumable capacity, {len(shareable)} NVIDIA GPU(s) advertise "
                     f"allowMultipleAllocations; needs the {DRIVER_REQUIREMENTS[Sharing.CONSUMABLE]}")
        return replace(options, sharing=Sharing.CONSUMABLE)
    notes.append(reason + "; fractional GPU requests get whole GPUs")
    return replace(options, sharing=Sharing.EXCLUSIVE, sharing_reason=reason)


def _fit_hami_sharing(options: TranslateOptions, profile: ClusterProfile | None,
                      notes: list[str]) -> TranslateOptions:
    """HAMi's GPUs always allow multiple allocations (kubectl_gpu.dra.hami): --sharing auto gives
    shares of cores and memory wherever resource.k8s.io/v1 and DRAConsumableCapacity allow them."""
    if options.sharing is not Sharing.AUTO:
        return options
    reason = None
    if not options.api_version.supports_consumable_capacity:
        reason = f"--sharing auto: HAMi's cores and memory are consumable capacity, which needs {ApiVersion.V1.value}"
    elif profile is not None and not profile.gate(DRA_CONSUMABLE_CAPACITY):
        reason = f"--sharing auto: the cluster's {DRA_CONSUMABLE_CAPACITY} feature gate is off"
    if reason is None:
        notes.append(f"--sharing auto: shares of HAMi's GPUs ask for their cores and memory, which HAMi-core enforces; "
                     f"needs Kubernetes' {DRA_CONSUMABLE_CAPACITY} gate")
        return replace(options, sharing=Sharing.CONSUMABLE)
    notes.append(reason + "; fractional GPU requests get whole GPUs")
    return replace(options, sharing=Sharing.EXCLUSIVE, sharing_reason=reason)


def _keep_whole_gpus_whole(options: TranslateOptions, profile: ClusterProfile | None,
                           notes: list[str]) -> TranslateOptions:
    """On a shareable GPU, a claim without a capacity request consumes each capacity's
    ``requestPolicy.default``; NVIDIA's driver sets it to 0 in its ``unlimited`` and ``N`` modes
    (consumable_shares.go), so whole-GPU claims would stack on one GPU.  Asking for the device's
    full capacity keeps them whole: the allocator then consumes all of it.  Kubernetes API
    (DeviceCapacity.requestPolicy): "If request is also unset, default is the full capacity value"
    applies only when there is no policy."""
    if (profile is None or not options.api_version.supports_consumable_capacity
            or not profile.gate(DRA_CONSUMABLE_CAPACITY)):
        return options  # with the gate off no device is shared, and the API server drops capacity requests
    partial = [d for d in profile.shareable_devices(c.NVIDIA_DRIVER) if _default_takes_part(d)]
    if not partial:
        return options
    shapes = {_full_capacity(d) for d in partial}
    if len(shapes) > 1:
        notes.append(f"{len(partial)} shareable GPU(s) give a claim without a capacity request only part of the GPU "
                     "and differ in size: whole-GPU claims may share a GPU with other claims (no single "
                     "full-capacity request fits them all)")
        return options
    (shape,) = shapes
    text = ", ".join(f"{k} {v}" for k, v in shape)
    notes.append(f"whole-GPU claims ask for the full capacity ({text}): the shareable GPUs would otherwise give a "
                 "claim without a capacity request no share (the driver's unlimited/N consumable modes)")
    return replace(options, whole_gpu_capacity=tuple(shape))


def _default_takes_part(device: Device) -> bool:
    for name, policy in device.request_policies.items():
        total = device.capacity_value(name)
        default = policy.get("default")
        if total is None or default is None:
            continue
        from kubectl_gpu.dra.values import Quantity

        try:
            if Quantity.read(default).value < total.value:
                return True
        except ValueError:
            return True
    return False


def _full_capacity(device: Device) -> tuple[tuple[str, str], ...]:
    names = sorted(device.request_policies)
    return tuple((n.split("/", 1)[-1], str(device.capacity_value(n))) for n in names
                 if device.capacity_value(n) is not None)


# --- checking claims -----------------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _class_specs(profile: ClusterProfile) -> dict[str, DeviceClassSpec]:
    from kubectl_gpu.explain import parse_device_class

    specs = {}
    for obj in profile.device_classes:
        spec = parse_device_class(obj)
        specs[spec.name] = spec
    return specs


def explain_against(claim: ClaimObject, profile: ClusterProfile, namespace: str = "default") -> ClaimResult:
    # explain (the CEL compiler with it) only when a claim is checked against a profile: migrate
    # without one never loads it (tests/test_cli_startup.py).
    from kubectl_gpu.explain import explain_claim, parse_claim

    spec = parse_claim(claim.manifest(namespace))
    # A new claim compiles under the cluster's gates, as the API server compiles it; the
    # allocator judges it against the profile's slices (counter sets and pools included).
    return explain_claim(spec, profile.devices, _class_specs(profile), gates=profile.feature_gates,
                         judge=_judge(profile, tuple(a.device_class for r in spec.requests for a in r.alternatives)))


@functools.lru_cache(maxsize=8)
def _judge(profile: ClusterProfile, class_names: tuple[str, ...]) -> tuple[Allocator, Cluster]:
    """One allocator per profile (and the classes a claim names): its selector verdicts are kept."""
    from kubectl_gpu.explain.judge import Cluster, build_allocator

    cluster = Cluster(profile.slice_facts, profile.feature_gates)
    return build_allocator(cluster, _class_specs(profile), class_names, None, ()), cluster


def unsatisfiable(claims: Sequence[ClaimObject], profile: ClusterProfile) -> dict[str, str]:
    """Claim name -> why no device of the cluster can ever satisfy it (explain's verdict).  Nothing
    else is allocated in this view, so "taken" never counts: only what the devices can be."""
    problems: dict[str, str] = {}
    for claim in claims:
        result = explain_against(claim, profile)
        if not result.allocatable:
            problems[claim.name] = _reason(result)
    return problems


def _reason(result: ClaimResult) -> str:
    parts = [result.verdict]
    for request in result.requests:
        for alternative in request.alternatives:
            for selector in alternative.selectors:
                if selector.origin == "request" and selector.evaluated and not selector.matched:
                    parts.append(f"selector {selector.selector} ({selector.expression}) matches none of "
                                 f"{selector.evaluated} device(s)")
    return "; ".join(parts)


def checked_translator(profile: ClusterProfile, unsatisfiable_is: Severity = Severity.ERROR,
                       translate: Translator | None = None) -> Translator:
    """A translator that explains every claim it emits against ``profile``.  ERROR: the template
    is left unchanged (migrate's exit 3); WARNING: changed, and the note says it will not schedule."""
    if translate is None:
        from kubectl_gpu.core import translate_pod_template as translate

    def run(template: Mapping[str, Any], options: TranslateOptions) -> PodTranslation:
        translation = translate(template, options)
        if not translation.claims:
            return translation
        problems = unsatisfiable(translation.claims, profile)
        if not problems:
            return translation
        fix = ("; this pod template is left unchanged: ask for a GPU model, count or memory the cluster has"
               if unsatisfiable_is is Severity.ERROR else "; pods using it will stay Pending")
        notes = [Note(unsatisfiable_is, f"{claim.kind} {name}: no device in the cluster can satisfy it "
                                        f"({profile.source}): {reason}{fix}")
                 for name, reason in problems.items() for claim in translation.claims if claim.name == name]
        if unsatisfiable_is is Severity.ERROR:
            return replace(translation, patch=(), claims=(), notes=translation.notes + tuple(notes),
                           remaining=translation.legacy)
        return replace(translation, notes=translation.notes + tuple(notes))

    return run
