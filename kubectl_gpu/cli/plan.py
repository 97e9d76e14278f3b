"""`kubectl gpu plan`: a reviewable plan to move a live fleet to DRA, in checked waves."""
from __future__ import annotations

import sys
from typing import Any

import click

from kubectl_gpu.cli.options import dra_node_label_option, driver_options, driver_settings, emit, parse_dra_labels
from kubectl_gpu.cli.reports import object_name
from kubectl_gpu.cli import exits
from kubectl_gpu.cli.fleet_common import (EXIT_REFUSED, ProfileChoices, fail, fitted_translate_options,
                                          read_files, translate_options)
from kubectl_gpu.k8s.options import ClusterOptions, cluster_options

EPILOG = exits.epilog("""\b
Examples:
  kubectl gpu plan                          # the current context's cluster
  kubectl gpu plan -o yaml > plan.yaml      # commit the plan for review
  kubectl get nodes,pods,deploy,sts,ds,job,cronjob,pdb,resourceslices -A -o yaml > cluster.yaml
  kubectl gpu plan -f cluster.yaml --wave-size 5
""")


@click.command("plan", epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@cluster_options
@dra_node_label_option
@translate_options
@click.option("-f", "--filename", "files", multiple=True, metavar="FILE|DIR|-",
              help="Plan from files (kubectl get ... -o yaml) instead of the live cluster.")
@driver_options
@click.option("--wave-size", type=click.IntRange(min=1), default=None, metavar="N",
              help="GPU nodes switched per wave (default: a tenth of the device-plugin GPU nodes). "
                   "A wave that fails its checks is halved down to one node before it is refused.")
@click.option("--allow-uncapped", is_flag=True,
              help="Accept waves after which a namespace's ResourceQuota no longer caps some of its GPU use "
                   "(memory or cores of shared GPUs, which no DRA quota entry counts).")
def command(files: tuple[str, ...], wave_size: int | None, allow_uncapped: bool, dra_node_labels: tuple[str, ...],
            api_version: str | None,
            sharing: str, integer_gpus: str, gpu_memory: str | None, kubernetes_version: str | None,
            feature_gates: str | None, driver_version: str | None, driver_gates: str | None,
            consumable_shares: str | None, target_driver: str, **values: Any) -> None:
    """Plan the move of a running cluster from device plugins to DRA.

    \b
    Workloads: every top-level object with legacy GPU requests (Deployments,
    StatefulSets, DaemonSets, Jobs, CronJobs, custom resources with pod
    templates), what each becomes, and which cannot move yet and why.
    Nodes: which GPU nodes switch to the DRA driver in which wave; every wave
    is checked: the legacy pods it drains fit on the legacy nodes left, its
    PodDisruptionBudgets allow the drain, and the workloads it migrates fit on
    the DRA nodes' devices (nodes not yet on DRA: predicted from GPU Feature
    Discovery labels, as --driver-version/--driver-gates/--consumable-shares
    publish them; DRA nodes: labelled, or publishing gpu.nvidia.com slices).

    Quotas: the ResourceQuota entries each wave's namespaces need so their GPU
    caps count DRA devices; a wave after which a cap no entry can carry would
    be gone is refused unless --allow-uncapped. Kueue: for ClusterQueues that
    cover nvidia.com/gpu or MIG resources, the deviceClassMappings of Kueue's
    Configuration and the ClusterQueues as they should become (-o yaml).

    Namespaced objects come from all namespaces unless -n is given; -l narrows
    the nodes (a node pool); -o name lists the workloads.
    """
    from kubectl_gpu.cluster.quota import quota_target
    from kubectl_gpu.fleet import snapshot_from_objects
    from kubectl_gpu.fleet.kueue import plan_kueue
    from kubectl_gpu.fleet.queues import plan_queue_writes, volcano_document
    from kubectl_gpu.fleet.plan_display import render_kueue, render_volcano
    from kubectl_gpu.fleet.quota_waves import add_quota_changes
    from kubectl_gpu.fleet.migration_plan import plan_migration
    from kubectl_gpu.fleet.plan_display import render_plan
    from kubectl_gpu.fleet.snapshot import with_file_profile

    options = ClusterOptions(**values)
    labels = parse_dra_labels(dra_node_labels)
    choices = ProfileChoices.parse(kubernetes_version, feature_gates)
    driver = driver_settings(driver_version, driver_gates, consumable_shares)
    if files:
        if options.selector:
            raise click.UsageError("-l selects the live cluster's nodes; with -f, leave the other nodes out of "
                                   "the files instead")
        try:
            snapshot = with_file_profile(snapshot_from_objects(read_files(files)), "files " + ", ".join(files),
                                         kubernetes_minor=choices.kubernetes_minor,
                                         gate_overrides=choices.gate_overrides)
        except ValueError as exc:  # an invalid ResourceSlice: every answer depends on it
            fail(f"cannot plan: {exc}", exits.USAGE)
    else:
        snapshot = _live_snapshot(options, choices)
    translate, fitted = fitted_translate_options(snapshot, api_version, sharing, integer_gpus, gpu_memory,
                                                  target_driver,
                                                  driver_shares=int(driver.shares) if driver.shares.isdigit() else None)
    if options.output in ("table", "wide"):
        from kubectl_gpu.cli.console import echo_wrapped

        for line in fitted:
            echo_wrapped(line, err=True)
    for problem in snapshot.rejected:
        click.echo(f"warning: {problem}: left out of the plan", err=True)
    try:
        plan = plan_migration(snapshot, translate, wave_size=wave_size, dra_labels=labels, driver=driver)
    except ValueError as exc:  # an invalid ResourceSlice or DeviceClass: every answer depends on it
        fail(f"cannot plan: {exc}", exits.USAGE)
    add_quota_changes(plan, snapshot.quotas, translate, quota_target(snapshot.profile), allow_uncapped)
    kueue = plan_kueue(snapshot.cluster_queues, translate)
    volcano = plan_queue_writes(snapshot.volcano_queues, translate, kueue=False)
    document = {**plan.to_dict(), "cluster": fitted, **({"kueue": kueue.to_dict()} if kueue.notes else {}),
                **({"volcanoQueues": volcano_document(volcano)} if volcano else {})}
    emit(options, document, lambda: _text(render_plan(plan, wide=options.output == "wide", headers=not options.no_headers,
                                                      width=_terminal_width())
                                          + render_kueue(kueue) + render_volcano(volcano)),
         names=lambda: [object_name(w.kind, w.api_version, w.name) for w in plan.workloads])
    sys.exit(EXIT_REFUSED if plan.refused or plan.unplaced else 0)


def _terminal_width() -> int | None:
    """stdout's width when it is a terminal (the sentences under the table wrap to it), else None."""
    from kubectl_gpu.cli.console import console

    out = console()
    return out.width if out.is_terminal else None


def _text(text: str) -> Any:
    from rich.text import Text

    return Text(text.rstrip("\n"))


def _live_snapshot(options: ClusterOptions, choices: ProfileChoices):
    from kubectl_gpu.cli.console import progress
    from kubectl_gpu.fleet.cluster_io import fetch_snapshot
    from kubectl_gpu.k8s import ApiError, KubeconfigError

    try:
        connection = options.connect()
        namespace = options.namespace if options.namespace and not options.all_namespaces else None
        with progress(f"reading the cluster at {connection.server}"):
            snapshot = fetch_snapshot(connection.api, namespace, node_selector=options.selector,
                                      source=f"cluster {connection.server}", gate_overrides=choices.gate_overrides)
    except (KubeconfigError, ApiError) as exc:
        exits.fail(exc)
    except ValueError as exc:  # an invalid ResourceSlice: every answer depends on it
        fail(f"cannot plan: {exc}", exits.USAGE)
    choices.check_live(snapshot.profile)
    return snapshot
