"""`kubectl gpu migrate nodes`: switch one wave of GPU nodes to the DRA driver.

Reached through `kubectl gpu migrate nodes ...` (see migrate.py's dispatch).
"""
from __future__ import annotations

import sys
import time
import click

from kubectl_gpu.cli.options import dra_node_label_option, parse_dra_labels
from kubectl_gpu.cli import exits
from kubectl_gpu.cli.completion import complete_device_plugin_nodes
from kubectl_gpu.k8s.options import ClusterOptions, request_timeout_option, timeout_option
from kubectl_gpu.cli.step_report import StepReport, output_option
from kubectl_gpu.cli.fleet_common import (EXIT_REFUSED, EXIT_STOPPED, FIELD_MANAGER, dry_run_api, dry_run_mode,
                                          dry_run_option, fail, list_selected)

EPILOG = exits.epilog("""\b
Steps, for each node: cordon (and record on the node, in the
kubectl-gpu.io/node-wave annotation, what the wave changes); evict every pod
holding device-plugin GPUs through the eviction API, so PodDisruptionBudgets
are respected (a refused eviction is retried until --timeout as the budget
recovers, and stderr says which pod and why, as kubectl drain does); then
label it as a DRA node (--dra-node-label, default
ack.node.gpu.schedule=disabled: the kubectl-gpu webhook then keeps
device-plugin pods off it, and the device plugin can be excluded by the same
label). A wave that stops (evictions still refused at --timeout, a write
refused) puts its nodes back as they were (uncordoned unless they were
cordoned before, no label) and says so; `kubectl gpu rollback node/NAME`
undoes a wave that went through. The checks of `kubectl gpu plan` run first:
a node whose legacy pods cannot move to the device-plugin nodes left (or whose
budgets allow no disruption, or which runs a bare GPU pod) is never touched.
Then turn the device plugin off on these nodes, install the DRA driver, and
`kubectl uncordon` them once their ResourceSlices are published.

\b
Examples:
  kubectl gpu migrate nodes                    # the plan's next wave, server dry run
  kubectl gpu migrate nodes gpu-7 gpu-8 --apply
  kubectl gpu migrate nodes -l 'pool in (h100),zone!=eu-1'   # a pool, checked as one wave
  kubectl gpu rollback node/gpu-7 --apply      # undo a wave
""")


@click.command("migrate nodes", epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("nodes", nargs=-1, metavar="[NODE]...", shell_complete=complete_device_plugin_nodes)
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None, help="Path to the kubeconfig file.")
@click.option("--context", default=None, help="The kubeconfig context to use.")
@request_timeout_option
@dry_run_option
@click.option("-l", "--selector", default=None, metavar="SELECTOR",
              help="Switch the device-plugin GPU nodes with these labels instead (kubectl's selector, which the API "
                   "server reads: key=value, key!=value, 'key in (a,b)', 'key notin (a)', key, !key).")
@click.option("--wave-size", type=click.IntRange(min=1), default=None, metavar="N",
              help="Without NODE arguments: the size of the plan's waves (as in kubectl gpu plan).")
@timeout_option("How long to keep retrying evictions a PodDisruptionBudget refuses.")
@output_option
@dra_node_label_option
def command(nodes: tuple[str, ...], kubeconfig: str | None, context: str | None, request_timeout: float | None,
            do_apply: bool, dry_run: str | None, selector: str | None, wave_size: int | None, timeout: float,
            dra_node_labels: tuple[str, ...], output: str | None) -> None:
    """Switch one wave of GPU nodes (the plan's next, the NODEs given, or those -l picks) to the DRA driver."""
    from kubectl_gpu.fleet.execute import NodeBefore, StepFailed, cordon_and_record, label_dra_node, read_node
    from kubectl_gpu.fleet.cluster_io import fetch_snapshot
    from kubectl_gpu.fleet.migration_plan import check_wave, next_wave_nodes, plan_migration
    from kubectl_gpu.fleet.workloads import pod_demand
    from kubectl_gpu.k8s import ApiError, KubeconfigError
    from kubectl_gpu.cli.console import progress

    mode = dry_run_mode(do_apply, dry_run)
    if nodes and selector is not None:
        raise click.UsageError("cannot specify both a node name and a --selector option")  # kubectl drain's words
    labels = parse_dra_labels(dra_node_labels)
    try:
        connection = ClusterOptions(kubeconfig, context, request_timeout).connect()
        with progress(f"reading the cluster at {connection.server}"):
            snapshot = fetch_snapshot(connection.api, profile=False)  # cordons and evicts: fits no claim
            selected = _selected_nodes(connection.api, selector, snapshot, labels) if selector is not None else None
    except (KubeconfigError, ApiError) as exc:
        exits.fail(exc)
    simulate = not mode.writes
    report = StepReport("NodeWave", output, dry_run=simulate)
    if selected is not None:
        chosen = selected
    else:
        chosen = list(nodes) or next_wave_nodes(plan_migration(snapshot, wave_size=wave_size, dra_labels=labels))
    if not chosen:
        report.say(f"nothing to switch: no device-plugin GPU node has the labels {selector!r}" if selector is not None
                   else "nothing to switch: every GPU node is already a DRA node")
        report.finish()
        sys.exit(0)
    wave = check_wave(snapshot, chosen, dra_labels=labels)
    if wave.refused:
        for reason in wave.refused:
            click.echo(f"refused: {reason}", err=True)
        report.finish("refused: " + "; ".join(wave.refused))
        fail(f"nothing was changed on {', '.join(chosen)}", EXIT_REFUSED)
    writer = dry_run_api(connection.api, mode)
    evictees = [p for p in snapshot.pods if (p.get("spec") or {}).get("nodeName") in chosen and pod_demand(p)
                and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
                and not any(o.get("kind") == "DaemonSet" for o in (p.get("metadata") or {}).get("ownerReferences") or ())]
    wanted_labels = {label.key: label.value for label in labels}
    started: dict[str, NodeBefore] = {}
    try:
        for node in chosen:
            started[node] = cordon_and_record(writer, read_node(connection.api, node), list(wanted_labels),
                                              FIELD_MANAGER, simulate)
            report.step(f"node/{node}", f"{'would be ' if simulate else ''}cordoned")
        _evict_all(writer, evictees, simulate, timeout, report)
        for node in chosen:
            label_dra_node(writer, node, wanted_labels, FIELD_MANAGER, simulate)
            report.step(f"node/{node}", f"{'would be ' if simulate else ''}labelled "
                        + ", ".join(str(label) for label in labels))
    except (StepFailed, ApiError) as exc:
        if not simulate:
            _undo(connection.api, started, report)
        report.finish(str(exc))
        if isinstance(exc, ApiError):
            exits.fail(exc)
        fail(str(exc), EXIT_STOPPED)
    except KeyboardInterrupt:  # Ctrl-C while refused evictions are retried: never leave the nodes half-switched
        if not simulate:
            click.echo("", err=True)
            with exits.undoing_after_interrupt():
                _undo(connection.api, started, report)
        report.finish("interrupted")
        raise
    if simulate:
        report.say(f"{mode.value} dry run: nothing was written; run with --apply to switch these nodes")
    else:
        report.say(f"switched {len(chosen)} node(s): turn the device plugin off there, install the DRA driver, then "
                   f"`kubectl uncordon {' '.join(chosen)}` once their ResourceSlices are published")
    report.finish()


def _selected_nodes(api, selector: str, snapshot, labels: tuple) -> list[str]:
    """The device-plugin GPU nodes the label selector picks (as kubectl drain -l picks nodes)."""
    from kubectl_gpu.fleet.capacity import gpu_nodes
    from kubectl_gpu.k8s import collection_path

    listed = list_selected(api, collection_path("", "v1", "nodes"), selector)
    names = {str((n.get("metadata") or {}).get("name")) for n in listed}
    switchable = {n.name for n in gpu_nodes(snapshot.nodes, snapshot.resource_slices, labels) if not n.dra}
    return sorted(names & switchable)


RETRY_SECONDS = 2.0  # between rounds of refused evictions (kubectl drain waits 5 s)


def _evict_all(api, evictees: list, simulate: bool, timeout: float, report: StepReport) -> None:
    """Evict every pod, retrying those a budget refuses until ``timeout``; each attempt and each
    refusal is said on stderr in `kubectl drain`'s words, so a long wait is never silent."""
    from kubectl_gpu.fleet.execute import StepFailed, evict

    deadline = time.monotonic() + timeout
    pending = list(evictees)
    while pending:
        waiting = []
        for pod in pending:
            meta = pod["metadata"]
            click.echo(f"evicting pod {meta['namespace']}/{meta['name']}", err=True)
            ok, message = evict(api, meta["namespace"], meta["name"], simulate)
            if ok:
                report.step(f"pod/{meta['namespace']}/{meta['name']}", message)
            else:
                waiting.append((pod, message))
        if not waiting:
            return
        if time.monotonic() >= deadline:
            blocked = "; ".join(f"{p['metadata']['namespace']}/{p['metadata']['name']}: {m}" for p, m in waiting)
            raise StepFailed(f"evictions still refused after {timeout:g}s ({blocked})")
        for pod, message in waiting:
            meta = pod["metadata"]
            click.echo(f'error when evicting pods/"{meta["name"]}" -n "{meta["namespace"]}" (will retry after '
                       f"{RETRY_SECONDS:g}s): {message}", err=True)
        pending = [p for p, _ in waiting]
        time.sleep(RETRY_SECONDS)


def _undo(api, started: dict, report: StepReport) -> None:
    """Put back the nodes a stopped wave touched; where the API refuses, print the commands."""
    from kubectl_gpu.fleet.execute import StepFailed, undo_commands, undo_wave
    from kubectl_gpu.k8s import ApiError

    for node, before in started.items():
        try:
            changed = undo_wave(api, node, before, FIELD_MANAGER, False)
        except (StepFailed, ApiError) as exc:
            commands = undo_commands(node, before)
            click.echo(f"node/{node}: could not be put back ({exc}); run:", err=True)
            report.record(f"node/{node}", f"could not be put back ({exc}); run: " + "; ".join(commands))
            for command in commands:
                click.echo(f"  {command}", err=True)
            continue
        report.step(f"node/{node}", f"{', '.join(changed) or 'unchanged'} (the wave stopped: the node is as it was)")
