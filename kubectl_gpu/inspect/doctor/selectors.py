"""Claims and templates that cannot be allocated as written: a DeviceClass that does not exist, or
a CEL selector naming an attribute no device publishes.

In Kubernetes a missing attribute is a runtime error, not a non-match: the scheduler aborts
allocation for the pod.  The NVIDIA driver removed `index` and `minor` in v25.8.0 and its own
`pcieBusID` in v25.12.0, so selectors written for older drivers break this way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from kubectl_gpu.core.constants import NVIDIA_DRIVER
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
    evaluator = _Evaluator([d.device for d in devices], classes)
    findings: list[Finding] = []
    checked = 0
    for subject, requests in _claim_specs(inputs):
        checked += 1
        for request in requests:
            for alternative in request.alternatives or (request,):
                findings.extend(_check_request(subject, alternative, classes, published, evaluator))
    for name, device_class in sorted(classes.items()):
        findings.extend(_check_expressions(f"deviceclass/{name}", f"DeviceClass {name}",
                                           _class_selectors(device_class), published,
                                           lambda: evaluator.all_devices))
    summary = (f"{checked} template(s)/claim(s) and {len(classes)} DeviceClass(es) against "
               f"{len(devices)} published device(s)")
    return CheckResult(NAME, TITLE, summary, tuple(findings))


class _Evaluator:
    """Confirms a suspicious selector with Kubernetes' CEL semantics: `a && b` absorbs b's error
    when a is false, so a reference to a missing attribute only matters where it is evaluated."""

    def __init__(self, devices: list[Any], classes: Mapping[str, Any]) -> None:
        # The devices the scheduler sees (current pool generations), as the one parser read them.
        self.all_devices = devices
        self._classes = classes
        self._members: dict[str, list[Any]] = {}

    def class_members(self, name: str | None) -> list[Any]:
        """Devices the request's DeviceClass admits (errors and non-matches excluded)."""
        if name is None or name not in self._classes:
            return self.all_devices
        if name not in self._members:
            selectors = _compiled(_class_selectors(self._classes[name]))
            self._members[name] = [d for d in self.all_devices
                                   if all(_outcome(s, d) is True for s in selectors)]
        return self._members[name]

    @staticmethod
    def errors(expression: str, devices: list[Any]) -> tuple[int, str | None]:
        compiled = _compiled([expression])
        if not compiled:
            return 0, None
        count, first = 0, None
        for device in devices:
            outcome = _outcome(compiled[0], device)
            if isinstance(outcome, str):
                count += 1
                first = first or f"{outcome} (device {device.id})"
        return count, first


def _compiled(expressions: Iterable[str]) -> list[Any]:
    from kubectl_gpu.cel import CelCompileError, compile_selector
    found = []
    for expression in expressions:
        try:
            found.append(compile_selector(expression))
        except CelCompileError:
            continue  # the webhook and explain report compile errors; this check is about attributes
    return found


def _outcome(selector: Any, device: Any) -> bool | str:
    from kubectl_gpu.cel import CelRuntimeError
    try:
        return selector.matches(device)
    except CelRuntimeError as err:
        return str(err)


def _class_selectors(device_class: Mapping[str, Any]) -> list[str]:
    return [str((s.get("cel") or {}).get("expression") or "")
            for s in (device_class.get("spec") or {}).get("selectors") or ()]


def _claim_specs(inputs: DoctorInputs) -> Iterable[tuple[str, tuple[Request, ...]]]:
    for template in inputs.resource_claim_templates:
        metadata = template.get("metadata") or {}
        spec = (template.get("spec") or {}).get("spec")
        yield (f"resourceclaimtemplate/{metadata.get('namespace')}/{metadata.get('name')}",
               claim_requests(spec))
    for claim in inputs.resource_claims:
        view = read_claim(claim)
        # Generated claims repeat their template, and allocated ones were evidently satisfiable.
        if view.owner_pod is None and not view.is_allocated:
            yield f"resourceclaim/{view.namespace}/{view.name}", view.requests


def _check_request(subject: str, request: Request, classes: Mapping[str, Any],
                   published: Mapping[str, tuple[int, dict[str, int]]],
                   evaluator: _Evaluator) -> list[Finding]:
    findings = []
    if request.device_class and classes and request.device_class not in classes:
        findings.append(Finding(
            "device-class-missing", Severity.ERROR, subject,
            f"request {request.name!r} asks for DeviceClass {request.device_class}, which does not "
            "exist; its pods stay Pending",
            f"create DeviceClass {request.device_class} (install its DRA driver) or use one of: "
            + ", ".join(sorted(classes))))
    findings.extend(_check_expressions(subject, f"request {request.name!r}", request.selectors,
                                       published, lambda: evaluator.class_members(request.device_class)))
    return findings


def _check_expressions(subject: str, where: str, expressions: Iterable[str],
                       published: Mapping[str, tuple[int, dict[str, int]]],
                       candidates: Callable[[], list[Any]]) -> list[Finding]:
    findings = []
    for expression in expressions:
        missing = []
        for ref in attribute_references(expression):
            total, counts = published.get(ref.domain, (0, {}))
            # No device of that driver published: nothing to compare against.
            if total and counts.get(f"{ref.kind}/{ref.name}", 0) < total:
                missing.append(ref)
        if not missing:
            continue
        devices = candidates()
        errors, first = _Evaluator.errors(expression, devices)
        if not errors:
            continue  # guarded by the expression itself or by the DeviceClass
        ref = missing[0]
        findings.append(Finding(
            "unpublished-attribute", Severity.ERROR, subject,
            f"{where}: selector `{expression}` reads {ref.kind} {ref.qualified}, which "
            f"{errors} of the {len(devices)} device(s) it is evaluated on do not publish "
            f"({first}); the scheduler treats that as a CEL runtime error and aborts allocation",
            _fix(ref, published[ref.domain][1])))
    return findings


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
