"""Node selection as the allocator does it: a slice (or a device, with perDeviceNodeSelection) is
reachable from a node by name, from all nodes, or through a core/v1 NodeSelector
(k8s.io/component-helpers/scheduling/corev1/nodeaffinity: terms are ORed, a term's requirements
ANDed, a term without requirements matches nothing)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class Node:
    """A node the allocator places claims on: its name and labels."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    # Labels not known (explain without Node objects): every node selector is taken to match.
    unknown_labels: bool = False


class InvalidNodeSelector(ValueError):
    """A NodeSelector the scheduler cannot parse; the message names what is wrong."""


def node_matches(node: Node | None, node_name: str | None, all_nodes: bool, selector: Mapping[str, Any] | None) -> bool:
    """NodeMatches: by name, all nodes, or the selector (InvalidNodeSelector when it cannot be parsed)."""
    if node_name:
        return node is not None and node.name == node_name
    if all_nodes:
        return True
    if selector is not None:
        return selector_matches(selector, node)
    return False


def selector_matches(selector: Mapping[str, Any], node: Node | None) -> bool:
    if node is not None and node.unknown_labels:
        return True
    terms = selector.get("nodeSelectorTerms") or []
    if not isinstance(terms, list):
        raise InvalidNodeSelector("nodeSelectorTerms must be a list")
    return node is not None and any(_term_matches(term, node) for term in terms)


def _term_matches(term: Any, node: Node) -> bool:
    if not isinstance(term, Mapping):
        raise InvalidNodeSelector("a node selector term must be a map")
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False
    return (all(_requirement(r, node.labels) for r in expressions)
            and all(_requirement(r, {"metadata.name": node.name}, fields=True) for r in fields))


def _requirement(requirement: Any, values: Mapping[str, str], fields: bool = False) -> bool:
    if not isinstance(requirement, Mapping) or not isinstance(requirement.get("key"), str):
        raise InvalidNodeSelector("a node selector requirement needs a key")
    key, operator = requirement["key"], requirement.get("operator")
    wanted = [str(v) for v in requirement.get("values") or []]
    if fields and (key != "metadata.name" or operator not in ("In", "NotIn")):
        raise InvalidNodeSelector(f"matchFields supports metadata.name with In or NotIn, not {key} {operator}")
    present = key in values
    value = values.get(key)
    if operator == "In":
        return present and value in wanted
    if operator == "NotIn":
        return not present or value not in wanted
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt"):
        if len(wanted) != 1:
            raise InvalidNodeSelector(f"{operator} needs exactly one value")
        try:
            bound, actual = int(wanted[0]), int(value) if present else None
        except (TypeError, ValueError):
            return False
        return actual is not None and (actual > bound if operator == "Gt" else actual < bound)
    raise InvalidNodeSelector(f"{operator!r} is not a valid node selector operator")


def node_name_selector(node_name: str) -> dict[str, Any]:
    """The NodeSelector of an allocation bound to one node."""
    return {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}
