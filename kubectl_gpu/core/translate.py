"""translate_pod_template: legacy GPU requests in one pod template -> JSON patch + DRA objects.

Pure: reads the mapping it is given, never changes it, and gives the same answer for the
same input. The patch it returns, applied, yields a template it would leave alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from kubectl_gpu.dra.gates import EXTENDED_RESOURCE, default_history

from . import constants as c
from .claims import PlannedClaim, plan_claim
from .existing_claims import gpus_asked_twice, unseen_claim_notes
from .demand import ContainerDemands, Demand, container_demands, pod_level_demands
from .families import ContainerRef, LegacyRequest, is_plain_integer_gpu, iter_containers, read_container
from .hami_target import for_target, is_hami, retarget_selector
from .hints import annotation_only_notes, hami_selectors
from .model import IntegerGpuMode, PodTranslation, TranslateOptions
from .notes import Note, Severity
from .node_constraints import NodeConstraints, translate_node_constraints
from .json_patch import escape
from .schedulers import fit_to_scheduler
from .selfcheck import selector_errors

_DNS_LABEL = re.compile(r"[^a-z0-9-]+")


def translate_pod_template(template: Mapping[str, Any],
                           options: TranslateOptions = TranslateOptions()) -> PodTranslation:
    metadata = template.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    spec = template.get("spec")
    if not isinstance(spec, Mapping):
        return PodTranslation((), (), ())
    annotations = metadata.get("annotations")
    annotations = annotations if isinstance(annotations, Mapping) else {}
    # A scheduler that accounts DRA devices itself gets only the claim shapes it can (schedulers.py).
    options, scheduler_notes = fit_to_scheduler(spec, options)
    options = for_target(options)

    notes: list[Note] = []
    containers: list[tuple[ContainerDemands, Mapping[str, Any]]] = []
    legacy: list[LegacyRequest] = []
    for ref, container in iter_containers(spec):
        requests, read_notes = read_container(ref, container)
        notes.extend(read_notes)
        if requests:
            legacy.extend(requests)
            containers.append((container_demands(ref, requests, annotations, options), container))
    if not containers:
        notes.extend(annotation_only_notes(annotations))
        return PodTranslation((), (), tuple(notes))
    notes.extend(scheduler_notes)
    unchanged = PodTranslation((), (), (), tuple(legacy), tuple(legacy))
    for demands, _ in containers:
        notes.extend(demands.notes)
    if options.known_claims is not None and spec.get("resourceClaims"):
        twice = gpus_asked_twice(template, options.known_claims, options)
        if twice:
            return replace(unchanged, notes=tuple([*notes, *twice]))
        notes.extend(unseen_claim_notes(template, options.known_claims, options))
    if any(n.severity is Severity.ERROR for n in notes):
        return replace(unchanged, notes=tuple(notes))
    pooled, pooled_notes = pod_level_demands([cd for cd, _ in containers], annotations, options)
    notes.extend(pooled_notes)
    if any(n.severity is Severity.ERROR for n in pooled_notes):
        return replace(unchanged, notes=tuple(notes))
    containers = [(cd, container) for cd, (_, container) in zip(pooled, containers)]

    gpu_demands = [d for cd, _ in containers for d in cd.demands if d.kind in ("gpu", "mig")]
    constraints = translate_node_constraints(spec) if gpu_demands else NodeConstraints()
    extra_selectors, hint_notes = hami_selectors(annotations, hami_dra=is_hami(options)) if gpu_demands else ([], [])
    if any(n.severity is Severity.ERROR for n in hint_notes):
        return replace(unchanged, notes=tuple([*notes, *hint_notes]))
    selectors = [*constraints.selectors, *extra_selectors]
    # MIG claims stay NVIDIA's on HAMi's target (HAMi publishes no MIG devices): they keep its selectors.
    mig_selectors = selectors
    if is_hami(options):
        mig_selectors = [*constraints.selectors, *hami_selectors(annotations)[0]]
        selectors = [*map(retarget_selector, constraints.selectors), *extra_selectors]

    leave_integer = options.integer_gpus is IntegerGpuMode.EXTENDED_RESOURCE
    if leave_integer and (selectors or constraints.mig_profile):
        notes.append(Note(Severity.INFO, "integer GPUs rewritten although extended-resource mode is on: the "
                                         "GPU model choice needs a device selector (KEP-5004 has none)"))
        leave_integer = False

    leave_mig = bool(options.dra_extended_resources)
    if leave_mig and selectors and any(d.kind == "mig" and _served_mig(d, options) for d in gpu_demands):
        notes.append(Note(Severity.INFO, "MIG requests rewritten although a DeviceClass serves them from DRA: the "
                                         "node constraints need a device selector (KEP-5004 has none)"))
        leave_mig = False

    plan = _Plan(template, spec, metadata, annotations, options)
    # Containers that hold devices while the pod runs claim first, so that init containers,
    # which run before them one at a time, can reuse those devices instead of adding more.
    for demands, container in sorted(containers, key=lambda dc: dc[0].container.sequential_init):
        kept: list[Demand] = []
        for demand in demands.demands:
            if leave_integer and _plain_integer_gpu(demand):
                notes.append(Note(Severity.INFO, f"{demand.legacy_text} left for the scheduler's extended-resource"
                                                 " mapping (KEP-5004 DeviceClass extendedResourceName)",
                                  demands.container.name))
                continue
            if leave_mig and demand.kind == "mig" and _served_mig(demand, options):
                notes.append(_left_for_dra_note(demand, demands.container.name))
                continue
            if constraints.mig_profile and demand.kind == "gpu" and demand.share is None:
                demand = replace(demand, kind="mig", profile=constraints.mig_profile)
            kept.append(demand)
        plan.container(demands.container, container, kept, demands.zero_requests,
                       selectors if kept else [], mig_selectors if kept else [], notes)
    if not plan.ops:
        return replace(unchanged, notes=tuple(notes))
    notes.extend(constraints.notes)
    notes.extend(hint_notes)
    plan.ops.extend(constraints.patch)
    plan.original.update(constraints.original)
    plan.annotate()
    broken = selector_errors(plan.claims.values())
    if broken:
        return replace(unchanged, notes=tuple([*notes, *broken]))
    remaining = tuple(r for r in legacy if r not in plan.replaced)
    return PodTranslation(tuple(plan.ops), tuple(plan.claims.values()), tuple(notes), tuple(legacy), remaining)


def _left_for_dra_note(demand: Demand, container: str) -> Note:
    return Note(Severity.INFO, f"{demand.legacy_text} left as it is: a DeviceClass with extendedResourceName "
                               f"{demand.requests[0].name} serves it from DRA devices (KEP-5004); the API server and "
                               f"scheduler need the {EXTENDED_RESOURCE} gate ({default_history(EXTENDED_RESOURCE)}), "
                               "and no device plugin may advertise the same name on those nodes", container)


def _served_mig(demand: Demand, options: TranslateOptions) -> bool:
    return all(r.name in options.dra_extended_resources for r in demand.requests)


def _plain_integer_gpu(demand: Demand) -> bool:
    return demand.kind == "gpu" and demand.share is None and all(map(is_plain_integer_gpu, demand.requests))


@dataclass
class _PodClaim:
    name: str  # the entry in spec.resourceClaims
    planned: PlannedClaim


class _Plan:
    """Accumulates the patch for one pod template."""

    def __init__(self, template: Mapping[str, Any], spec: Mapping[str, Any], metadata: Mapping[str, Any],
                 annotations: Mapping[str, Any], options: TranslateOptions) -> None:
        self.template, self.spec, self.metadata, self.annotations = template, spec, metadata, annotations
        self.options = options
        self.ops: list[dict[str, Any]] = []
        self.claims: dict[str, Any] = {}  # name -> ClaimObject, in order of first use
        self.pod_claims: list[_PodClaim] = []
        existing = spec.get("resourceClaims")
        self.existing_claims = existing if isinstance(existing, list) else None
        self.taken_names = {str(e.get("name")) for e in existing or [] if isinstance(e, Mapping)}
        self.original: dict[str, Any] = {}
        self.replaced: list[LegacyRequest] = []  # removed from the template by this patch

    def container(self, ref: ContainerRef, container: Mapping[str, Any], demands: list[Demand],
                  zero: tuple[LegacyRequest, ...], selectors: list[str], mig_selectors: list[str],
                  notes: list[Note]) -> None:
        replaced = [r for d in demands for r in d.requests] + list(zero)
        if not replaced:
            return
        self.replaced.extend(replaced)
        self._remove_requests(ref, container, replaced)
        references: list[str] = []
        for demand in demands:
            planned, claim_notes = plan_claim(demand, {"tpu": [], "mig": mig_selectors}.get(demand.kind, selectors),
                                              self.options, ref.name)
            notes.extend(claim_notes)
            pod_claim = self._pod_claim_for(ref, planned, demand)
            references.append(pod_claim.name)
            if not any(n.severity is Severity.WARNING and n.container == ref.name for n in claim_notes):
                notes.append(Note(Severity.INFO, f"{demand.legacy_text} -> {planned.summary} "
                                                 f"({planned.obj.kind} {planned.obj.name})", ref.name))
        self._add_claim_refs(ref, container, references)

    def _remove_requests(self, ref: ContainerRef, container: Mapping[str, Any],
                         replaced: list[LegacyRequest]) -> None:
        resources = container.get("resources") or {}
        record: dict[str, dict[str, str]] = {}
        for section in ("limits", "requests"):
            values = resources.get(section)
            if not isinstance(values, Mapping):
                continue
            keys = [r.resource for r in replaced if r.resource in values]
            if not keys:
                continue
            record[section] = {str(k).strip(): str(values[k]) for k in keys}
            if len(keys) == len(values):
                self.ops.append({"op": "remove", "path": f"{ref.path}/resources/{section}"})
            else:
                self.ops.extend({"op": "remove", "path": f"{ref.path}/resources/{section}/{escape(str(k))}"}
                                for k in keys)
        self.original.setdefault(ref.field, {})[ref.name] = record

    def _pod_claim_for(self, ref: ContainerRef, planned: PlannedClaim, demand: Demand) -> _PodClaim:
        self.claims.setdefault(planned.obj.name, planned.obj)
        for pod_claim in self.pod_claims:
            if pod_claim.planned.obj.name != planned.obj.name:
                continue
            # One shared claim serves the whole workload anyway; an init container that runs
            # before the others can reuse a device no other init container holds at that time.
            if planned.shared or ref.sequential_init or demand.pod_level:
                return pod_claim
        name = self._unique_name(f"{ref.name}-{planned.request}"
                                 + (f"-{demand.profile}" if demand.profile else ""))
        pod_claim = _PodClaim(name, planned)
        self.pod_claims.append(pod_claim)
        entry: dict[str, Any] = {"name": name}
        entry["resourceClaimName" if planned.shared else "resourceClaimTemplateName"] = planned.obj.name
        if self.existing_claims is None:
            self.ops.append({"op": "add", "path": "/spec/resourceClaims", "value": [entry]})
            self.existing_claims = []
        else:
            self.ops.append({"op": "add", "path": "/spec/resourceClaims/-", "value": entry})
        return pod_claim

    def _unique_name(self, wanted: str) -> str:
        base = _DNS_LABEL.sub("-", wanted.lower()).strip("-")[:55].strip("-") or "gpu"
        name, n = base, 2
        while name in self.taken_names:
            name, n = f"{base}-{n}", n + 1
        self.taken_names.add(name)
        return name

    def _add_claim_refs(self, ref: ContainerRef, container: Mapping[str, Any], names: list[str]) -> None:
        unique = list(dict.fromkeys(names))
        entries = [{"name": n} for n in unique]
        resources = container.get("resources")
        if not isinstance(resources, Mapping):
            self.ops.append({"op": "add", "path": f"{ref.path}/resources", "value": {"claims": entries}})
            return
        claims = resources.get("claims")
        if not isinstance(claims, list):
            self.ops.append({"op": "add", "path": f"{ref.path}/resources/claims", "value": entries})
            return
        self.ops.extend({"op": "add", "path": f"{ref.path}/resources/claims/-", "value": e} for e in entries)

    def annotate(self) -> None:
        key = c.ORIGINAL_RESOURCES_ANNOTATION
        record = dict(self.original)
        previous = self.annotations.get(key)
        if isinstance(previous, str):
            try:
                old = json.loads(previous)
                if isinstance(old, dict):
                    record = {**old, **record}
            except ValueError:
                pass
        value = json.dumps(record, sort_keys=True, separators=(",", ":"))
        if "metadata" not in self.template or not isinstance(self.template.get("metadata"), Mapping):
            self.ops.append({"op": "add", "path": "/metadata", "value": {"annotations": {key: value}}})
        elif not isinstance(self.metadata.get("annotations"), Mapping):
            self.ops.append({"op": "add", "path": "/metadata/annotations", "value": {key: value}})
        else:
            self.ops.append({"op": "add", "path": f"/metadata/annotations/{escape(key)}", "value": value})
            for limit_key in ("nvidia.com/vcuda-core-limit", "tencent.com/vcuda-core-limit"):
                raw = self.annotations.get(limit_key)
                if raw is not None and not isinstance(raw, str):
                    # Annotation values must be strings; the API server rejects a bare number.
                    self.ops.append({"op": "replace", "path": f"/metadata/annotations/{escape(limit_key)}",
                                     "value": str(raw)})
