"""Claims and templates that cannot be allocated as written: a DeviceClass that does not exist, a
CEL selector naming an attribute no device publishes, or requests no node's devices satisfy
together even with every device free.  Whether a claim can be allocated is Kubernetes'
structured allocator's answer (kubectl_gpu/allocator, through explain's engine, whose selector
counts say where a CEL runtime error happens).

In Kubernetes a missing attribute is a runtime error, not a non-match: the scheduler aborts
allocation for the pod.  The NVIDIA driver removed `index` and `minor` in v25.8.0 and its own
`pcieBusID` in v25.12.0, so selectors written for older drivers break this way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from kubectl_gpu.core.constants import NVIDIA_DRIVER
from kubectl_gpu.dra.facts import NEWEST_DRA_API_VERSION
from kubectl_gpu.dra.facts import removed_attribute_advice
from kubectl_gpu.inspect.claims_model import Request, claim_requests, read_claim
from kubectl_gpu.inspect.devices import SliceDevice
from kubectl_gpu.inspect.doctor.inputs import DoctorInputs
from kubectl_gpu.inspect.doctor.report import CheckResult
from kubectl_gpu.inspect.findings import Finding, Severity

NAME = "selectors"
TITLE = "claims and templates name existing DeviceClasses and published attributes"

_Q = r"""(?P<q{n}>["'])(?P<{name}>[^"']+)(?P=q{n})"""
# device.attributes["dom"].name  |  device.attributes["dom"]["name"]  (same for capacity)
_REFERENCE = re.compile(
    r"device\s*\.\s*(?P<map>attributes|capacity)\s*\[\s*" + _Q.format(n=1, name="domain") +
    r"\s*\]\s*(?:\.\s*(?P<field>[A-Za-z_][A-Za-z0-9_]*)|\[\s*" + _Q.format(n=2, name="key") + r"\s*\])")


@dataclass(frozen=True)
class AttributeReference:
    kind: str  # attributes | capacity
    domain: str
    name: str

    @property
    def qualified(self) -> str:
        return f"{self.domain}/{self.name}"


def attribute_references(expression: str) -> list[AttributeReference]:
    """Attributes and capacities a selector reads unguarded (not behind `in` or has())."""
    found = []
    for match in _REFERENCE.finditer(expression):
        name = match.group("field") or match.group("key")
        ref = AttributeReference(match.group("map"), match.group("domain"), name)
        if not _guarded(expression, ref) and ref not in found:
            found.append(ref)
    return found


def _guarded(expression: str, ref: AttributeReference) -> bool:
    domain, name, kind = re.escape(ref.domain), re.escape(ref.name), ref.kind
    membership = rf"""["']{name}["']\s+in\s+device\s*\.\s*{kind}\s*\[\s*["']{domain}["']\s*\]"""
    has = rf"""has\(\s*device\s*\.\s*{kind}\s*\[\s*["']{domain}["']\s*\]\s*\.\s*{name}\s*\)"""
    return bool(re.search(membership, expression) or re.search(has, expression))


def check_selectors(inputs: DoctorInputs, devices: Iterable[SliceDevice]) -> CheckResult:
    devices = list(devices)
    published = _published_by_driver(devices)
    classes = {str((c.get("metadata") or {}).get("name")): c for c in inputs.device_classes}
    subjects = list(_claim_specs(inputs))
    judged = _judge(inputs, [obj for _, obj, _ in subjects], classes)
    findings: list[Finding] = []
    for (subject, _, requests), result in zip(subjects, judged.claims):
        for request in requests:
            for alternative in request.alternatives or (request,):
                findings.extend(_class_missing(subject, alternative, classes))
        if result is None or result.allocatable:
            continue
        found = [f for alternative in _alternatives(result) for f in _selector_errors(
            subject, f"request {alternative.name.split('/', 1)[-1]!r}", alternative.selectors, "request", published)]
        findings.extend(found)
        if not found and inputs.resource_slices and not any(
                a.class_source == "missing" or (classes and a.device_class not in classes)
                for a in _alternatives(result)):
            findings.append(Finding(
                "unsatisfiable-claim", Severity.WARNING, subject,
                f"Kubernetes' structured allocator finds no node whose devices could satisfy it even with "
                f"every device free: {result.verdict}",
                "change its requests, or add devices that match them (`kubectl gpu explain` shows each "
                "request against the devices)"))
    for name, result in sorted(judged.classes.items()):
        findings.extend(_selector_errors(f"deviceclass/{name}", f"DeviceClass {name}",
                                         _alternatives(result)[0].selectors if result else (), "class", published))
    summary = (f"{len(subjects)} template(s)/claim(s) and {len(classes)} DeviceClass(es) against "
               f"{len(devices)} published device(s)")
    if judged.unreadable:
        summary += f"; not judged: {judged.unreadable}"
    return CheckResult(NAME, TITLE, summary, tuple(findings))


@dataclass(frozen=True)
class _Judged:
    claims: list[Any]  # ClaimResult per claim (None: the claim itself cannot be read)
    classes: dict[str, Any]  # DeviceClass name -> the ClaimResult of one device of it
    unreadable: str | None = None  # why nothing could be judged


def _judge(inputs: DoctorInputs, claims: list[Mapping[str, Any]], classes: Mapping[str, Any]) -> _Judged:
    """Every claim and template as Kubernetes' structured allocator sees it with every device
    free (explain's engine, whose selector counts feed the allocator's verdicts), and one probe
    claim of one device per DeviceClass, for the class's own selectors."""
    from kubectl_gpu.dra.devices import InvalidResourceSlice
    from kubectl_gpu.explain import ClaimResult, InvalidClaim, explain_objects

    probes = [{"apiVersion": NEWEST_DRA_API_VERSION, "kind": "ResourceClaim", "metadata": {"name": f"deviceclass-{name}"},
               "spec": {"devices": {"requests": [{"name": "probe", "exactly": {"deviceClassName": name}}]}}}
              for name in sorted(classes)]
    try:
        items = explain_objects(claims=[*claims, *probes], slices=inputs.resource_slices,
                                classes=inputs.device_classes).items
    except (InvalidResourceSlice, InvalidClaim) as err:
        return _Judged([None] * len(claims), {}, str(err))
    results = [item if isinstance(item, ClaimResult) else None for item in items]
    return _Judged(results[:len(claims)], dict(zip(sorted(classes), results[len(claims):])))


def _alternatives(result: Any) -> list[Any]:
    return [a for r in result.requests for a in r.alternatives]


def _class_missing(subject: str, request: Request, classes: Mapping[str, Any]) -> list[Finding]:
    if request.device_class and classes and request.device_class not in classes:
        return [Finding(
            "device-class-missing", Severity.ERROR, subject,
            f"request {request.name!r} asks for DeviceClass {request.device_class}, which does not "
            "exist; its pods stay Pending",
            f"create DeviceClass {request.device_class} (install its DRA driver) or use one of: "
            + ", ".join(sorted(classes)))]
    return []


def _selector_errors(subject: str, where: str, selectors: Iterable[Any], origin: str,
                     published: Mapping[str, tuple[int, dict[str, int]]]) -> list[Finding]:
    """A selector that reads an attribute some devices do not publish, where the allocator's
    evaluation met that error (CEL's `a && b` absorbs b's error when a is false, so a reference
    only matters where it is evaluated)."""
    findings = []
    for selector in selectors:
        if selector.origin != origin or not selector.errors:
            continue
        missing = []
        for ref in attribute_references(selector.expression):
            total, counts = published.get(ref.domain, (0, {}))
            # No device of that driver published: nothing to compare against.
            if total and counts.get(f"{ref.kind}/{ref.name}", 0) < total:
                missing.append(ref)
        if not missing:
            continue
        ref = missing[0]
        findings.append(Finding(
            "unpublished-attribute", Severity.ERROR, subject,
            f"{where}: selector `{selector.expression}` reads {ref.kind} {ref.qualified}, which "
            f"{selector.errors} of the {selector.evaluated} device(s) it is evaluated on do not publish "
            f"({selector.first_error}); the scheduler treats that as a CEL runtime error and aborts allocation",
            _fix(ref, published[ref.domain][1])))
    return findings


def _claim_specs(inputs: DoctorInputs) -> Iterable[tuple[str, Mapping[str, Any], tuple[Request, ...]]]:
    """Each template and unallocated claim to judge: its subject, the object, and its requests."""
    for template in inputs.resource_claim_templates:
        metadata = template.get("metadata") or {}
        yield (f"resourceclaimtemplate/{metadata.get('namespace')}/{metadata.get('name')}", template,
               claim_requests((template.get("spec") or {}).get("spec")))
    for claim in inputs.resource_claims:
        view = read_claim(claim)
        # Generated claims repeat their template, and allocated ones were evidently satisfiable.
        if view.owner_pod is None and not view.is_allocated:
            yield f"resourceclaim/{view.namespace}/{view.name}", claim, view.requests


def _fix(ref: AttributeReference, counts: Mapping[str, int]) -> str:
    available = sorted({k.split("/", 1)[1] for k in counts if k.startswith(ref.kind + "/")})
    advice = removed_attribute_advice(ref.name) if ref.domain == NVIDIA_DRIVER else None
    if advice:
        return f"{advice} (published: {', '.join(available)})"
    return f"use a published {ref.kind[:-1] if ref.kind == 'attributes' else ref.kind} of " \
           f"{ref.domain}: {', '.join(available) or 'none'}"


def _published_by_driver(devices: list[SliceDevice]) -> dict[str, tuple[int, dict[str, int]]]:
    """domain -> (devices of that driver, {"attributes/name" | "capacity/name": count})."""
    out: dict[str, tuple[int, dict[str, int]]] = {}
    totals: dict[str, int] = {}
    counts: dict[str, dict[str, int]] = {}
    for device in devices:
        totals[device.driver] = totals.get(device.driver, 0) + 1
        for kind, names in (("attributes", device.attributes), ("capacity", device.capacity)):
            for qualified in names:
                domain, _, name = qualified.partition("/")
                per_domain = counts.setdefault(domain, {})
                per_domain[f"{kind}/{name}"] = per_domain.get(f"{kind}/{name}", 0) + 1
    for domain, total in totals.items():
        out[domain] = (total, counts.get(domain, {}))
    return out
