"""A claim's constraints as the search adds and removes devices (upstream matchAttributeConstraint
and distinctAttributeConstraint, structured/internal/experimental).

Attribute values are compared by kind (a string never equals an int).  With
DRAListTypeAttributes, every value is a set (a scalar a set of one): matchAttribute keeps the
intersection of all devices' sets, which must stay non-empty; distinctAttribute needs each new
device's set disjoint from the others'.  Without it, a list value matches nothing.
"""

from __future__ import annotations

from typing import Any

from kubectl_gpu.dra.devices import Device
from kubectl_gpu.dra.values import Semver

from .requests import Constraint

_NO_SET = None


def lookup_attribute(device: Device, qualified: str) -> Any:
    """lookupAttribute: the device's value of a fully qualified attribute name, or None."""
    domain, slash, name = qualified.partition("/")
    if not slash:
        return None  # not a fully qualified name
    return device.attributes.get(domain, {}).get(name)


def _typed(value: Any) -> tuple[str, Any] | None:
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, Semver):
        return ("version", str(value))
    return None


def _as_set(value: Any) -> tuple[str, frozenset] | None:
    """attributeAsSet: (kind, values) of a scalar or list attribute."""
    items = value if isinstance(value, list) else [value]
    typed = [_typed(item) for item in items]
    if not typed or any(t is None for t in typed):
        return None
    kinds = {t[0] for t in typed}  # type: ignore[index]
    if len(kinds) != 1:
        return None
    return kinds.pop(), frozenset(t[1] for t in typed)  # type: ignore[index]


class ConstraintState:
    """One constraint while the search runs: ``add`` says whether a device may join, and records
    it; every successful add is undone by exactly one ``remove`` with the same arguments."""

    def __init__(self, constraint: Constraint, list_type_attributes: bool) -> None:
        self.requests = frozenset(constraint.requests)
        self.match = constraint.match_attribute is not None
        self.attribute = constraint.match_attribute if self.match else constraint.distinct_attribute or ""
        self.list_type_attributes = list_type_attributes
        self.count = 0
        self.first: Any = None  # matchAttribute, scalar: the first device's typed value
        self.intersection: tuple[str, frozenset] | None = None  # matchAttribute with list attributes
        self.by_request: dict[str, Any] = {}  # distinctAttribute: upstream keys values by request name

    def applies(self, request: str, sub_request: str) -> bool:
        if not self.requests:
            return True
        return request in self.requests or (bool(sub_request) and f"{request}/{sub_request}" in self.requests)

    def add(self, request: str, sub_request: str, device: Device) -> bool:
        if not self.applies(request, sub_request):
            return True
        value = lookup_attribute(device, self.attribute)
        if value is None:
            return False
        return self._add_match(value) if self.match else self._add_distinct(request, value)

    def remove(self, request: str, sub_request: str) -> None:
        if not self.applies(request, sub_request):
            return
        if not self.match:
            self.by_request.pop(request, None)
        self.count -= 1

    def _add_match(self, value: Any) -> bool:
        if self.list_type_attributes:
            as_set = _as_set(value)
            if as_set is None:
                return False
            if self.count == 0:
                self.intersection = as_set
            else:
                assert self.intersection is not None
                kind, values = self.intersection
                if kind != as_set[0] or not values & as_set[1]:
                    return False
                self.intersection = (kind, values & as_set[1])
        else:
            typed = _typed(value)
            if self.count == 0:
                self.first = typed
            elif typed is None or typed != self.first:
                return False
        self.count += 1
        return True

    def _add_distinct(self, request: str, value: Any) -> bool:
        if self.count > 0 and not self._distinct(value):
            return False
        self.by_request[request] = value
        self.count += 1
        return True

    def _distinct(self, value: Any) -> bool:
        if self.list_type_attributes:
            new = _as_set(value)
            if new is None:
                return False
            for other in self.by_request.values():
                existing = _as_set(other)
                if existing is not None and existing[0] == new[0] and existing[1] & new[1]:
                    return False
            return True
        typed = _typed(value)
        if typed is None:
            return not self.by_request  # upstream: an unknown kind fails each comparison
        return all(_typed(other) != typed for other in self.by_request.values())
