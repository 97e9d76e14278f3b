"""A container's demand -> the DRA claim object that satisfies it, honestly described.

Sharing is where migrations go wrong: TimeSlicing/MPS only share a GPU among pods that
reference ONE ResourceClaim, and a per-pod template gives each pod a whole GPU unless the
driver offers consumable capacity (KEP-5075). So every shared demand states what the pod
will really get, and falls back to whole GPUs (with a warning) when sharing can't be had.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from . import constants as c
from kubectl_gpu.dra.facts import CAP, attr, guarded_attr, literal
from kubectl_gpu.dra.driver_config import MPS, TIME_SLICING, gpu_sharing_config
from . import hami_target
from .demand import Demand
from .model import ApiVersion, ClaimObject, Sharing, TranslateOptions
from .notes import Note, Severity
from .node_constraints import MEMORY_TOLERANCE_PERCENT
from kubectl_gpu.dra.quantity import QuantityError, format_bytes, parse_quantity

_NAME_PREFIX = "kgpu-"
_MAX_NAME = 63


@dataclass(frozen=True)
class PlannedClaim:
    obj: ClaimObject
    shared: bool  # a ResourceClaim shared by every pod of the workload (not a per-pod template)
    request: str  # the request name inside the claim
    summary: str  # what the pod really gets, in words


def plan_claim(demand: Demand, selectors: list[str], options: TranslateOptions,
               container: str) -> tuple[PlannedClaim, list[Note]]:
    notes: list[Note] = []
    if demand.kind == "tpu":
        request = _request("tpu", options.tpu_device_class, demand.count, [], None)
        summary = f"{demand.count} TPU chip(s)"
        return _finish(demand, options, request, None, summary, f"tpu-{demand.count}", False), notes
    if demand.kind == "mig":
        if hami_target.is_hami(options):
            notes.append(Note(Severity.WARNING, f"{demand.legacy_text}: HAMi's DRA driver publishes each GPU whole and "
                                                "no MIG devices, so this stays a MIG claim for NVIDIA's driver",
                              container))
        profile_sel = guarded_attr("profile", f'{attr("profile")} == {literal(demand.profile or "")}')
        request = _request("mig", options.mig_device_class, demand.count, [profile_sel, *selectors], None)
        summary = f"{demand.count} MIG device(s) of profile {demand.profile}"
        return _finish(demand, options, request, None, summary,
                       f"mig-{demand.profile}-{demand.count}", False), notes

    if hami_target.is_hami(options):
        return _hami_gpu(demand, selectors, options, container)
    whole = f"{demand.count} whole GPU(s)"
    share = demand.share
    if share is None:
        request = _whole_gpu_request(demand.count, selectors, options)
        return _finish(demand, options, request, None, whole, f"gpu-{demand.count}", False), notes

    asked = share.describe()
    strategy = options.sharing
    if (options.slot_shares and share.memory is None and share.fraction is None
            and options.api_version.supports_consumable_capacity):
        # A slot as the driver's ConsumableShares hands them out: one of the GPU's integer shares per slot.
        request = _request("gpu", options.gpu_device_class, 1, selectors, None,
                           capacity=((CAP.shares, str(demand.count)),))
        summary = (f"{demand.count} of the {CAP.shares} of one GPU (the NVIDIA DRA driver's consumable shares: "
                   "a per-pod claim; no memory isolation, as with time-slicing)")
        notes.append(Note(Severity.INFO, f"{demand.legacy_text} -> {summary}", container))
        return _finish(demand, options, request, None, summary, f"gpu-{demand.count}-shares", False), notes

    def exclusive(reason: str) -> tuple[PlannedClaim, list[Note]]:
        notes.append(Note(Severity.WARNING, f"{demand.legacy_text}: {reason}; gets {whole} instead of "
                                            f"{asked}", container))
        request = _whole_gpu_request(demand.count, selectors, options)
        return _finish(demand, options, request, None, whole, f"gpu-{demand.count}", False), notes

    if options.prioritized_list and strategy in (Sharing.CONSUMABLE, Sharing.EXCLUSIVE, Sharing.AUTO):
        prioritized = _prioritized(demand, selectors, options, strategy, asked, whole, container)
        if prioritized is not None:
            return prioritized
        if options.mig_profiles and _share_memory(share, options) is None and share.fraction is not None:
            # GPUs in MIG mode are not published themselves, so the profile cannot say what a fraction is.
            notes.append(Note(Severity.WARNING, f"{demand.legacy_text}: pass --gpu-memory (one GPU's memory, "
                                                "e.g. 80Gi) so this fraction can be matched to a published MIG "
                                                "profile", container))

    if strategy is Sharing.EXCLUSIVE:
        return exclusive(options.sharing_reason or "sharing strategy 'exclusive'")
    if strategy is Sharing.AUTO:  # not resolved against a cluster: nothing says a GPU can be shared
        return exclusive(options.sharing_reason or "--sharing auto without a cluster profile gives whole GPUs")

    if strategy is Sharing.CONSUMABLE:
        if not options.api_version.supports_consumable_capacity:
            return exclusive(f"consumable capacity needs {ApiVersion.V1.value} (Kubernetes 1.34+)")
        memory = share.memory
        if memory is None and share.fraction is None:
            return exclusive("the request states no size (a time-sliced replica), so there is no memory to "
                             "request; --sharing timeslicing shares one claim across the workload instead")
        if memory is None:
            gpu_memory = _gpu_memory(options)
            if gpu_memory is None or share.fraction is None:
                return exclusive("the GPU's memory is unknown, so the share can't become a memory request "
                                 "(pass --gpu-memory, e.g. 80Gi)")
            memory = int(gpu_memory * share.fraction)
        request = _request("gpu", options.gpu_device_class, demand.count, selectors, format_bytes(memory))
        summary = (f"{demand.count} GPU share(s) of {format_bytes(memory)} memory (consumable capacity, "
                   "KEP-5075); shared only on devices that allow multiple allocations, else a whole GPU")
        notes.append(Note(Severity.WARNING, f"{demand.legacy_text} -> {summary}", container))
        if share.compute_percent is not None and share.compute_percent < 100:
            notes.append(Note(Severity.WARNING, f"compute limit {share.compute_percent}% is not enforced by "
                                                "consumable capacity (use --sharing mps for a thread limit)",
                              container))
        return _finish(demand, options, request, None, summary,
                       f"gpu-{demand.count}-{format_bytes(memory).lower()}", False), notes

    # TimeSlicing / MPS: a driver config, which shares only among pods of ONE claim.
    config = _sharing_config(strategy, share)
    kind_word = "time-slicing" if strategy is Sharing.TIMESLICING else "MPS"
    request = _request("gpu", options.gpu_device_class, demand.count, selectors, None)
    if options.sharing_group is None:
        notes.append(Note(Severity.WARNING,
                          f"{demand.legacy_text}: a pod without a workload has no other pods to share one claim "
                          f"with, so it gets {whole} ({kind_word} applies among its own containers only)",
                          container))
        return _finish(demand, options, request, config, whole + f" with {kind_word} config",
                       f"gpu-{demand.count}-{strategy.value}", False), notes
    summary = (f"every pod of {options.sharing_group} shares ONE ResourceClaim of {demand.count} GPU(s) "
               f"by {kind_word}: no memory isolation, all such pods run on the node holding it")
    notes.append(Note(Severity.WARNING, f"{demand.legacy_text} -> {summary}", container))
    slug = f"{_slug(options.sharing_group)}-{strategy.value}"
    return _finish(demand, options, request, config, summary, slug, True), notes


def _hami_gpu(demand: Demand, selectors: list[str], options: TranslateOptions,
              container: str) -> tuple[PlannedClaim, list[Note]]:
    """A GPU demand on HAMi's driver: whole GPUs ask for no capacity (the request policy's default
    is the whole device); a share asks for its cores and memory, which HAMi-core enforces."""
    notes: list[Note] = []
    whole = f"{demand.count} whole GPU(s) on HAMi's driver"

    def whole_gpus(reason: str | None) -> tuple[PlannedClaim, list[Note]]:
        if reason is not None:
            notes.append(Note(Severity.WARNING, f"{demand.legacy_text}: {reason}; gets {whole} instead of "
                                                f"{demand.share.describe() if demand.share else 'a share'}", container))
        request = _request("gpu", options.gpu_device_class, demand.count, selectors, None)
        return _finish(demand, options, request, None, whole, f"hami-gpu-{demand.count}", False), notes

    share = demand.share
    if share is None:
        return whole_gpus(None)
    if options.sharing is Sharing.EXCLUSIVE:
        return whole_gpus(options.sharing_reason or "sharing strategy 'exclusive'")
    if not options.api_version.supports_consumable_capacity:
        return whole_gpus(f"HAMi's cores and memory are consumable capacity, which needs {ApiVersion.V1.value} "
                          "(Kubernetes 1.34+)")
    if options.sharing in (Sharing.TIMESLICING, Sharing.MPS):
        notes.append(Note(Severity.WARNING, f"{demand.legacy_text}: HAMi's driver has no time-slicing or MPS "
                                            "(its HAMiCoreSupport gate excludes them): the share asks for HAMi's cores "
                                            "and memory instead", container))
    capacity, capacity_notes = hami_target.share_capacity(share, options, demand.legacy_text, container)
    if capacity is None:
        return whole_gpus("the request states no size (a time-sliced replica), so there are no cores or memory to "
                          "ask for")
    notes.extend(capacity_notes)
    request = _request("gpu", options.gpu_device_class, demand.count, selectors, None, capacity)
    asked = ", ".join(f"{name} {value}" for name, value in capacity)
    enforced = hami_target.enforcement_text(capacity)
    summary = f"{demand.count} share(s) of a GPU on HAMi's driver ({asked})"
    notes.append(Note(Severity.INFO, f"{demand.legacy_text}: {enforced}; {hami_target.ON_NVIDIA}", container))
    slug = "hami-" + "-".join([str(demand.count), *(f"{n}{v}" for n, v in capacity)]).lower()
    return _finish(demand, options, request, None, summary, slug, False), notes


def _share_memory(share: Any, options: TranslateOptions) -> int | None:
    """Bytes per device the share stands for: its own figure, else its fraction of --gpu-memory."""
    if share.memory is not None:
        return int(share.memory)
    gpu_memory = _gpu_memory(options)
    if gpu_memory is None or share.fraction is None:
        return None
    return int(gpu_memory * share.fraction)


def _prioritized(demand: Demand, selectors: list[str], options: TranslateOptions, strategy: Sharing, asked: str,
                 whole: str, container: str) -> tuple[PlannedClaim, list[Note]] | None:
    """DRA's own fallback list (firstAvailable, KEP-4816): the smallest MIG profile that holds the
    memory, else a consumable share of a GPU, else a whole GPU.  The scheduler takes the first
    sub-request it can allocate, in this order.  None when no MIG profile holds the memory."""
    memory = _share_memory(demand.share, options)
    alternatives: list[tuple[dict[str, Any], str]] = []
    if memory is not None:
        # A fraction is sized from a nominal GPU memory (80Gi), and NVIDIA's "half" profile publishes a
        # little less (3g.40gb: 40192Mi): it fits within the window used for GPU sizes.  A figure the
        # request stated itself must be held whole.
        least = memory if demand.share.memory is not None else memory * (100 - MEMORY_TOLERANCE_PERCENT) // 100
        fitting = sorted((size, name) for name, size in options.mig_profiles if size >= least)
        if fitting:
            size, profile = fitting[0]
            profile_sel = (f'("profile" in device.attributes["{c.NVIDIA_ATTRIBUTE_DOMAIN}"] && '
                           f'device.attributes["{c.NVIDIA_ATTRIBUTE_DOMAIN}"].profile == {json.dumps(profile)})')
            alternatives.append((_request("mig", options.mig_device_class, demand.count, [profile_sel, *selectors],
                                          None), f"MIG {profile} ({format_bytes(size)})"))
        if strategy is Sharing.CONSUMABLE and options.api_version.supports_consumable_capacity:
            alternatives.append((_request("share", options.gpu_device_class, demand.count, selectors,
                                          format_bytes(memory)), f"a {format_bytes(memory)} share of a GPU"))
    if not alternatives or alternatives[0][0]["name"] != "mig":
        # Without a MIG profile there is no real choice: a share request is served whole by a GPU
        # that cannot be shared, so a single request says the same.
        return None
    whole_request = _whole_gpu_request(demand.count, selectors, options)
    alternatives.append(({**whole_request, "name": "whole"}, "a whole GPU"))
    sub_requests = [{"name": r["name"], **r["exactly"]} for r, _ in alternatives]
    request = {"name": "gpu", "firstAvailable": sub_requests}
    order = ", else ".join(text for _, text in alternatives)
    summary = f"{demand.count} x first available of: {order} (DRA prioritized list, tried in this order)"
    notes = [Note(Severity.WARNING, f"{demand.legacy_text} ({asked}) -> {summary}", container)]
    slug = f"gpu-{demand.count}-first-" + "-".join(str(r["name"]) for r, _ in alternatives)
    return _finish(demand, options, request, None, summary, slug, False), notes


def _gpu_memory(options: TranslateOptions) -> Fraction | None:
    if not options.gpu_memory:
        return None
    try:
        return parse_quantity(options.gpu_memory)
    except QuantityError:
        return None


def _sharing_config(strategy: Sharing, share: Any) -> dict[str, Any]:
    if strategy is Sharing.TIMESLICING:
        return gpu_sharing_config(TIME_SLICING)
    percent = share.compute_percent
    if percent is None and share.fraction is not None:
        percent = max(1, min(100, round(share.fraction * 100)))
    limit = format_bytes(share.memory) if share.memory is not None else None
    return gpu_sharing_config(MPS, thread_percentage=percent, pinned_memory_limit=limit)


def _request(name: str, device_class: str, count: int, selectors: list[str],
             memory: str | None, capacity: tuple[tuple[str, str], ...] = ()) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    if memory is not None:
        exactly["capacity"] = {"requests": {"memory": memory}}
    elif capacity:
        exactly["capacity"] = {"requests": dict(capacity)}
    return {"name": name, "exactly": exactly}


def _whole_gpu_request(count: int, selectors: list[str], options: TranslateOptions) -> dict[str, Any]:
    # On GPUs shared by consumable capacity, a whole GPU is one that asks for all of its capacity
    # (options.whole_gpu_capacity, chosen from the cluster); capacity.requests exists from v1 on.
    capacity = options.whole_gpu_capacity if options.api_version.supports_consumable_capacity else ()
    return _request("gpu", options.gpu_device_class, count, selectors, None, capacity)


def render_request(request: dict[str, Any], api_version: ApiVersion) -> dict[str, Any]:
    """v1/v1beta2 nest the device request under `exactly`; v1beta1 puts its fields on the request."""
    if "firstAvailable" in request:
        return request  # the same shape in every version that has it
    if api_version is ApiVersion.V1BETA1:
        return {"name": request["name"], **request["exactly"]}
    return request


def _finish(demand: Demand, options: TranslateOptions, request: dict[str, Any], config: dict[str, Any] | None,
            summary: str, slug: str, shared: bool) -> PlannedClaim:
    devices: dict[str, Any] = {"requests": [render_request(request, options.api_version)]}
    if config is not None:
        devices["config"] = [{"requests": [request["name"]],
                              "opaque": {"driver": c.NVIDIA_DRIVER, "parameters": config}}]
    spec = {"devices": devices}
    kind = "ResourceClaim" if shared else "ResourceClaimTemplate"
    identity = json.dumps([kind, options.api_version.value, options.sharing_group if shared else None, spec],
                          sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(identity.encode()).hexdigest()[:10]
    obj = ClaimObject(
        kind=kind,
        name=_name(slug, digest),
        api_version=options.api_version,
        claim_spec=spec,
        labels={c.MANAGED_BY_LABEL: c.MANAGED_BY_VALUE},
        annotations={c.SUMMARY_ANNOTATION: summary},
    )
    return PlannedClaim(obj, shared, request["name"], summary)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.")


def _name(slug: str, digest: str) -> str:
    room = _MAX_NAME - len(_NAME_PREFIX) - len(digest) - 1
    body = _slug(slug)[:room].strip("-.")
    return f"{_NAME_PREFIX}{body}-{digest}" if body else f"{_NAME_PREFIX}{digest}"

