"""Render an Explanation: kubectl-style tables for people, a stable dict (JSON/YAML) for scripts."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from .inputs import Explanation
from .model import ERROR, ClaimError, ClaimResult

if TYPE_CHECKING:  # rich is loaded by the table printer only: -o json/yaml never import it
    from rich.console import Console
    from rich.text import Text

API_VERSION = "kubectl-gpu.io/v1alpha1"


def to_dict(explanation: Explanation, devices: bool = True) -> dict[str, Any]:
    """Stable structure: field order is the dataclasses' order; ``devices=False`` drops the
    per-device records (they are the bulk of the output on large clusters)."""
    items = []
    for item in explanation.items:
        data = dataclasses.asdict(item)
        data = {"result": "error" if isinstance(item, ClaimError) else "explained", **data}
        if not devices:
            for request in data.get("requests", []):
                for alternative in request["alternatives"]:
                    alternative.pop("device_results", None)
        items.append(data)
    return {
        "apiVersion": API_VERSION,
        "kind": "Explanation",
        "allocatable": explanation.allocatable,
        "devices": explanation.devices,
        "resourceSlices": explanation.slices,
        "deviceClasses": list(explanation.classes),
        "items": items,
    }


def render_table(explanation: Explanation, console: Console, wide: bool = False) -> None:
    from rich.text import Text

    console.print(
        Text(
            f"{explanation.devices} devices in {explanation.slices} ResourceSlices; "
            f"DeviceClasses given: {', '.join(explanation.classes) or 'none'}"
        )
    )
    for item in explanation.items:
        console.print()
        if isinstance(item, ClaimError):
            console.print(Text(f"{item.kind} {_ref(item.namespace, item.name)}: INVALID", style="bold red"))
            console.print(Text(f"  {item.error}"))
            continue
        _render_claim(item, console, wide)


def _ref(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


def _render_claim(claim: ClaimResult, console: Console, wide: bool) -> None:
    from rich.text import Text

    from kubectl_gpu.kubetable import KubeTable

    style = "bold green" if claim.allocatable else "bold red"
    console.print(Text(f"{claim.kind} {_ref(claim.namespace, claim.name)} ({claim.api_version})", style="bold"))
    console.print(Text(f"  {claim.verdict}", style=style))
    for note in claim.notes:
        console.print(Text(f"  note: {note}"))
    table = KubeTable("REQUEST", "CLASS", "NEEDS", "IN CLASS", "MATCH", "FREE", "BEST NODE", "RESULT", wide=wide)
    for request in claim.requests:
        for alternative in request.alternatives:
            marker = " *" if request.mode == "firstAvailable" and alternative.name == request.chosen else ""
            needs = "all" if alternative.allocation_mode == "All" else str(alternative.count)
            if alternative.capacity_requests:
                needs += " (" + ", ".join(f"{k}={v}" for k, v in alternative.capacity_requests.items()) + ")"
            table.add_row(
                Text(alternative.name + marker),
                Text(alternative.device_class + ("" if alternative.class_source == "given" else f" ({alternative.class_source})")),
                Text(needs),
                str(alternative.in_class),
                str(alternative.matched),
                str(alternative.free),
                f"{alternative.best_node or '-'} ({alternative.best_node_free})",
                _result(alternative.allocatable, alternative.fatal_error),
            )
    console.print(table)
    for request in claim.requests:
        for alternative in request.alternatives:
            if alternative.verdict in claim.verdict:
                continue  # the claim's verdict above already gives this reason: print it once
            style = "green" if alternative.allocatable else "red"
            console.print(Text(f"  {alternative.name}: {alternative.verdict}", style=style))
    # Which CEL engine evaluated a selector is an implementation detail: JSON keeps it, people don't need it.
    selectors = KubeTable("REQUEST", "SELECTOR", "EXPRESSION", "MATCHED", "REJECTED", "ERRORS", wide=wide)
    rows = 0
    for request in claim.requests:
        for alternative in request.alternatives:
            for selector in alternative.selectors:
                rows += 1
                selectors.add_row(
                    Text(alternative.name),
                    Text(selector.selector),
                    Text(" ".join(selector.expression.split())),
                    str(selector.matched),
                    str(selector.rejected),
                    Text(str(selector.errors) if not selector.compile_error else "does not compile",
                         style="red" if selector.errors or selector.compile_error else ""),
                )
    if rows:
        console.print(selectors)
    for request in claim.requests:
        for alternative in request.alternatives:
            failing = [d for d in alternative.device_results if d.result == ERROR]
            for device in failing[: None if wide else 3]:
                console.print(Text(f"  {alternative.name}: {device.device}: {device.error}", style="red"))
            if len(failing) > 3 and not wide:
                console.print(Text(f"  ... {len(failing) - 3} more devices fail the same way (-o wide lists them)"))
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
                    console.print(Text(f"  {alternative.name}: {device.device} [{device.node}]: {state}"))


def _result(allocatable: bool, fatal: str | None) -> Text:
    from rich.text import Text

    if fatal:
        return Text("ERROR", style="bold red")
    return Text("fits", style="green") if allocatable else Text("does not fit", style="red")
