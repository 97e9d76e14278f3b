"""Label and field selectors with Kubernetes' syntax and meaning.

Label: ``a=b``, ``a==b``, ``a!=b``, ``a in (x,y)``, ``a notin (x)``, ``a``, ``!a``; terms are ANDed.
``!=`` and ``notin`` also match objects without the label, as in Kubernetes.
Field: ``path=value``, ``path==value``, ``path!=value`` over the field labels a kind supports.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable

_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_SET_TERM = re.compile(rf"^\s*({_KEY})\s+(in|notin)\s*\(([^()]*)\)\s*$")
_EQ_TERM = re.compile(rf"^\s*({_KEY})\s*(==|!=|=)\s*(\S*)\s*$")
_EXISTS_TERM = re.compile(rf"^\s*(!?)\s*({_KEY})\s*$")

Matcher = Callable[[dict], bool]


class SelectorError(ValueError):
    """A selector that does not parse or names an unsupported field."""


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str  # in | notin | exists | !exists  (=, == are "in"; != is "notin")
    values: frozenset[str]

    def matches(self, labels: dict) -> bool:
        present = self.key in labels
        if self.operator == "exists":
            return present
        if self.operator == "!exists":
            return not present
        if self.operator == "in":
            return present and str(labels[self.key]) in self.values
        return not present or str(labels[self.key]) not in self.values


def _split_terms(selector: str) -> list[str]:
    """Split on commas outside parentheses."""
    terms, depth, current = [], 0, []
    for ch in selector:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append("".join(current))
            current = []
        else:
            current.append(ch)
    terms.append("".join(current))
    return [t for t in terms if t.strip()]


def _check_value(value: str, selector: str) -> str:
    if not re.fullmatch(_VALUE, value) or len(value) > 63:
        raise SelectorError(f"unable to parse requirement: invalid label value {value!r} in selector {selector!r}")
    return value


def parse_label_selector(selector: str | None) -> list[Requirement]:
    requirements = []
    for term in _split_terms(selector or ""):
        if m := _SET_TERM.match(term):
            key, op, raw = m.group(1), m.group(3), m.group(4)
            values = frozenset(_check_value(v.strip(), selector) for v in raw.split(",") if v.strip())
            if not values:
                raise SelectorError(f"unable to parse requirement: {op} needs at least one value in {term!r}")
            requirements.append(Requirement(key, op, values))
        elif m := _EQ_TERM.match(term):
            key, op, value = m.group(1), m.group(3), m.group(4)
            requirements.append(Requirement(key, "notin" if op == "!=" else "in",
                                            frozenset({_check_value(value, selector)})))
        elif m := _EXISTS_TERM.match(term):
            requirements.append(Requirement(m.group(2), "!exists" if m.group(1) else "exists", frozenset()))
        else:
            raise SelectorError(f"unable to parse requirement {term.strip()!r} in label selector {selector!r}: "
                                f"use key=value, key!=value, key in (a,b), key notin (a,b), key or !key")
    return requirements


def field_value(obj: dict, path: str) -> str:
    """The string Kubernetes compares for a field label (missing -> empty, bools lower-case)."""
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict) and path == "source":  # events: source is {component, host}
        return str(value.get("component", ""))
    return str(value)


def parse_field_selector(selector: str | None, allowed: Iterable[str]) -> list[tuple[str, bool, str]]:
    """(path, must_equal, value) triples; unsupported paths raise like the API server does."""
    allowed = tuple(allowed)
    out = []
    for term in _split_terms(selector or ""):
        m = re.fullmatch(r"\s*([A-Za-z0-9_.]+)\s*(==|!=|=)\s*([^,]*?)\s*", term)
        if not m:
            raise SelectorError(f"invalid field selector term {term.strip()!r}: use field=value or field!=value")
        path, op, value = m.groups()
        if path not in allowed:
            raise SelectorError(f'field label not supported: {path} (supported: {", ".join(allowed)})')
        out.append((path, op != "!=", value))
    return out


def make_matcher(label_selector: str | None, field_selector: str | None, allowed_fields: Iterable[str]) -> Matcher:
    requirements = parse_label_selector(label_selector)
    fields = parse_field_selector(field_selector, allowed_fields)
    if not requirements and not fields:
        return lambda obj: True

    def matches(obj: dict) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(r.matches(labels) for r in requirements) and \
            all((field_value(obj, path) == value) == equal for path, equal, value in fields)

    return matches


def label_selector_matches(selector: dict, obj: dict) -> bool:
    """A metav1.LabelSelector object (matchLabels + matchExpressions) against ``obj``'s labels.

    As in Kubernetes (metav1.LabelSelectorAsSelector), an empty selector matches everything.
    """
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and key in labels and labels[key] in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
    return True
