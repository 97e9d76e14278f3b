"""DRA claims a pod already uses, and the one rule about them: a container never asks for GPUs
both through a device plugin and through a claim that allocates GPUs.

On a node where the device plugin and the DRA driver both serve the GPUs, the scheduler counts
each GPU twice, so such a container can be given one GPU by each and another pod the same ones.
Rewriting the legacy request would not help either: the container would hold two GPU claims.
Claims that allocate no GPU (an IMEX channel of a ComputeDomain, RDMA NICs) are fine beside it.

Which claims allocate GPUs is read from what the caller can see: ResourceClaimTemplates and
ResourceClaims in the same input, the templates a ComputeDomain makes, or (the webhook) the API.
Pure: the caller gives the objects.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_gpu.dra import facts
from .constants import TPU
from .families import ContainerRef, LegacyRequest, is_plain_integer_gpu, iter_containers, read_container
from .model import IntegerGpuMode, TranslateOptions
from .notes import Note, Severity

TEMPLATE, CLAIM = "ResourceClaimTemplate", "ResourceClaim"


@dataclass(frozen=True)
class KnownClaim:
    """A ResourceClaimTemplate or ResourceClaim, by the DeviceClasses its requests name."""

    kind: str  # TEMPLATE | CLAIM
    name: str
    device_classes: frozenset[str]

    def allocates_gpus(self, options: TranslateOptions = TranslateOptions()) -> bool:
        return any(is_gpu_class(c, options) for c in self.device_classes)

    def describe(self) -> str:
        return f"{self.kind} {self.name}, class {', '.join(sorted(self.device_classes)) or 'none'}"


@dataclass(frozen=True)
class ClaimRef:
    """A container's claim, resolved through the pod's spec.resourceClaims entry."""

    entry: str  # the name in spec.resourceClaims (and in the container's resources.claims)
    kind: str  # TEMPLATE | CLAIM
    name: str  # the ResourceClaimTemplate or ResourceClaim it names


def claim_spec_device_classes(claim_spec: Any) -> frozenset[str]:
    """Every deviceClassName a ResourceClaim spec (v1, v1beta2 or v1beta1 shape) names, its
    firstAvailable alternatives included."""
    devices = claim_spec.get("devices") if isinstance(claim_spec, Mapping) else None
    requests = devices.get("requests") if isinstance(devices, Mapping) else None
    found: set[str] = set()
    for request in requests if isinstance(requests, list) else []:
        if not isinstance(request, Mapping):
            continue
        exactly = request.get("exactly")
        holders = [exactly if isinstance(exactly, Mapping) else request]
        alternatives = request.get("firstAvailable")
        holders += [s for s in alternatives if isinstance(s, Mapping)] if isinstance(alternatives, list) else []
        found.update(str(h["deviceClassName"]) for h in holders if isinstance(h.get("deviceClassName"), str))
    return frozenset(found)


def is_gpu_class(device_class: str, options: TranslateOptions = TranslateOptions()) -> bool:
    """The driver's own GPU classes, and those the input or the cluster showed to select its GPUs."""
    return facts.allocates_gpus(device_class) or device_class in options.gpu_device_classes


def claim_spec_requests_gpus(claim_spec: Any, options: TranslateOptions = TranslateOptions()) -> bool:
    """True when a ResourceClaim spec asks for a device of a class that allocates GPUs."""
    return any(is_gpu_class(c, options) for c in claim_spec_device_classes(claim_spec))


def known_claims(obj: Any) -> tuple[KnownClaim, ...]:
    """What one API object tells about claims: a ResourceClaimTemplate or ResourceClaim itself, or
    the channel template a ComputeDomain makes (an IMEX channel, no GPU).  Anything else: nothing."""
    if not isinstance(obj, Mapping):
        return ()
    kind, metadata, spec = obj.get("kind"), obj.get("metadata"), obj.get("spec")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    if not isinstance(name, str) or not isinstance(spec, Mapping):
        return ()
    if kind == TEMPLATE:
        return (KnownClaim(TEMPLATE, name, claim_spec_device_classes(spec.get("spec"))),)
    if kind == CLAIM:
        return (KnownClaim(CLAIM, name, claim_spec_device_classes(spec)),)
    if kind == facts.COMPUTE_DOMAIN_KIND:
        channel = spec.get("channel")
        template = channel.get("resourceClaimTemplate") if isinstance(channel, Mapping) else None
        channel_name = template.get("name") if isinstance(template, Mapping) else None
        if isinstance(channel_name, str) and channel_name:
            return (KnownClaim(TEMPLATE, channel_name, frozenset({facts.COMPUTE_DOMAIN_CHANNEL_CLASS})),)
    return ()


@dataclass(frozen=True)
class BesideLegacy:
    """A container that asks for a device-plugin GPU and uses DRA claims."""

    container: ContainerRef
    legacy: tuple[str, ...]  # the legacy resource names, sorted
    claims: tuple[ClaimRef, ...]


def claims_beside_legacy_gpus(template: Mapping[str, Any],
                              options: TranslateOptions = TranslateOptions()) -> tuple[BesideLegacy, ...]:
    """Containers asking for a GPU through a device plugin (non-zero, not a TPU, not a whole
    ``nvidia.com/gpu`` the scheduler serves from DRA under ``integer_gpus: extended-resource``)
    that also use claims of the pod."""
    spec = template.get("spec")
    if not isinstance(spec, Mapping):
        return ()
    entries = _pod_claim_entries(spec)
    if not entries:  # most pods: nothing to read (the webhook asks this of every rewritten pod)
        return ()
    found = []
    for ref, container in iter_containers(spec):
        legacy = sorted({r.name for r in read_container(ref, container)[0] if _served_by_device_plugin(r, options)})
        if not legacy:
            continue
        resources = container.get("resources")
        used = resources.get("claims") if isinstance(resources, Mapping) else None
        names = [u.get("name") for u in used if isinstance(u, Mapping)] if isinstance(used, list) else []
        claims = tuple(entries[n] for n in dict.fromkeys(names) if isinstance(n, str) and n in entries)
        if claims:
            found.append(BesideLegacy(ref, tuple(legacy), claims))
    return tuple(found)


def gpus_asked_twice(template: Mapping[str, Any], known: Iterable[KnownClaim],
                     options: TranslateOptions = TranslateOptions()) -> tuple[Note, ...]:
    """One ERROR note per container asking for GPUs by a legacy resource and by a claim ``known``
    to allocate GPUs.  Claims not in ``known`` are not counted (see :func:`unseen_claims`)."""
    by_ref = {(k.kind, k.name): k for k in known}
    notes = []
    for beside in claims_beside_legacy_gpus(template, options):
        gpu = [(c, by_ref[(c.kind, c.name)]) for c in beside.claims
               if (c.kind, c.name) in by_ref and by_ref[(c.kind, c.name)].allocates_gpus(options)]
        if not gpu:
            continue
        claims = ", ".join(f"{c.entry!r} ({k.describe()})" for c, k in gpu)
        notes.append(Note(Severity.ERROR,
                          f"asks for GPUs twice, by {', '.join(beside.legacy)} and by ResourceClaim {claims}: the "
                          "device plugin and the DRA driver can hand out the same GPU; keep only the claim",
                          beside.container.name))
    return tuple(notes)


def unseen_claims(template: Mapping[str, Any], known: Collection[KnownClaim],
                  options: TranslateOptions = TranslateOptions()) -> tuple[tuple[ContainerRef, ClaimRef], ...]:
    """Claims beside a device-plugin GPU that are not in ``known``: nobody can tell yet whether
    they allocate GPUs."""
    seen = {(k.kind, k.name) for k in known}
    return tuple((b.container, c) for b in claims_beside_legacy_gpus(template, options) for c in b.claims
                 if (c.kind, c.name) not in seen)


def unseen_claim_notes(template: Mapping[str, Any], known: Collection[KnownClaim],
                       options: TranslateOptions = TranslateOptions()) -> tuple[Note, ...]:
    by_container: dict[str, list[ClaimRef]] = {}
    for ref, claim in unseen_claims(template, known, options):
        by_container.setdefault(ref.name, []).append(claim)
    return tuple(Note(Severity.WARNING,
                      "also uses " + ", ".join(f"claim {c.entry!r} ({c.kind} {c.name})" for c in claims)
                      + ", which is not in the input, so it was not checked: if it allocates GPUs, this container "
                      "asks for GPUs twice (keep only the claim); migrate it together with that object",
                      container)
                 for container, claims in by_container.items())


def _served_by_device_plugin(request: LegacyRequest, options: TranslateOptions) -> bool:
    if request.family == TPU or request.amount <= 0:
        return False
    # KEP-5004: the scheduler serves these from DRA devices, no device plugin involved.
    if request.name in options.dra_extended_resources:
        return False
    return not (options.integer_gpus is IntegerGpuMode.EXTENDED_RESOURCE and is_plain_integer_gpu(request))


def _pod_claim_entries(spec: Mapping[str, Any]) -> dict[str, ClaimRef]:
    entries = spec.get("resourceClaims")
    found: dict[str, ClaimRef] = {}
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            continue
        template, claim = entry.get("resourceClaimTemplateName"), entry.get("resourceClaimName")
        if isinstance(template, str) and template:
            found[entry["name"]] = ClaimRef(entry["name"], TEMPLATE, template)
        elif isinstance(claim, str) and claim:
            found[entry["name"]] = ClaimRef(entry["name"], CLAIM, claim)
    return found
