"""`kubectl gpu migrate nodes`: switch one wave of GPU nodes to the DRA driver.

Reached through `kubectl gpu migrate nodes ...` (see migrate.py's dispatch).
"""
from __future__ import annotations

import sys
import time
import click

from kubectl_gpu.cli.describe import dra_node_label_option, parse_dra_labels
from kubectl_gpu.cli import exits
from kubectl_gpu.cli.fleet_common import EXIT_REFUSED, EXIT_STOPPED, FIELD_MANAGER, fail

EPILOG = exits.epilog("""\b
Steps, for each node: cordon; label it as a DRA node (--dra-node-label,
default ack.node.gpu.schedule=disabled: the kubectl-gpu webhook then keeps
device-plugin pods off it, and the device plugin can be excluded by the same
label); evict every pod holding device-plugin GPUs through the eviction API,
so PodDisruptionBudgets are respected (a refused eviction is retried until
--timeout as the budget recovers). The checks of `kubectl gpu plan` run first:
a node whose legacy pods cannot move to the device-plugin nodes left (or whose
budgets allow no disruption, or which runs a bare GPU pod) is never touched.
Then turn the device plugin off on these nodes, install the DRA driver, and
`kubectl uncordon` them once their ResourceSlices are published.

\b
Examples:
  kubectl gpu migrate nodes                    # the plan's next wave, server dry run
  kubectl gpu migrate nodes gpu-7 gpu-8 --apply
""")


@click.command("migrate nodes", epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("nodes", nargs=-1, metavar="[NODE]...")
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None, help="Path to the kubeconfig file.")
@click.option("--context", default=None, help="The kubeconfig context to use.")
@click.option("--apply", "do_apply", is_flag=True, help="Write (default: --dry-run=server).")
@click.option("--dry-run", type=click.Choice(["server"]), default=None,
              help="Send every write with dryRun=All (the default without --apply).")
@click.option("--wave-size", type=click.IntRange(min=1), default=None, metavar="N",
              help="Without NODE arguments: the size of the plan's waves (as in kubectl gpu plan).")
@click.option("--timeout", type=click.FloatRange(min=0), default=300.0, show_default=True,
              help="Seconds to keep retrying evictions a PodDisruptionBudget refuses.")
@dra_node_label_option
def command(nodes: tuple[str, ...], kubeconfig: str | None, context: str | None, do_apply: bool,
            dry_run: str | None, wave_size: int | None, timeout: float, dra_node_labels: tuple[str, ...]) -> None:
    """Switch one wave of GPU nodes (the plan's next, or the NODEs given) to the DRA driver."""
    from kubectl_gpu.fleet.execute import StepFailed, cordon_and_label, evict
    from kubectl_gpu.fleet.cluster_io import fetch_snapshot
    from kubectl_gpu.fleet.migration_plan import check_wave, next_wave_nodes, plan_migration
    from kubectl_gpu.fleet.workloads import pod_demand
    from kubectl_gpu.k8s import ApiError, KubeconfigError, connect

    if do_apply and dry_run:
        raise click.UsageError("use either --apply or --dry-run=server, not both")
    labels = parse_dra_labels(dra_node_labels)
    try:
        connection = connect(kubeconfig, context)
        snapshot = fetch_snapshot(connection.api, profile=False)  # cordons and evicts: fits no claim
    except (KubeconfigError, ApiError) as exc:
        exits.fail(exc)
    chosen = list(nodes) or next_wave_nodes(plan_migration(snapshot, wave_size=wave_size, dra_labels=labels))
    if not chosen:
        click.echo("nothing to switch: every GPU node is already a DRA node")
        sys.exit(0)
    wave = check_wave(snapshot, chosen, dra_labels=labels)
    if wave.refused:
        for reason in wave.refused:
            click.echo(f"refused: {reason}", err=True)
        fail(f"nothing was changed on {', '.join(chosen)}", EXIT_REFUSED)
    simulate = not do_apply
    evictees = [p for p in snapshot.pods if (p.get("spec") or {}).get("nodeName") in chosen and pod_demand(p)
                and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
                and not any(o.get("kind") == "DaemonSet" for o in (p.get("metadata") or {}).get("ownerReferences") or ())]
    try:
        for node in chosen:
            cordon_and_label(connection.api, node, {label.key: label.value for label in labels}, FIELD_MANAGER,
                             simulate)
            click.echo(f"node/{node}: {'would be ' if simulate else ''}cordoned and labelled "
                       + ", ".join(str(label) for label in labels))
        deadline = time.monotonic() + timeout
        pending = list(evictees)
        while pending:
            waiting = []
            for pod in pending:
                meta = pod["metadata"]
                ok, message = evict(connection.api, meta["namespace"], meta["name"], simulate)
                if ok:
                    click.echo(f"pod/{meta['namespace']}/{meta['name']}: {message}")
                else:
                    waiting.append((pod, message))
            if not waiting:
                break
            if time.monotonic() >= deadline:
                blocked = "; ".join(f"{p['metadata']['namespace']}/{p['metadata']['name']}: {m}" for p, m in waiting)
                raise StepFailed(f"evictions still refused after {timeout:g}s ({blocked}); the nodes stay cordoned "
                                 f"and labelled: wait for the budgets to recover and run it again")
            pending = [p for p, _ in waiting]
            time.sleep(2.0)
    except StepFailed as exc:
        fail(str(exc), EXIT_STOPPED)
    except ApiError as exc:
        exits.fail(exc)
    if simulate:
        click.echo("server dry run: nothing was written; run with --apply to switch these nodes")
    else:
        click.echo(f"switched {len(chosen)} node(s): turn the device plugin off there, install the DRA driver, then "
                   f"`kubectl uncordon {' '.join(chosen)}` once their ResourceSlices are published")
