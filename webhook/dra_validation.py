"""Admission checks for ResourceClaims and ResourceClaimTemplates (resource.k8s.io).

What the API server cannot know and a pod would otherwise only find out on the node:
NVIDIA opaque configs that the driver will refuse, CEL selectors that do not compile,
configs and constraints naming requests that do not exist, selectors on attributes the
driver no longer publishes, and sharing settings that will not share.

Pure: ``validate_dra_object(obj)`` reads a dict and returns a :class:`ValidationResult`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from kubectl_gpu.cel import CelCompileError, compile_selector
from kubectl_gpu.core.constants import DRA_GROUP as RESOURCE_GROUP
from kubectl_gpu.core.constants import (GPU_DEVICE_CLASS, MIG_DEVICE_CLASS, NVIDIA_ATTRIBUTE_DOMAIN,
                                         REMOVED_NVIDIA_ATTRIBUTES)
from kubectl_gpu.dra import facts
from kubectl_gpu.dra.facts import DRA_VERSIONS, FLAT_REQUEST_VERSIONS, RETIRED_DRA_VERSIONS
from kubectl_gpu.dra.driver_config import (
    GPU_CONFIG,
    MIG_DEVICE_CONFIG,
    MPS,
    NVIDIA_GPU_DRIVER,
    TIME_SLICING,
    FieldError,
    validate_nvidia_parameters,
)

__all__ = ["FieldError", "ValidationResult", "validate_dra_object", "MAX_WARNING_LENGTH"]

# Versions whose claim shape this module understands.  v1 (1.34) and v1beta2 (1.33) nest a
# request's device fields under ``exactly``; v1beta1 (1.32) puts them on the request itself.
FLAT_VERSIONS = FLAT_REQUEST_VERSIONS
NESTED_VERSIONS = tuple(v for v in DRA_VERSIONS if v not in FLAT_VERSIONS)
SUPPORTED_VERSIONS = NESTED_VERSIONS + FLAT_VERSIONS
RETIRED_VERSIONS = RETIRED_DRA_VERSIONS
KINDS = ("ResourceClaim", "ResourceClaimTemplate")

# Device fields of one request; v1 keeps them under ``exactly``, v1beta1 on the request.
EXACT_REQUEST_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count",
                        "adminAccess", "tolerations", "capacity")

MAX_WARNING_LENGTH = 120  # AdmissionReview warnings longer than this are truncated by clients

# A selector that reads an attribute the driver no longer publishes is a CEL runtime error:
# the scheduler aborts allocation for the pod instead of skipping the device.
_REMOVED = "|".join(REMOVED_NVIDIA_ATTRIBUTES)
_REMOVED_ATTRIBUTE_USE = re.compile(
    r"""attributes\s*\[\s*(['"])""" + re.escape(NVIDIA_ATTRIBUTE_DOMAIN) + r"""\1\s*\]\s*"""
    rf"""(?:\.\s*(?P<dotted>{_REMOVED})\b|\[\s*(['"])(?P<quoted>{_REMOVED})\3\s*\])"""
)


@dataclass
class ValidationResult:
    """Deny when there is any error; warnings are returned to the user either way."""

    errors: list[FieldError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def allowed(self) -> bool:
        return not self.errors

    def message(self) -> str:
        """All errors in one line, for an AdmissionResponse status message."""
        return "; ".join(f.render() for f in self.errors)


@dataclass(frozen=True)
class _Request:
    """One entry of spec.devices.requests, reduced to what the checks need."""

    name: str
    path: str  # e.g. spec.devices.requests[0]
    device_classes: tuple[str, ...]  # of exactly, or of every firstAvailable alternative
    subrequest_names: tuple[str, ...]


def validate_dra_object(obj: Any) -> ValidationResult:
    """Validate one ResourceClaim or ResourceClaimTemplate in any served resource.k8s.io
    version (v1, v1beta2, v1beta1)."""
    result = ValidationResult()
    if not isinstance(obj, Mapping):
        result.errors.append(FieldError("", "expected a ResourceClaim or ResourceClaimTemplate object"))
        return result

    version = _check_api_version(obj.get("apiVersion"), result)
    kind = obj.get("kind")
    if kind not in KINDS:
        result.errors.append(FieldError("kind", f"expected {' or '.join(KINDS)}, got {kind!r}"))
    if version is None or kind not in KINDS:
        return result

    spec, spec_path = _claim_spec(obj, kind, result)
    if spec is None:
        return result
    devices = spec.get("devices")
    if devices is None:
        return result
    devices_path = f"{spec_path}.devices"
    if not isinstance(devices, Mapping):
        result.errors.append(FieldError(devices_path, "must be an object with requests"))
        return result

    requests = _read_requests(devices.get("requests"), devices_path, version, result)
    known = _referable_names(requests)
    _check_references(devices.get("constraints"), f"{devices_path}.constraints", known, result)
    _check_configs(devices.get("config"), f"{devices_path}.config", requests, known,
                   kind, result)
    return result


# --- object shape ------------------------------------------------------------------------


def _check_api_version(api_version: Any, result: ValidationResult) -> str | None:
    supported = ", ".join(f"{RESOURCE_GROUP}/{v}" for v in SUPPORTED_VERSIONS)
    group, _, version = str(api_version).partition("/") if isinstance(api_version, str) else ("", "", "")
    if group == RESOURCE_GROUP and version in SUPPORTED_VERSIONS:
        return version
    if group == RESOURCE_GROUP and version in RETIRED_VERSIONS:
        detail = ("classic DRA (resourceClassName, parametersRef) was removed in Kubernetes 1.31"
                  if version in ("v1alpha1", "v1alpha2")
                  else "it was replaced by v1beta1 in Kubernetes 1.32")
        result.errors.append(FieldError(
            "apiVersion",
            f"unsupported apiVersion {api_version}: {detail}; rewrite the object for {supported} "
            "(kubectl gpu migrate can do it)",
        ))
        return None
    result.errors.append(FieldError(
        "apiVersion", f"unsupported apiVersion {api_version!r}; use one of {supported}"))
    return None


def _claim_spec(obj: Mapping[str, Any], kind: str,
                result: ValidationResult) -> tuple[Mapping[str, Any] | None, str]:
    spec = obj.get("spec")
    if kind == "ResourceClaimTemplate":
        if not isinstance(spec, Mapping) or not isinstance(spec.get("spec"), Mapping):
            result.errors.append(FieldError(
                "spec.spec", "a ResourceClaimTemplate needs spec.spec (the ResourceClaim spec)"))
            return None, "spec.spec"
        return spec["spec"], "spec.spec"
    if not isinstance(spec, Mapping):
        result.errors.append(FieldError("spec", "a ResourceClaim needs a spec with devices"))
        return None, "spec"
    return spec, "spec"


# --- requests and their CEL selectors -----------------------------------------------------


def _read_requests(raw: Any, devices_path: str, version: str,
                   result: ValidationResult) -> list[_Request]:
    path = f"{devices_path}.requests"
    if raw is None:
        return []
    if not isinstance(raw, list):
        result.errors.append(FieldError(path, "must be a list of requests"))
        return []
    requests = []
    for index, request in enumerate(raw):
        request_path = f"{path}[{index}]"
        if not isinstance(request, Mapping):
            result.errors.append(FieldError(request_path, "must be an object with a name"))
            continue
        name = request.get("name")
        if not isinstance(name, str) or not name:
            result.errors.append(FieldError(f"{request_path}.name", "every request needs a name"))
            name = ""
        if version in NESTED_VERSIONS:
            classes = _read_nested_request(request, request_path, version, result)
        else:
            classes = _read_flat_request(request, request_path, result)
        subrequests = _read_first_available(request, request_path, result)
        requests.append(_Request(
            name=name, path=request_path,
            device_classes=classes + tuple(c for _, c in subrequests if c),
            subrequest_names=tuple(n for n, _ in subrequests if n),
        ))
    return requests


def _read_nested_request(request: Mapping[str, Any], path: str, version: str,
                         result: ValidationResult) -> tuple[str, ...]:
    flat = [f for f in EXACT_REQUEST_FIELDS if f in request]
    if flat:
        result.errors.append(FieldError(
            f"{path}.{flat[0]}",
            f"resource.k8s.io/{version} nests {', '.join(flat)} under 'exactly:' (flat fields are "
            "the v1beta1 shape); move them under exactly or use apiVersion resource.k8s.io/v1beta1",
        ))
    exactly = request.get("exactly")
    if exactly is not None and "firstAvailable" in request:
        result.errors.append(FieldError(path, "set either exactly or firstAvailable, not both"))
    if exactly is None:
        if "firstAvailable" not in request and not flat:
            result.errors.append(FieldError(
                f"{path}.exactly",
                "is required: set exactly (deviceClassName, count, selectors) or firstAvailable"))
        return ()
    if not isinstance(exactly, Mapping):
        result.errors.append(FieldError(f"{path}.exactly", "must be an object with deviceClassName"))
        return ()
    _check_selectors(exactly.get("selectors"), f"{path}.exactly.selectors", result)
    device_class = exactly.get("deviceClassName")
    return (device_class,) if isinstance(device_class, str) else ()


def _read_flat_request(request: Mapping[str, Any], path: str,
                       result: ValidationResult) -> tuple[str, ...]:
    if "exactly" in request:
        result.errors.append(FieldError(
            f"{path}.exactly",
            "resource.k8s.io/v1beta1 has no 'exactly'; move its fields up onto the request, "
            "or use apiVersion resource.k8s.io/v1 (Kubernetes 1.34+)",
        ))
    _check_selectors(request.get("selectors"), f"{path}.selectors", result)
    device_class = request.get("deviceClassName")
    return (device_class,) if isinstance(device_class, str) else ()


def _read_first_available(request: Mapping[str, Any], path: str,
                          result: ValidationResult) -> list[tuple[str, str | None]]:
    """(name, deviceClassName) of each firstAvailable alternative."""
    raw = request.get("firstAvailable")
    if raw is None:
        return []
    list_path = f"{path}.firstAvailable"
    if not isinstance(raw, list) or not raw:
        result.errors.append(FieldError(list_path, "must be a non-empty list of alternatives"))
        return []
    alternatives = []
    for index, sub in enumerate(raw):
        sub_path = f"{list_path}[{index}]"
        if not isinstance(sub, Mapping):
            result.errors.append(FieldError(sub_path, "must be an object with name and deviceClassName"))
            continue
        _check_selectors(sub.get("selectors"), f"{sub_path}.selectors", result)
        name = sub.get("name")
        device_class = sub.get("deviceClassName")
        alternatives.append((name if isinstance(name, str) else "",
                             device_class if isinstance(device_class, str) else None))
    return alternatives


def _check_selectors(raw: Any, path: str, result: ValidationResult) -> None:
    if raw is None:
        return
    if not isinstance(raw, list):
        result.errors.append(FieldError(path, "must be a list of {cel: {expression: ...}}"))
        return
    for index, selector in enumerate(raw):
        selector_path = f"{path}[{index}]"
        cel = selector.get("cel") if isinstance(selector, Mapping) else None
        if not isinstance(cel, Mapping):
            result.errors.append(FieldError(f"{selector_path}.cel",
                                         "every selector needs cel: {expression: ...}"))
            continue
        expression = cel.get("expression")
        expression_path = f"{selector_path}.cel.expression"
        if not isinstance(expression, str) or not expression.strip():
            result.errors.append(FieldError(expression_path,
                                         "must be a CEL expression such as device.driver == \"gpu.nvidia.com\""))
            continue
        error = _compile_error(expression)
        if error is not None:
            result.errors.append(FieldError(expression_path, error))
        for attribute in _removed_attributes(expression):
            result.warnings.append(_warning(
                f"{_short(selector_path)}: gpu.nvidia.com '{attribute}' was removed in driver "
                f"{facts.attribute(attribute).removed}; scheduling will fail"))


def _compile_error(expression: str) -> str | None:
    """What is wrong with the expression in the Kubernetes DRA CEL environment, or None."""
    try:
        compile_selector(expression)
    except CelCompileError as error:
        where = ""
        if error.position is not None:
            line, column = error.position
            where = f" at line {line}, column {column}"
        return f"CEL selector does not compile{where}: {error.message}; fix the expression"
    return None


def _removed_attributes(expression: str) -> list[str]:
    found = []
    for match in _REMOVED_ATTRIBUTE_USE.finditer(expression):
        attribute = match.group("dotted") or match.group("quoted")
        if attribute not in found:
            found.append(attribute)
    return found


# --- configs and constraints --------------------------------------------------------------


def _referable_names(requests: list[_Request]) -> set[str]:
    """Names a config or constraint may list: a request, or request/subrequest."""
    names = set()
    for request in requests:
        names.add(request.name)
        names.update(f"{request.name}/{sub}" for sub in request.subrequest_names)
    return names


def _check_references(raw: Any, path: str, known: set[str], result: ValidationResult) -> None:
    if not isinstance(raw, list):
        return
    for index, entry in enumerate(raw):
        if isinstance(entry, Mapping):
            _check_request_names(entry.get("requests"), f"{path}[{index}].requests", known, result)


def _check_request_names(raw: Any, path: str, known: set[str], result: ValidationResult) -> None:
    if raw is None:
        return
    if not isinstance(raw, list):
        result.errors.append(FieldError(path, "must be a list of request names"))
        return
    valid = ", ".join(sorted(known)) or "none: the claim has no requests"
    for index, name in enumerate(raw):
        if not isinstance(name, str):
            result.errors.append(FieldError(f"{path}[{index}]", f"must be a request name (a string), not {name!r}"))
        elif name not in known:
            result.errors.append(FieldError(
                f"{path}[{index}]",
                f"no request named {name!r} in this claim; use one of: {valid}"))


def _check_configs(raw: Any, path: str, requests: list[_Request], known: set[str],
                   kind: str, result: ValidationResult) -> None:
    if raw is None:
        return
    if not isinstance(raw, list):
        result.errors.append(FieldError(path, "must be a list of device configurations"))
        return
    for index, config in enumerate(raw):
        config_path = f"{path}[{index}]"
        if not isinstance(config, Mapping):
            result.errors.append(FieldError(config_path, "must be an object with opaque"))
            continue
        _check_request_names(config.get("requests"), f"{config_path}.requests", known, result)
        opaque = config.get("opaque")
        if not isinstance(opaque, Mapping) or opaque.get("driver") != NVIDIA_GPU_DRIVER:
            continue
        parameters_path = f"{config_path}.opaque.parameters"
        findings = validate_nvidia_parameters(opaque.get("parameters"), parameters_path)
        result.errors.extend(findings)
        if not findings:
            _warn_about_nvidia_config(opaque["parameters"], config, config_path, requests,
                                      kind, result)


def _warn_about_nvidia_config(parameters: Mapping[str, Any], config: Mapping[str, Any],
                              path: str, requests: list[_Request], kind: str,
                              result: ValidationResult) -> None:
    config_kind = parameters.get("kind")
    sharing = parameters.get("sharing") or {}
    strategy = sharing.get("strategy")
    mps_config = sharing.get("mpsConfig") if strategy == MPS else None
    for name, since in facts.MPS_CONFIG_FIELDS_SINCE.items() if isinstance(mps_config, Mapping) else ():
        if name in mps_config:
            older = facts.DRIVER_RELEASES[facts.driver_release_index(since) - 1]
            result.warnings.append(_warning(
                f"{_short(path)}: mpsConfig.{name} needs NVIDIA DRA driver {since}+; "
                f"{older} and older refuse this config when the pod starts"))
    if kind == "ResourceClaimTemplate" and strategy in (TIME_SLICING, MPS):
        # Every pod gets its own claim from a template, so the GPU is shared only by the
        # containers of one pod.  Pods share a GPU through one ResourceClaim.
        result.warnings.append(_warning(
            f"{_short(path)}: {strategy} in a template shares a GPU only inside one pod; "
            "to share across pods use a ResourceClaim"))
    # The driver applies a GpuConfig only to full GPUs and a MigDeviceConfig only to MIG
    # devices; a config aimed at the other kind is silently skipped.
    mismatched_class = {GPU_CONFIG: MIG_DEVICE_CLASS, MIG_DEVICE_CONFIG: GPU_DEVICE_CLASS}.get(config_kind)
    if mismatched_class is None:
        return
    named = config.get("requests") or []
    targets = [r for r in requests if r.name in named] if named else requests
    for request in targets:
        if request.device_classes and all(c == mismatched_class for c in request.device_classes):
            right = MIG_DEVICE_CONFIG if config_kind == GPU_CONFIG else GPU_CONFIG
            result.warnings.append(_warning(
                f"{_short(path)}: the driver ignores a {config_kind} for {mismatched_class} "
                f"request '{request.name}'; use {right}"))


def _short(path: str) -> str:
    """A field path without the spec prefix, to keep warnings within 120 characters."""
    return path.split(".devices.", 1)[-1]


def _warning(text: str) -> str:
    if len(text) <= MAX_WARNING_LENGTH:
        return text
    return text[: MAX_WARNING_LENGTH - 3] + "..."

