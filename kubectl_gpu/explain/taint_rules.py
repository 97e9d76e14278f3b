"""DeviceTaintRule objects (KEP-5055) read into the allocator's TaintRules: each adds its taint to
every device its deviceSelector names by driver, pool and device, as if the driver had published
it (k8s.io/api resource/v1beta2 DeviceTaintRuleSpec; the scheduler's device taint tracker applies
them when DRADeviceTaintRules is on)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from kubectl_gpu.allocator import TaintRule
from kubectl_gpu.dra.devices import Taint
from kubectl_gpu.dra.facts import DEVICE_TAINT_RULE_VERSIONS, DRA_GROUP

RULE_API_VERSIONS = frozenset(f"{DRA_GROUP}/{version}" for version, _ in DEVICE_TAINT_RULE_VERSIONS)


class InvalidTaintRule(ValueError):
    """A DeviceTaintRule this tool (and the API server) cannot accept; the message says what to fix."""


def is_device_taint_rule(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "DeviceTaintRule" and obj.get("apiVersion") in RULE_API_VERSIONS


def taint_rules(objects: Iterable[Mapping[str, Any]]) -> list[TaintRule]:
    rules = []
    for obj in objects:
        rule = read_taint_rule(obj)
        if rule is not None:
            rules.append(rule)
    return rules


def read_taint_rule(obj: Mapping[str, Any]) -> TaintRule | None:
    """The rule, or None when it selects no device: without a deviceSelector nothing is selected
    (an empty one selects every device)."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    where = f"DeviceTaintRule {meta.get('name') or '<unnamed>'}"
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        raise InvalidTaintRule(f"{where}: spec must be an object with deviceSelector and taint")
    selector = spec.get("deviceSelector")
    if selector is None:
        return None
    if not isinstance(selector, Mapping):
        raise InvalidTaintRule(f"{where}: spec.deviceSelector must be an object (driver, pool, device)")
    older = [name for name in ("deviceClassName", "selectors") if selector.get(name)]
    if older:
        # Kubernetes 1.33-1.34's alpha fields: the scheduler then also checked the class's and
        # these CEL selectors.  Tainting every device of the pool would overstate the rule.
        raise InvalidTaintRule(f"{where}: spec.deviceSelector.{older[0]} is not modelled (Kubernetes 1.35 "
                               "removed it); select the devices by driver, pool and device")
    taint = spec.get("taint")
    if not isinstance(taint, Mapping) or not isinstance(taint.get("key"), str) or not taint.get("key"):
        raise InvalidTaintRule(f"{where}: spec.taint needs a key and an effect")
    fields = {name: selector.get(name) or "" for name in ("driver", "pool", "device")}
    if any(not isinstance(value, str) for value in fields.values()):
        raise InvalidTaintRule(f"{where}: spec.deviceSelector's driver, pool and device must be strings")
    return TaintRule(Taint(taint["key"], str(taint.get("value") or ""), str(taint.get("effect") or "")),
                     **fields)
