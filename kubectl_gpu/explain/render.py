"""Render an Explanation: kubectl-style tables for people, a stable dict (JSON/YAML) for scripts."""

from __future__ import annotations

import copy
import dataclasses
import operator
from typing import TYPE_CHECKING, Any

from kubectl_gpu.dra.facts import REPORT_API_VERSION
from .inputs import Explanation
from .model import ERROR, ClaimError, ClaimResult

from kubectl_gpu.kubetable import KubeTable, Line, PlainConsole, Sentence

if TYPE_CHECKING:  # rich is loaded by the table printer in colour only: -o json/yaml never import it
    from rich.console import Console

def to_dict(explanation: Explanation, devices: bool = True) -> dict[str, Any]:
    """Stable structure: field order is the dataclasses' order; ``devices=False`` drops the
    per-device records (they are the bulk of the output on large clusters)."""
    items = []
    for item in explanation.items:
        data = _plain(item)
        data = {"result": "error" if isinstance(item, ClaimError) else "explained", **data}
        if not devices:
            for request in data.get("requests", []):
                for alternative in request["alternatives"]:
                    alternative.pop("deviceResults", None)
        items.append(data)
    return {
        "apiVersion": REPORT_API_VERSION,
        "kind": "Explanation",
        "allocatable": explanation.allocatable,
        "devices": explanation.devices,
        "resourceSlices": explanation.slices,
        "deviceClasses": list(explanation.classes),
        "items": items,
    }


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


def _plain(value: Any) -> Any:
    """``dataclasses.asdict``'s result, built without its deep copy of every string and number:
    the same dicts (fields in order), lists and tuples, each made new.  For the 8,000 device
    results of a 1,000-node cluster, to_dict and json.dumps (indented, as -o json) took 4,126 M
    instructions with asdict and take 3,037 M (callgrind)."""
    cls = value.__class__
    if cls in _ATOMIC or value is None:
        return value  # immutable: what copy.deepcopy gives back
    fields = _FIELDS.get(cls)
    if fields is None and dataclasses.is_dataclass(cls):
        names = tuple(f.name for f in dataclasses.fields(cls))
        # Keys as the Kubernetes API spells them (camelCase), one contract for every -o json.
        fields = _FIELDS[cls] = (tuple(_camel(n) for n in names),
                                 operator.attrgetter(*names) if len(names) > 1 else lambda v: (getattr(v, names[0]),))
    if fields is not None:
        names, values = fields
        return dict(zip(names, map(_plain, values(value))))
    if cls is tuple:
        return tuple([_plain(v) for v in value])
    if cls is list:
        return [_plain(v) for v in value]
    if cls is dict:
        return {_plain(k): _plain(v) for k, v in value.items()}
    return copy.deepcopy(value)  # anything else (a dataclass was handled above), as asdict copies it


_ATOMIC = frozenset({str, int, float, bool})
# a dataclass -> its field names, and a getter of their values in that order
_FIELDS: dict[type, tuple[tuple[str, ...], Any]] = {}


def render_table(explanation: Explanation, console: Console | PlainConsole, wide: bool = False,
                 headers: bool = True) -> None:
    """Tables and verdicts for people, on a rich Console, or on a PlainConsole where there is no
    colour (kubectl_gpu/cli/console.py text_console): the same characters, without loading rich."""
    console.print(
        Line(
            f"{explanation.devices} devices in {explanation.slices} ResourceSlices; "
            f"DeviceClasses given: {', '.join(explanation.classes) or 'none'}"
        )
    )
    for item in explanation.items:
        console.print()
        if isinstance(item, ClaimError):
            console.print(Line(f"{item.kind} {_ref(item.namespace, item.name)}: INVALID", style="bold red"))
            _sentence(console, f"  {item.error}")
            continue
        _render_claim(item, console, wide, headers)


def _ref(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


def _sentence(console: Console | PlainConsole, line: str, style: str = "") -> None:
    """A line of prose (a verdict, a note, a reason) wrapped to the terminal as describe wraps its
    findings, the lines after the first indented under its text (kubectl_gpu/prose.py); piped, one line."""
    console.print(Sentence(Line(line, style=style), " " * 4))


def _render_claim(claim: ClaimResult, console: Console | PlainConsole, wide: bool, headers: bool = True) -> None:
    style = "bold green" if claim.allocatable else "bold red"
    console.print(Line(f"{claim.kind} {_ref(claim.namespace, claim.name)} ({claim.api_version})", style="bold"))
    _sentence(console, f"  {claim.verdict}", style)
    if claim.allocation:
        chosen = ", ".join(f"{d.request}: {d.pool}/{d.device}" for d in claim.allocation)
        _sentence(console, f"  devices the scheduler would allocate: {chosen}")
    for note in claim.notes:
        _sentence(console, f"  note: {note}")
    # Within 80 columns by default (kubectl's tables); where the class came from, how many devices
    # are in it and the best node are -o wide's.
    columns = ["REQUEST", "CLASS", "NEEDS", "MATCH", "FREE", "RESULT"]
    table = KubeTable(*(columns[:3] + ["IN CLASS"] + columns[3:5] + ["BEST NODE"] + columns[5:] if wide else columns),
                      wide=wide, show_header=headers)
    for request in claim.requests:
        for alternative in request.alternatives:
            marker = " *" if request.mode == "firstAvailable" and alternative.name == request.chosen else ""
            needs = "all" if alternative.allocation_mode == "All" else str(alternative.count)
            if alternative.capacity_requests:
                needs += " (" + ", ".join(f"{k}={v}" for k, v in alternative.capacity_requests.items()) + ")"
            source = "" if alternative.class_source == "given" or not wide else f" ({alternative.class_source})"
            cells = [Line(alternative.name + marker), Line(alternative.device_class + source), Line(needs),
                     str(alternative.matched), str(alternative.free),
                     _result(alternative.allocatable, alternative.fatal_error)]
            if wide:
                cells[3:3] = [str(alternative.in_class)]
                cells[6:6] = [f"{alternative.best_node or '-'} ({alternative.best_node_free})"]
            table.add_row(*cells)
    console.print(table)
    for request in claim.requests:
        for alternative in request.alternatives:
            if alternative.verdict in claim.verdict:
                continue  # the claim's verdict above already gives this reason: print it once
            style = "green" if alternative.allocatable else "red"
            _sentence(console, f"  {alternative.name}: {alternative.verdict}", style)
    # Which CEL engine evaluated a selector is an implementation detail: JSON keeps it, people don't need it.
    # The expression itself (long CEL) is -o wide's; the selector's name says which one it is.
    selectors = KubeTable("REQUEST", "SELECTOR", *(["EXPRESSION"] if wide else []), "MATCHED", "REJECTED", "ERRORS",
                          wide=wide, show_header=headers)
    rows = 0
    for request in claim.requests:
        for alternative in request.alternatives:
            for selector in alternative.selectors:
                rows += 1
                selectors.add_row(
                    Line(alternative.name),
                    Line(selector.selector),
                    *([Line(" ".join(selector.expression.split()))] if wide else []),
                    str(selector.matched),
                    str(selector.rejected),
                    Line(str(selector.errors) if not selector.compile_error else "does not compile",
                         style="red" if selector.errors or selector.compile_error else ""),
                )
    if rows:
        console.print(selectors)
    for request in claim.requests:
        for alternative in request.alternatives:
            failing = [d for d in alternative.device_results if d.result == ERROR]
            for device in failing[: None if wide else 3]:
                _sentence(console, f"  {alternative.name}: {device.device}: {device.error}", "red")
            if len(failing) > 3 and not wide:
                console.print(Line(f"  ... {len(failing) - 3} more devices fail the same way (-o wide lists them)"))
            if wide:
                for device in alternative.device_results:
                    if device.result == ERROR:
                        continue
                    state = device.result + (", free" if device.free else "")
                    if device.rejected_by:
                        state += f" (by {device.rejected_by})"
                    if device.taken_by:
                        state += f", held by {', '.join(device.taken_by)}"
                    if device.capacity:
                        state += f", {device.capacity}"
                    console.print(Line(f"  {alternative.name}: {device.device} [{device.node}]: {state}"))


def _result(allocatable: bool, fatal: str | None) -> Line:
    if fatal:
        return Line("ERROR", style="bold red")
    return Line("fits", style="green") if allocatable else Line("does not fit", style="red")
