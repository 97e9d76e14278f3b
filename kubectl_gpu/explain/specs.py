"""Read ResourceClaims, ResourceClaimTemplates and DeviceClasses (resource.k8s.io v1, v1beta2,
v1beta1) into one version-independent shape.

v1 and v1beta2 wrap a request's device selection in ``exactly:`` (or list alternatives in
``firstAvailable:``); v1beta1 puts the same fields flat on the request.  Mixing the two shapes is
the most common mistake when moving manifests between versions, and the API server rejects it, so
it is reported here with the fix instead of being guessed around.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from kubectl_gpu.core.constants import DRA_GROUP
from kubectl_gpu.dra.values import InvalidValue, Quantity
from kubectl_gpu.dra import facts, hami

WRAPPED_VERSIONS = facts.READ_WRAPPED_VERSIONS
FLAT_VERSIONS = facts.READ_FLAT_VERSIONS
CLAIM_KINDS = {"ResourceClaim", "ResourceClaimTemplate"}

# The DRA drivers' own DeviceClasses, used when the person explaining did not pass the cluster's
# classes: the NVIDIA driver's (its chart installs all three with GPUs enabled) and HAMi's one (its
# chart's deviceclass-hami-gpu.yaml, kubectl_gpu/dra/hami.py).
BUILTIN_CLASS_SELECTORS = {**facts.DEVICE_CLASS_SELECTORS, hami.HAMI_DEVICE_CLASS: hami.HAMI_DEVICE_CLASS_SELECTOR}
# Whose definition a built-in class is: (short, as explain's table shows it; long, as its note says it).
_BUILTIN_OWNERS = {hami.HAMI_DEVICE_CLASS: ("HAMi driver", "HAMi's DRA driver")}
_NVIDIA_OWNER = ("NVIDIA driver", "the NVIDIA DRA driver")


class InvalidClaim(ValueError):
    """A claim or class this tool (and the API server) cannot accept; the message says what to fix."""


@dataclass(frozen=True)
class DeviceClassSpec:
    """A DeviceClass: its name and CEL selectors (``builtin``: its driver's definition)."""

    name: str
    selectors: tuple[str, ...]
    builtin: bool = False
    extended_resource_name: str | None = None


@dataclass(frozen=True)
class SubrequestSpec:
    """What one request (or one firstAvailable alternative of it) asks for."""

    name: str  # "gpu", or "gpu/older-gpu" for a firstAvailable alternative
    device_class: str
    selectors: tuple[str, ...] = ()
    allocation_mode: str = "ExactCount"  # ExactCount | All
    count: int = 1
    capacity_requests: Mapping[str, Quantity] = field(default_factory=dict)
    admin_access: bool = False
    tolerations: tuple[Mapping[str, str], ...] = ()  # device taint tolerations (key, operator, value, effect)


@dataclass(frozen=True)
class RequestSpec:
    """One device request of a claim, with its alternatives (one unless ``firstAvailable``)."""

    name: str
    first_available: bool
    alternatives: tuple[SubrequestSpec, ...]


@dataclass(frozen=True)
class ConstraintSpec:
    """A claim's ``matchAttribute`` or ``distinctAttribute`` constraint over some (or all) of its requests."""

    requests: tuple[str, ...]  # empty: all requests
    match_attribute: str | None
    distinct_attribute: str | None = None


@dataclass(frozen=True)
class ClaimSpec:
    """A ResourceClaim or ResourceClaimTemplate, in one shape whatever its API version."""

    kind: str
    name: str
    namespace: str | None
    api_version: str
    requests: tuple[RequestSpec, ...]
    constraints: tuple[ConstraintSpec, ...] = ()
    # Devices this claim already holds (driver/pool/device), from status.allocation.
    allocated: tuple[str, ...] = ()
    # The API server already holds this ResourceClaim (it has a uid): its selectors are stored
    # expressions, which the scheduler compiles whatever the feature gates are now.  A template is
    # never stored in this sense: the claim made from it is a CREATE.
    stored: bool = False

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


def is_claim(obj: Any) -> bool:
    kind = obj.get("kind") if isinstance(obj, Mapping) else None
    return isinstance(kind, str) and kind in CLAIM_KINDS and _group(obj) == DRA_GROUP


def is_device_class(obj: Any) -> bool:
    return isinstance(obj, Mapping) and obj.get("kind") == "DeviceClass" and _group(obj) == DRA_GROUP


def _group(obj: Mapping[str, Any]) -> str:
    return str(obj.get("apiVersion", "")).partition("/")[0]


def _version(obj: Mapping[str, Any]) -> str:
    return str(obj.get("apiVersion", "")).partition("/")[2]


def parse_device_class(obj: Mapping[str, Any]) -> DeviceClassSpec:
    name = str(_map(obj.get("metadata"), "DeviceClass: metadata").get("name") or "")
    if not name:
        raise InvalidClaim("DeviceClass without metadata.name")
    spec = _map(obj.get("spec"), f"DeviceClass {name}: spec")
    return DeviceClassSpec(
        name=name,
        selectors=_selectors(spec.get("selectors"), f"DeviceClass {name}: spec.selectors"),
        extended_resource_name=spec.get("extendedResourceName"),
    )


def builtin_class_owner(name: str) -> tuple[str, str]:
    """Whose definition the built-in class ``name`` is: (``NVIDIA driver``, ``the NVIDIA DRA driver``)."""
    return _BUILTIN_OWNERS.get(name, _NVIDIA_OWNER)


def builtin_device_class(name: str) -> DeviceClassSpec | None:
    selector = BUILTIN_CLASS_SELECTORS.get(name)
    return DeviceClassSpec(name, (selector,), builtin=True) if selector else None


def parse_claim(obj: Mapping[str, Any]) -> ClaimSpec:
    """A ResourceClaim or ResourceClaimTemplate as a ClaimSpec; InvalidClaim says what to fix."""
    kind = obj.get("kind")
    meta = _map(obj.get("metadata"), f"{kind}: metadata")
    name = str(meta.get("name") or meta.get("generateName") or "<unnamed>")
    label = f"{kind} {name}"
    version = _version(obj)
    if kind not in CLAIM_KINDS or _group(obj) != DRA_GROUP:
        raise InvalidClaim(f"{kind} {name}: not a resource.k8s.io ResourceClaim or ResourceClaimTemplate")
    if version not in WRAPPED_VERSIONS | FLAT_VERSIONS:
        raise InvalidClaim(
            f"{label}: {obj.get('apiVersion')} is not supported (classic DRA with resourceClassName/"
            "parametersRef was removed in Kubernetes 1.31); rewrite it as resource.k8s.io/v1 with "
            "spec.devices.requests[].exactly.deviceClassName"
        )
    spec = _map(obj.get("spec"), f"{label}: spec")
    if kind == "ResourceClaimTemplate":
        spec = _map(spec.get("spec"), f"{label}: spec.spec")
    devices = _map(spec.get("devices"), f"{label}: spec.devices")
    raw_requests = _list(devices.get("requests"), f"{label}: spec.devices.requests")
    if not raw_requests:
        raise InvalidClaim(f"{label}: spec.devices.requests is empty; nothing to allocate")
    requests = tuple(_request(r, i, version, label) for i, r in enumerate(raw_requests))
    names = [r.name for r in requests]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InvalidClaim(f"{label}: request names must be unique, {', '.join(duplicates)} repeats")
    constraints = []
    for index, raw in enumerate(_list(devices.get("constraints"), f"{label}: spec.devices.constraints")):
        where = f"{label}: spec.devices.constraints[{index}]"
        raw = _map(raw, where)
        attribute, distinct = raw.get("matchAttribute"), raw.get("distinctAttribute")
        if attribute or distinct:
            wanted = tuple(_list(raw.get("requests"), f"{where}.requests"))
            if not all(isinstance(r, str) for r in wanted):
                raise InvalidClaim(f"{where}.requests must be a list of request names")
            unknown = [r for r in wanted if r.split("/")[0] not in names]
            if unknown:
                raise InvalidClaim(f"{label}: spec.devices.constraints[{index}] names unknown requests {unknown}")
            if attribute and distinct:
                raise InvalidClaim(f"{where}: matchAttribute and distinctAttribute exclude each other; keep one")
            constraints.append(ConstraintSpec(wanted, str(attribute) if attribute else None,
                                              str(distinct) if distinct else None))
    allocation = _map(_map(obj.get("status"), f"{label}: status").get("allocation"), f"{label}: status.allocation")
    results = _list(_map(allocation.get("devices"), f"{label}: status.allocation.devices").get("results"),
                    f"{label}: status.allocation.devices.results")
    allocated = tuple(f"{r.get('driver')}/{r.get('pool')}/{r.get('device')}" for r in results if isinstance(r, Mapping))
    return ClaimSpec(
        kind=str(kind),
        name=name,
        namespace=meta.get("namespace"),
        api_version=str(obj.get("apiVersion")),
        requests=requests,
        constraints=tuple(constraints),
        allocated=allocated,
        # A template's claims are yet to be created: the API server validates each on CREATE as new
        # expressions under its gates (pkg/apis/resource/validation ValidateResourceClaim: stored=false).
        stored=bool(meta.get("uid")) and kind == "ResourceClaim",
    )


def _request(raw: Any, index: int, version: str, label: str) -> RequestSpec:
    where = f"{label}: spec.devices.requests[{index}]"
    if not isinstance(raw, Mapping) or not raw.get("name"):
        raise InvalidClaim(f"{where}: every request needs a name")
    name = str(raw["name"])
    where = f"{label}: request {name}"
    flat_fields = [k for k in ("deviceClassName", "selectors", "count", "allocationMode", "adminAccess") if k in raw]
    if "firstAvailable" in raw:
        if "exactly" in raw or flat_fields:
            raise InvalidClaim(f"{where}: firstAvailable cannot be combined with {'exactly' if 'exactly' in raw else flat_fields[0]}")
        alternatives = _list(raw.get("firstAvailable"), f"{where}: firstAvailable")
        if not alternatives:
            raise InvalidClaim(f"{where}: firstAvailable is empty")
        subs = []
        for sub_index, sub in enumerate(alternatives):
            if not isinstance(sub, Mapping) or not sub.get("name"):
                raise InvalidClaim(f"{where}: firstAvailable[{sub_index}] needs a name")
            subs.append(_subrequest(sub, f"{name}/{sub['name']}", f"{where}/{sub['name']}"))
        return RequestSpec(name, True, tuple(subs))
    if version in WRAPPED_VERSIONS:
        if "exactly" not in raw:
            hint = (
                f"; {flat_fields[0]} directly on the request is the resource.k8s.io/v1beta1 shape, move it under exactly:"
                if flat_fields else ""
            )
            raise InvalidClaim(f"{where}: resource.k8s.io/{version} needs exactly: or firstAvailable:{hint}")
        if flat_fields:
            raise InvalidClaim(f"{where}: {flat_fields[0]} belongs under exactly: in resource.k8s.io/{version}")
        return RequestSpec(name, False, (_subrequest(_map(raw.get("exactly"), f"{where}: exactly"), name, where),))
    if "exactly" in raw:
        raise InvalidClaim(
            f"{where}: exactly: is the resource.k8s.io/v1 shape; in {version} put deviceClassName, selectors "
            "and count directly on the request, or change apiVersion to resource.k8s.io/v1"
        )
    return RequestSpec(name, False, (_subrequest(raw, name, where),))


def _subrequest(raw: Mapping[str, Any], name: str, where: str) -> SubrequestSpec:
    device_class = raw.get("deviceClassName")
    if not device_class:
        raise InvalidClaim(f"{where}: deviceClassName is required")
    if not isinstance(device_class, str):
        raise InvalidClaim(f"{where}: deviceClassName must be a string, not {_type_name(device_class)}")
    mode = raw.get("allocationMode") or "ExactCount"
    if not isinstance(mode, str) or mode not in {"ExactCount", "All"}:
        raise InvalidClaim(f"{where}: allocationMode must be ExactCount or All, not {mode!r}")
    count = raw.get("count", 1) if mode == "ExactCount" else 0
    if mode == "ExactCount" and (not isinstance(count, int) or isinstance(count, bool) or count < 1):
        raise InvalidClaim(f"{where}: count must be a positive integer, not {count!r}")
    requests = _map(_map(raw.get("capacity"), f"{where}: capacity").get("requests"), f"{where}: capacity.requests")
    capacity: dict[str, Quantity] = {}
    for key, value in requests.items():
        try:
            capacity[str(key)] = Quantity.read(value)
        except InvalidValue as err:
            raise InvalidClaim(f"{where}: capacity.requests.{key}: {value!r}: {err}") from None
    tolerations = []
    for position, toleration in enumerate(_list(raw.get("tolerations"), f"{where}: tolerations")):
        toleration = _map(toleration, f"{where}: tolerations[{position}]")
        operator = toleration.get("operator") or "Equal"
        if operator not in ("Equal", "Exists"):
            raise InvalidClaim(f"{where}: tolerations[{position}].operator must be Equal or Exists, not {operator!r}")
        tolerations.append({k: str(toleration.get(k) or "") for k in ("key", "value", "effect")} | {"operator": operator})
    return SubrequestSpec(
        name=name,
        device_class=str(device_class),
        selectors=_selectors(raw.get("selectors"), f"{where}: selectors"),
        allocation_mode=mode,
        count=count,
        capacity_requests=capacity,
        admin_access=bool(raw.get("adminAccess")),
        tolerations=tuple(tolerations),
    )


def _selectors(raw: Any, where: str) -> tuple[str, ...]:
    expressions = []
    for index, selector in enumerate(_list(raw, where)):
        cel = selector.get("cel") if isinstance(selector, Mapping) else None
        expression = cel.get("expression") if isinstance(cel, Mapping) else None
        if not isinstance(expression, str):
            raise InvalidClaim(f"{where}[{index}]: only cel.expression selectors exist; set cel.expression")
        expressions.append(expression)
    return tuple(expressions)


def _map(value: Any, where: str) -> Mapping[str, Any]:
    """A field the resource.k8s.io schema types as an object: absent is empty, another type is an
    error that names the field (the API server would refuse the object)."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return value
    raise InvalidClaim(f"{where} must be a map, not {_type_name(value)}")


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list):
        return value
    raise InvalidClaim(f"{where} must be a list, not {_type_name(value)}")


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    return {list: "a list", int: "a number", float: "a number"}.get(type(value), f"a {type(value).__name__}")
