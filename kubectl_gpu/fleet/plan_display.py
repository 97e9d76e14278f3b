"""The plan for people: a workload table, then one picture per wave."""
from __future__ import annotations

from collections.abc import Sequence

from kubectl_gpu.prose import wrapped

from .capacity import _text
from .kueue import KueuePlan
from .queues import QueueWrite
from .migration_plan import MigrationPlan, Wave
from .workloads import STATUSES, density_warning

BAR_WIDTH = 30


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["   ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]


def _bar(used: int, total: int) -> str:
    if total <= 0:
        return "[" + " " * BAR_WIDTH + "]"
    filled = round(BAR_WIDTH * used / total)
    return "[" + "#" * filled + "." * (BAR_WIDTH - filled) + "]"


def render_plan(plan: MigrationPlan, wide: bool = False, headers: bool = True, width: int | None = None) -> str:
    """The default workload table fits kubectl's 80 columns: what each workload becomes, or why
    it cannot (a sentence), is a line under the table; -o wide makes it the last column.  On a
    terminal (`width`) those sentences and a wave's refusals are wrapped to it, as describe's
    findings are (kubectl_gpu/prose.py); piped, each stays one line."""
    lines: list[str] = []
    counts = {s: sum(1 for w in plan.workloads if w.status == s) for s in STATUSES}
    lines.append("WORKLOADS (" + ", ".join(f"{n} {s}" for s, n in counts.items() if n) + ")")
    if plan.workloads:
        # kind/name in one column, as `kubectl get` names objects of several kinds (and as -o name does).
        header = ["NAMESPACE", "WORKLOAD", "STATUS", "PODS", "LEGACY/POD"] + (["BECOMES / WHY NOT"] if wide else [])
        rows, details = [header], []
        for w in plan.workloads:
            legacy = ",".join(f"{k}={_text(v)}" for k, v in sorted(w.legacy.items())) or "-"
            detail = "; ".join(w.reasons) if w.reasons else ", ".join(c["metadata"]["name"] for c in w.claims) or "-"
            workload = f"{w.kind.lower()}/{w.name}"
            rows.append([w.namespace or "-", workload, w.status, str(w.pods), legacy] + ([detail] if wide else []))
            details.extend(wrapped(f"  {w.namespace or '-'}/{workload}: {detail}", width, " " * 4))
        lines.extend(_table(rows)[0 if headers else 1:])
        if not wide:
            lines.append("")
            lines.extend(details)
    lines.append("")
    dra = [n for n in plan.nodes if n.dra]
    legacy_nodes = [n for n in plan.nodes if not n.dra]
    lines.append(f"GPU NODES: {len(dra)} on the DRA driver ({', '.join(n.name for n in dra) or 'none'}), "
                 f"{len(legacy_nodes)} on the device plugin; DRA nodes are labelled "
                 + " or ".join(str(label) for label in plan.dra_labels))
    predicted = [n.name for n in legacy_nodes if n.predicted]
    if predicted:
        lines.append(f"  devices of {len(predicted)} node(s) not yet on DRA are predicted from their GPU Feature "
                     "Discovery labels")
    for pool in plan.shared_pools:
        lines.append(f"  SHARED GPUS: {pool.describe(plan.every_gpu_node_shares)}")
    for w in plan.workloads:
        if w.slots is not None:
            warning = density_warning(w.slots, w.pods, w.claims)
            lines.append(f"  SLOTS: {w.ref}: {w.slots.describe()}" + (f"; {warning}" if warning else ""))
    for wave in plan.waves:
        lines.append("")
        lines.extend(_wave(wave, width))
    if plan.unplaced:
        lines.append("")
        lines.append(f"NOT PLACED: {len(plan.unplaced)} workload(s) fit on no DRA node even after the last wave: "
                     + ", ".join(plan.unplaced[:10]))
    return "\n".join(lines) + "\n"


def _wave(wave: Wave, width: int | None) -> list[str]:
    title = f"WAVE {wave.index}: " + (f"switch {len(wave.nodes)} node(s): {', '.join(wave.nodes)}" if wave.nodes
                                      else "no node switch (DRA nodes have room already)")
    lines = [title + ("  -- REFUSED" if wave.refused else "")]
    for reason in wave.refused:
        lines.extend(wrapped(f"  refused: {reason}", width, " " * 11))
    if wave.nodes and not wave.refused:
        free_before = ", ".join(f"{k}={_text(v)}" for k, v in sorted(wave.legacy_free_before.items())) or "nothing"
        lines.append(f"  drain:   {len(wave.moved_pods)} legacy pod(s) move to the {wave.legacy_nodes_left} legacy "
                     f"node(s) left (free before: {free_before})")
        for check in wave.pdbs:
            lines.append(f"  budget:  {check.pdb} allows {check.allowed} disruption(s), evicts {check.pods}")
    if wave.workloads:
        lines.append(f"  migrate: {', '.join(wave.workloads)}")
    for change in wave.quotas:
        lines.append(f"  quota:   {change}")
    if not wave.refused:
        lines.append(f"  DRA:     {_bar(wave.dra_devices_used, wave.dra_devices)} {wave.dra_devices_used}/"
                     f"{wave.dra_devices} devices used on {wave.dra_nodes} node(s)"
                     + (f" ({wave.dra_devices_allocated} held by claims allocated before)"
                        if wave.dra_devices_allocated else ""))
        free_after = ", ".join(f"{k}={_text(v)}" for k, v in sorted(wave.legacy_free_after.items())) or "nothing"
        lines.append(f"  legacy:  {wave.legacy_nodes_left} node(s) left, free after the wave: {free_after}")
    return lines


def render_kueue(kueue: KueuePlan) -> str:
    """What Kueue needs (its deviceClassMappings and changed ClusterQueues are in -o yaml)."""
    if not kueue.notes:
        return ""
    lines = ["", "KUEUE"]
    lines += [f"  {note}" for note in kueue.notes]
    for mapping in kueue.mappings:
        lines.append(f"  deviceClassMappings: {mapping['name']} <- {', '.join(mapping['deviceClassNames'])}")
    return "\n".join(lines) + "\n"


def render_volcano(writes: Sequence[QueueWrite]) -> str:
    """What Volcano's Queues need (the queues as they should become are in -o yaml)."""
    if not writes:
        return ""
    lines = ["", "VOLCANO QUEUES"]
    for write in writes:
        lines.append(f"  {write.ref}: " + (f"add {', '.join(write.added)}" if write.added else "unchanged"))
        lines += [f"    {note.severity.value}: {note.message}" for note in write.notes]
    return "\n".join(lines) + "\n"
