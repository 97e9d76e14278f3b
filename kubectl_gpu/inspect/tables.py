"""Tables for people (kubectl's look, kubectl_gpu/kubetable.py).  Pure: reports in, lists of
Printables (tables, Lines, Sentences) out; the CLI prints them, on rich's console in colour and
on a PlainConsole without (kubectl_gpu/cli/console.py print_lines), so that a piped describe
never loads rich."""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any, Iterable

from kubectl_gpu.inspect.cluster import ClusterReport
from kubectl_gpu.inspect.findings import Finding, Severity
from kubectl_gpu.kubetable import KubeTable, Line, Printable, Sentence
from kubectl_gpu.inspect.nodes import ALLOCATED, FREE, SHARED, NodeReport

if TYPE_CHECKING:
    # Only their tables need them: the cluster summary's 1,000 nodes load neither (~0.04 s).
    from kubectl_gpu.inspect.claims import ClaimReport
    from kubectl_gpu.inspect.doctor import DoctorReport  # loads every check: describe draws none
    from kubectl_gpu.inspect.pods import AllocatedDeviceRow, PodReport

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
_STATE_STYLE = {FREE: "green", ALLOCATED: "", SHARED: "magenta"}


def _table(*columns: str, title: str | None = None, wide: bool = False) -> KubeTable:
    return KubeTable(*columns, title=title, wide=wide)


def _dash(value: Any) -> str:
    return "-" if value in (None, "", [], ()) else str(value)


def findings(items: Iterable[Finding], title: str = "Findings") -> list[Printable]:
    """Each finding once, as lines: a message and a fix are sentences, and a suggested command must
    be printed whole so it can be copied (a table cell would elide or wrap it).  Each line,
    `  SEVERITY subject (code): message` and `    fix: ...`, is wrapped to the terminal's width on a
    terminal, one line piped (kubectl_gpu/prose.py)."""
    items = list(dict.fromkeys(items))
    if not items:
        return [Line(f"{title}: none", style="green")]
    parts: list[Printable] = [Line(f"{title}:", style="bold")]
    for f in items:
        severity = f.severity.value.upper()
        parts += [Sentence(Line("  ", (severity, _STYLE[f.severity]), f" {f.subject} ({f.code}): {f.message}"),
                           " " * (3 + len(severity))),
                  Sentence(Line(f"    fix: {f.fix}"), " " * 9)]
    return parts


def cluster(report: ClusterReport, wide: bool = False, headers: bool = True) -> list[Printable]:
    """One row per GPU node.  The default columns fit kubectl's 80; -o wide adds how the DRA
    GPUs are used, the device plugin's resources and pods, products and memory.  DRA GPUS and the
    DRA USE bar count DRA devices only; a device plugin's GPUs are the LEGACY USE bar (what its pods
    hold) and its resources (LEGACY (ALLOCATABLE)): never one number under the same name."""
    if wide:
        columns = ["NODE", "DRA", "DRA GPUS", "ALLOCATED", "SHARED", "FREE", "MIG (IN USE)", "DRA USE",
                   "LEGACY USE", "LEGACY (ALLOCATABLE)", "LEGACY PODS", "PRODUCT", "MEMORY", "FINDINGS"]
    else:
        # No FREE: the bars say how many of the node's GPUs are in use (used/total).
        columns = ["NODE", "DRA", "DRA GPUS", "DRA USE", "LEGACY USE", "FINDINGS"]
    table = KubeTable(*columns, wide=wide, show_header=headers)
    for node in report.nodes:
        gpus = node.gpu_rows
        row: list[Any] = [node.name, "yes" if node.dra_label else "no", str(node.gpu_count)]
        if wide:
            mig = f"{len(node.mig_rows)} ({node.mig_used})" if node.mig_rows else "-"
            row += [str(node.count(ALLOCATED)), str(node.count(SHARED)), str(node.count(FREE)), mig, bar(node),
                    legacy_bar(node), _dash(", ".join(f"{r.name}={r.allocatable}" for r in node.legacy_resources)),
                    str(len(node.legacy_pods))]
            products = {r.device.product for r in (*gpus, *node.mig_rows) if r.device.product}
            row += [_dash(", ".join(sorted(products))),
                    _dash(", ".join(sorted({r.device.memory for r in gpus if r.device.memory})))]
        else:
            row += [bar(node), legacy_bar(node)]
        row.append(Line(", ".join(f.code for f in node.findings), style="bold red") if node.findings else "-")
        table.add_row(*row)
    parts: list[Printable] = [table if report.nodes else Line("No GPU nodes found.")]
    if report.shared_pools:
        pools = _table("POOL (NOT NODE-LOCAL)", "DEVICES", "ALLOCATED")
        for pool, rows in report.shared_pools:
            pools.add_row(pool, str(len(rows)), str(sum(1 for r in rows if r.state != FREE)))
        parts += [Line(""), pools]
    products = report.by_product()
    if products:
        by_product = _table("PRODUCT", "GPUS", "ALLOCATED", "SHARED", "FREE", "MIG (IN USE)", wide=wide)
        for p in products:
            mig = f"{p['migDevices']} ({p['migDevicesInUse']})" if p["migDevices"] else "-"
            by_product.add_row(p["product"], str(p["gpus"]), str(p["allocated"]), str(p["shared"]), str(p["free"]), mig)
        parts += [Line(""), by_product]
    t = report.totals()
    mig = f", {t['migDevices']} MIG device(s) ({t['migDevicesInUse']} in use)" if t["migDevices"] else ""
    parts += [Line(""), Line(f"{t['nodes']} GPU node(s) ({t['draNodes']} DRA), {t['gpus']} DRA GPU(s): "
                             f"{t['allocated']} allocated, {t['shared']} shared, {t['free']} free{mig}; "
                             f"{t['legacyGpuPods']} pod(s) holding legacy GPUs")]
    if report.findings:
        parts += [Line(""), *findings(report.findings)]
    return parts


def bar(report: NodeReport) -> Line:
    """DRA GPUs used/free at a glance: `██░░░░░░ 2/8`; `█[■■□□□□□] 2/2` for a GPU split into 7 MIG
    devices (2 in use); `!` marks a node whose GPUs are counted twice (device plugin and DRA
    driver).  Drawn once per node (NodeSummary.bar)."""
    summary = report.summary
    return Line(summary.bar, style="bold red" if summary.double_counted and summary.slots else "")


def legacy_bar(report: NodeReport) -> Line:
    """The device plugin's GPUs, as many used as its pods hold (NodeSummary.legacy_bar)."""
    summary = report.summary
    return Line(summary.legacy_bar, style="bold red" if summary.double_counted and summary.legacy_slots else "")


def picture(report: NodeReport) -> Line:
    """The one bar a node's line in --tree carries beside its kind (DRA or device plugin)."""
    return bar(report) if report.summary.slots else legacy_bar(report)


Branch = tuple[str, list["Branch"]]  # a line and the lines under it


def tree(reports: Iterable[NodeReport]) -> list[Printable]:
    """node -> GPU -> pod, MIG devices under their GPU: who holds what, one line each (--tree)."""
    lines: list[Printable] = []
    for report in reports:
        kind = f"DRA ({report.dra_label})" if report.dra_label else "device plugin"
        lines.append(Line((report.name, "bold"), f"  {kind}  ", picture(report)))
        branches: list[Branch] = [(_device_line(row), _holders(row)) for row in report.gpu_rows]
        migs: dict[str, list[Any]] = {}
        for row in report.mig_rows:
            migs.setdefault(row.device.parent_uuid or row.device.name, []).append(row)
        for parent, rows in migs.items():
            product = next((r.device.product for r in rows if r.device.product), None)
            branches.append((f"GPU {parent}  {_dash(product)}  MIG: {len(rows)} device(s)",
                             [(_device_line(row), _holders(row)) for row in rows]))
        if not report.devices:
            branches += [(f"{r.name}: {r.allocatable} allocatable (device plugin)", [])
                         for r in report.legacy_resources]
        for pod in report.legacy_pods:
            requests = ", ".join(f"{r.resource}={r.amount}" for r in pod.requests)
            branches.append((f"pod {pod.ref}  {requests} (device plugin)", []))
        lines += [Line(line) for line in _tree_lines(branches, "")]
        lines.append(Line(""))
    if not lines:
        return [Line("No GPU nodes found.")]
    return lines


def _tree_lines(branches: list[Branch], prefix: str) -> list[str]:
    out = []
    for i, (label, children) in enumerate(branches):
        last = i == len(branches) - 1
        out.append(prefix + ("└── " if last else "├── ") + label)
        out += _tree_lines(children, prefix + ("    " if last else "│   "))
    return out


def _device_line(row: Any) -> str:
    d = row.device
    details = [x for x in (d.product, d.mig_profile, d.memory) if x]
    return f"{d.name}  {'  '.join(details)}  {row.state}"


def _holders(row: Any) -> list[Branch]:
    out: list[Branch] = []
    for h in row.holders:
        pods = ", ".join(h.pods) if h.pods else "no pod yet"
        out.append((f"pod {pods}  (claim {h.claim}, request {h.request})", []))
    return out


def node(report: NodeReport, wide: bool = False) -> list[Printable]:
    publishing = report.publishing_drivers
    label = (f"yes ({report.dra_label})" if report.dra_label
             else f"yes (publishes {', '.join(publishing)} ResourceSlices)" if publishing else "no")
    parts: list[Printable] = [Line(("Node: ", "bold"), report.name, ("   DRA node: ", "bold"), label)]
    # The default columns fit 80: which pods hold each device; what the device is (product,
    # memory, MIG profile) is said once per kind above the table.  The claims (named after their
    # pod, and longer), UUIDs (40 characters) and the driver's pools are -o wide's.
    columns = ["DEVICE", "TYPE", "STATE", "PODS"]
    if wide:
        columns += ["CLAIM", "PRODUCT", "MEMORY", "MIG PROFILE", "CONSUMED", "UUID", "DRIVER", "POOL", "SHARE ID"]
    table = _table(*columns, title="DRA devices (ResourceSlices)", wide=wide)
    for row in report.devices:
        d = row.device
        values = [d.name, _dash(d.type), Line(row.state, style=_STATE_STYLE[row.state]), _dash(", ".join(row.pods))]
        if wide:
            claims = ", ".join(dict.fromkeys(f"{h.claim} [{h.request}]" for h in row.holders))
            values += [_dash(claims), _dash(d.product), _dash(d.memory), _dash(d.mig_profile),
                       _dash(", ".join(f"{k} {v}" for k, v in row.consumed.items())), _dash(d.uuid), d.driver, d.pool,
                       _dash(", ".join(h.share_id for h in row.holders if h.share_id))]
        table.add_row(*values)
    kinds = _device_kinds(report)
    if kinds:
        parts.append(Line(kinds))
    parts += [Line(""), table if report.devices else Line("DRA devices: none published for this node")]
    if report.legacy_resources:
        legacy = _table("RESOURCE", "FAMILY", "CAPACITY", "ALLOCATABLE", title="Device-plugin resources")
        for r in report.legacy_resources:
            legacy.add_row(r.name, r.family, r.capacity, r.allocatable)
        parts += [Line(""), legacy]
    else:
        parts += [Line(""), Line("Device-plugin resources: none")]
    if report.legacy_pods:
        # Whether DRA serves a pod's extended resource (KEP-5004) is -o wide's: the default fits 80.
        pods = _table("POD", "PHASE", "REQUESTS", *(["SERVED BY DRA (KEP-5004)"] if wide else []),
                      title="Pods holding legacy GPUs", wide=wide)
        for p in report.legacy_pods:
            pods.add_row(p.ref, p.phase, ", ".join(f"{r.container}: {r.resource}={r.amount}" for r in p.requests),
                         *(["yes" if p.served_by_dra else "no"] if wide else []))
        parts += [Line(""), pods]
    parts += [Line(""), *findings(report.findings)]
    return parts


def _device_kinds(report: NodeReport) -> str | None:
    """`GPUs: 8 NVIDIA H100 80GB HBM3 (80Gi)`: the node's devices by kind, product and memory."""
    counts: dict[tuple[str, str, str], int] = {}
    for row in report.devices:
        d = row.device
        key = (d.type or "", d.mig_profile or d.product or "", d.memory or "")
        counts[key] = counts.get(key, 0) + 1
    parts = [f"{'GPUs' if kind == 'gpu' else (kind or 'other') + ' devices'}: {count} {_dash(what)}"
             + (f" ({memory})" if memory else "") for (kind, what, memory), count in counts.items()]
    return "; ".join(parts) or None


def _device_rows(rows: Iterable[AllocatedDeviceRow], wide: bool) -> KubeTable:
    # Within 80 columns by default; what the device is comes with -o wide.
    columns = ["REQUEST", "DEVICE", "NODE", "CONSUMED"]
    if wide:
        columns += ["PRODUCT", "MEMORY", "MIG PROFILE", "UUID", "DRIVER", "POOL", "SHARE ID", "ATTRIBUTES"]
    table = _table(*columns, wide=wide)
    for r in rows:
        d = r.detail
        values = [r.request, r.device, _dash(r.node), _dash(", ".join(f"{k} {v}" for k, v in r.consumed_capacity.items()))]
        if wide:
            attrs = ", ".join(f"{k.rsplit('/', 1)[-1]}={v}" for k, v in (d.attributes.items() if d else ()))
            values += [_dash(d.product if d else "(not published)"), _dash(d.memory if d else None),
                       _dash(d.mig_profile if d else None), _dash(d.uuid if d else None), r.driver, r.pool,
                       _dash(r.share_id), _dash(attrs)]
        table.add_row(*values)
    return table


def pod(report: PodReport, wide: bool = False) -> list[Printable]:
    parts: list[Printable] = [Line(
        ("Pod: ", "bold"), report.ref, ("   Phase: ", "bold"), report.phase, ("   Node: ", "bold"), _dash(report.node))]
    if report.scheduling:
        parts.append(Line(("Scheduling: ", "bold"), report.scheduling))
    if report.legacy_requests:
        legacy = _table("CONTAINER", "RESOURCE", "AMOUNT", "FAMILY", title="Legacy GPU requests")
        for r in report.legacy_requests:
            legacy.add_row(r.container, r.resource, r.amount, r.family)
        parts += [Line(""), legacy]
        if report.served_by_dra:
            parts.append(Line("served through DRA by an extended-resource DeviceClass (KEP-5004)"))
    else:
        parts += [Line(""), Line("Legacy GPU requests: none")]
    if report.claims:
        for c in report.claims:
            title = f"Claim {c.name}: {c.source}"
            if c.claim_name:
                title += f" -> ResourceClaim {c.claim_name}" + (" (generated)" if c.generated and c.template else "")
            parts += [Line(""), Line(title, style="bold"),
                      Line(f"  state: {c.state}; used by: {_dash(', '.join(c.containers))}")]
            for request in c.requests:
                parts.append(Line(f"  request {request.name}: {request.describe()}"))
            if c.devices:
                parts.append(_device_rows(c.devices, wide))
    else:
        parts += [Line(""), Line("DRA claims: none")]
    if report.original_resources is not None:
        parts += [Line(""), Line(("Converted by kubectl-gpu from: ", "bold"), _json(report.original_resources))]
    if report.explanation is not None:
        parts += [Line(""), *explanation(report.explanation)]
    if report.next_step:
        parts += [Line(""), Line(("Next step: ", "bold"), report.next_step)]
    return parts


def pod_list(reports: Iterable[PodReport], wide: bool = False, headers: bool = True,
             namespaces: bool = False) -> KubeTable:
    """`describe pod` without a name: one line per pod, as kubectl get pods.  The default columns
    fit kubectl's 80 (how many claims in which state); -o wide adds the node, as kubectl does, and
    names the claims and the devices they hold."""
    columns = (["NAME", "PHASE", "NODE", "LEGACY GPUS", "CLAIMS", "DEVICES"] if wide
               else ["NAME", "PHASE", "LEGACY GPUS", "CLAIMS"])
    table = KubeTable(*(["NAMESPACE"] if namespaces else []), *columns, wide=wide, show_header=headers)
    for r in reports:
        legacy = _dash(", ".join(f"{q.resource}={q.amount}" for q in r.legacy_requests))
        if wide:
            claims = ", ".join(f"{c.name} ({c.state})" for c in r.claims)
            devices = ", ".join(dict.fromkeys(d.device for c in r.claims for d in c.devices))
            row = [r.name, r.phase, _dash(r.node), legacy, _dash(claims), _dash(devices)]
        else:
            states = Counter(c.state for c in r.claims)
            row = [r.name, r.phase, legacy, _dash(", ".join(f"{n} {state}" for state, n in states.items()))]
        table.add_row(*([r.namespace] if namespaces else []), *row)
    return table


def claim_list(reports: Iterable[ClaimReport], wide: bool = False, headers: bool = True,
               namespaces: bool = False) -> KubeTable:
    """`describe claim` without a name: one line per ResourceClaim, as kubectl get.  A generated
    claim is named after its pod, and longer: the pods it is reserved for are -o wide's (80 columns)."""
    columns = ["NAME", "STATE", "NODE", "DEVICES", *(["RESERVED FOR"] if wide else [])]
    table = KubeTable(*(["NAMESPACE"] if namespaces else []), *columns, wide=wide, show_header=headers)
    for r in reports:
        devices = ", ".join(dict.fromkeys(d.device for d in r.devices))
        row = [r.name, r.state, _dash(r.node), _dash(devices), *([_dash(", ".join(r.reserved_for))] if wide else [])]
        table.add_row(*([r.namespace] if namespaces else []), *row)
    return table


def claim(report: ClaimReport, wide: bool = False) -> list[Printable]:
    parts: list[Printable] = [Line(
        ("ResourceClaim: ", "bold"), report.ref, ("   State: ", "bold"), report.state,
        ("   Node: ", "bold"), _dash(report.node))]
    parts.append(Line(("Reserved for: ", "bold"), _dash(", ".join(report.reserved_for)),
                               ("   Owner pod: ", "bold"), _dash(report.owner_pod),
                               ("   Created by kubectl-gpu: ", "bold"), "yes" if report.managed else "no"))
    for request in report.requests:
        parts.append(Line(f"request {request.name}: {request.describe()}"))
    if report.devices:
        parts += [Line(""), _device_rows(report.devices, wide)]
    if report.explanation is not None:
        parts += [Line(""), *explanation(report.explanation)]
    return parts


def explanation(result: Any) -> list[Printable]:
    """The explain engine's verdicts, short: per claim, per request, the selector that rejects most."""
    parts: list[Printable] = [Line("Why (explain):", style="bold")]
    for item in getattr(result, "items", ()):
        if hasattr(item, "error"):
            parts.append(Line(f"  {item.kind} {item.name}: invalid: {item.error}", style="red"))
            continue
        style = "green" if item.allocatable else "red"
        parts.append(Line(f"  {item.kind} {item.name}: {item.verdict}", style=style))
        for note in item.notes:
            parts.append(Line(f"    note: {note}"))
        for request in item.requests:
            if request.verdict not in item.verdict:  # a reason is printed once
                parts.append(Line(f"    request {request.name}: {request.verdict}"))
            for alternative in request.alternatives:
                parts.append(Line(f"      {alternative.name}: {alternative.in_class} in class "
                                  f"{alternative.device_class}, {alternative.matched} matched, "
                                  f"{alternative.free} free"))
                for s in alternative.selectors:
                    detail = f"{s.matched} matched, {s.rejected} rejected, {s.errors} error(s)"
                    if s.compile_error:
                        detail = f"does not compile: {s.compile_error}"
                    elif s.first_error:
                        detail += f" (e.g. {s.first_error})"
                    parts.append(Line(f"        {s.selector} `{s.expression}`: {detail}"))
    return parts


def doctor(report: DoctorReport, wide: bool = False, headers: bool = True) -> list[Printable]:
    # Each check by its short name (the JSON's `name`), whole within 80 columns; what it checks is a
    # sentence, -o wide's.
    table = KubeTable("CHECK", "STATUS", *(["WHAT IT CHECKS"] if wide else []), "LOOKED AT", wide=wide,
                      show_header=headers)
    for check in report.checks:
        style = {"ok": "green", "failed": "bold red", "skipped": "yellow"}[check.status]
        table.add_row(check.name, Line(check.status.upper(), style=style), *([check.title] if wide else []),
                      check.summary)
    verdict = (Line("No problems found.", style="bold green") if report.healthy else
               Line(f"{sum(1 for f in report.findings if f.fails)} problem(s) found.", style="bold red"))
    return [table, Line(""), *findings(report.findings), Line(""), verdict]


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
