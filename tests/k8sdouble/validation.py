"""What the API server would reject with 422: metadata rules and Kubernetes' own OpenAPI schemas.

Schemas come from kubernetes-validate in strict mode, so unknown fields are rejected (the real
server drops them with a warning unless fieldValidation=Strict; a test double that is stricter
catches a v1beta1-shaped object sent as v1 instead of silently losing fields).
"""
from __future__ import annotations

import functools
import re
from typing import Any

import jsonschema
from kubernetes_validate import utils as kv_utils
from referencing import Registry, Resource

from .kinds import ResourceKind

DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
# Kinds whose names must be DNS labels rather than subdomains.
DNS_LABEL_NAMED = {"Namespace", "Service"}

Cause = dict[str, str]


def _cause(field: str, message: str, reason: str = "FieldValueInvalid") -> Cause:
    return {"reason": reason, "message": message, "field": field}


def _name_causes(kind: ResourceKind, name: str) -> list[Cause]:
    if kind.kind in DNS_LABEL_NAMED:
        if len(name) > 63 or not DNS_LABEL.match(name):
            return [_cause("metadata.name", f'Invalid value: "{name}": a lowercase RFC 1123 label must consist '
                                            f"of lower case alphanumeric characters or '-', at most 63 characters")]
    elif len(name) > 253 or not DNS_SUBDOMAIN.match(name):
        return [_cause("metadata.name", f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist '
                                        f"of lower case alphanumeric characters, '-' or '.', at most 253 characters")]
    return []


def _label_causes(labels: Any) -> list[Cause]:
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return [_cause("metadata.labels", "must be a map of string keys to string values")]
    causes = []
    for key, value in labels.items():
        prefix, _, name = str(key).rpartition("/")
        if (prefix and (len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix))) or len(name) > 63 \
                or not LABEL_NAME.match(name):
            causes.append(_cause("metadata.labels", f'Invalid value: "{key}": not a valid label key'))
        if not isinstance(value, str) or len(value) > 63 or (value and not LABEL_NAME.match(value)):
            causes.append(_cause(f"metadata.labels[{key}]", f'Invalid value: "{value}": a label value must be '
                                                            f"63 characters or less, alphanumeric, '-', '_' or '.'"))
    return causes


def metadata_causes(kind: ResourceKind, obj: dict) -> list[Cause]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return [_cause("metadata", "Required value: metadata is required", "FieldValueRequired")]
    name = meta.get("name")
    causes = []
    if name:
        causes += _name_causes(kind, str(name))
    elif not meta.get("generateName"):
        causes.append(_cause("metadata.name", "Required value: name or generateName is required",
                             "FieldValueRequired"))
    return causes + _label_causes(meta.get("labels"))


@functools.lru_cache(maxsize=256)
def _strict_validator(kubernetes_version: str, api_version: str, kind: str) -> Any:
    """kubernetes_validate.validate(strict=True), with the parsed schemas kept between calls.

    kubernetes_validate re-reads its multi-megabyte definitions file on every call (~15 ms); the
    API double validates every write, so it compiles each (version, kind) validator once.
    Returns None when Kubernetes has no schema for the kind at that version.
    """
    version = [v for v in kv_utils.all_versions()
               if kv_utils.major_minor(v) <= kv_utils.major_minor(kubernetes_version)][-1]
    schema_dir = f"kubernetes-json-schema/v{version}-local-strict"
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        schema = kv_utils.schema_contents(f"{schema_dir}/{kind.lower()}-{group_version}.json", kubernetes_version)
    except FileNotFoundError:
        return None
    definitions = _definitions(schema_dir, kubernetes_version)
    registry = Resource.from_contents(definitions) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


@functools.lru_cache(maxsize=4)
def _definitions(schema_dir: str, kubernetes_version: str) -> Any:
    return kv_utils.schema_contents(f"{schema_dir}/_definitions.json", kubernetes_version)


def schema_causes(obj: dict, kubernetes_version: str) -> list[Cause]:
    validator = _strict_validator(kubernetes_version, str(obj.get("apiVersion")), str(obj.get("kind")))
    if validator is None:
        return []
    error = jsonschema.exceptions.best_match(validator.iter_errors(obj))
    if error is None:
        return []
    field = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.path).lstrip(".") or "<root>"
    return [_cause(field, error.message)]
