"""`kubectl gpu describe [node|pod|claim [NAME]]`: which GPUs exist, who holds them, and why a
pod is Pending.  Exit codes: kubectl_gpu/cli/exits.py."""

from __future__ import annotations

from typing import Any, Callable

import click

from kubectl_gpu.cli import exits
from kubectl_gpu.cli.completion import names_from_cluster
from kubectl_gpu.cli.options import dra_node_label_option, emit, parse_dra_labels
from kubectl_gpu.cli.reports import object_list
from kubectl_gpu.k8s.options import ClusterOptions, cluster_options

CLAIM_KIND = "resourceclaim.resource.k8s.io"  # as kubectl -o name spells it


def tree_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--tree", is_flag=True, default=False,
                        help="Show node -> GPU (MIG devices inside their GPU) -> pod, one line each.")(func)


def emit_reports(options: ClusterOptions, reports: list[Any], render_one: Callable[[Any, bool], Any],
                 empty: str, kind: str, one_line: Callable[..., Any] | None = None) -> None:
    """Several reports: a `kind: List` for scripts, KIND/NAME for -o name, and for people one line
    per object (`one_line`, as kubectl get) or each report followed by a blank line."""
    def tables() -> list[Any]:
        from kubectl_gpu.kubetable import Line

        if not reports:
            return [Line(empty)]
        wide = options.output == "wide"
        if one_line is not None:
            return [one_line(reports, wide=wide, headers=not options.no_headers, namespaces=options.all_namespaces)]
        return [part for r in reports for part in (*render_one(r, wide), Line(""))]

    emit(options, object_list([r.to_dict() for r in reports]), tables,
         lambda: [f"{kind}/{r.name}" for r in reports])


fail_on_errors = exits.run_reporting_errors


def warn_unreadable(unreadable: Any) -> None:
    """kubectl prints warnings on stderr: what RBAC hid from this report, and what would show it."""
    for item in unreadable:
        click.echo(f"warning: {item}", err=True)


class _Settings:
    """Options of the `describe` group, handed to its subcommands."""

    def __init__(self, options: ClusterOptions, dra_labels: tuple, tree: bool = False) -> None:
        self.options = options
        self.dra_labels = dra_labels
        self.tree = tree


def _connect(options: ClusterOptions):
    return options.connect()


def _reading(what: str):
    from kubectl_gpu.cli.console import progress
    return progress(f"reading {what} from the cluster...")


class _KubectlNames(click.Group):
    """kubectl's names for the kinds: `describe pods`, `describe no NAME`, `describe resourceclaims`."""

    ALIASES = {"nodes": "node", "no": "node", "pods": "pod", "po": "pod", "claims": "claim",
               "resourceclaim": "claim", "resourceclaims": "claim", "resourceclaim.resource.k8s.io": "claim"}

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        return super().get_command(ctx, self.ALIASES.get(name, name))

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple:
        name, command, rest = super().resolve_command(ctx, args)
        return (command.name if command else name), command, rest


def _examples(*lines: str) -> str:
    return exits.epilog("\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines))


@click.group("describe", cls=_KubectlNames, invoke_without_command=True, epilog=_examples(
    "kubectl gpu describe                      # every GPU node", "kubectl gpu describe --tree -l pool=h100",
    "kubectl gpu -n ml describe pod train-0    # why it is Pending", "kubectl gpu describe claim train-gpus -o yaml"))
@cluster_options
@dra_node_label_option
@tree_option
@click.pass_context
def command(ctx: click.Context, dra_node_labels: tuple[str, ...], tree: bool, **values: Any) -> None:
    """Show GPUs, who holds them, and why a pod is pending.

    \b
    kubectl gpu describe                  every GPU node: DRA devices, holders, legacy GPUs,
                                          and a bar of GPUs in use (MIG devices in brackets)
    kubectl gpu describe -n NS            only the nodes where NS's pods hold GPUs
    kubectl gpu describe --tree           node -> GPU -> pod
    kubectl gpu describe node NAME        each device with product, memory, UUID, claim and pod
    kubectl gpu describe pod NAME         legacy requests vs DRA claims; for a Pending pod, why
    kubectl gpu describe claim NAME       requests, allocated devices, consumers
    """
    settings = _settings(ctx, values, dra_node_labels, tree)
    ctx.obj = settings
    if ctx.invoked_subcommand is None:
        kept: list[Any] = []  # what the report was made of, freed by the process's end (skip_teardown)
        fail_on_errors(lambda: kept.extend(_describe_cluster(settings)))
        exits.skip_teardown()


def _settings(ctx: click.Context, values: dict[str, Any], dra_node_labels: tuple[str, ...],
              tree: bool = False) -> _Settings:
    parent: _Settings | None = ctx.find_object(_Settings)
    base = parent.options if parent else ClusterOptions()
    mine = ClusterOptions(**{k: values[k] for k in ClusterOptions.__dataclass_fields__})
    return _Settings(base.merged(mine), parse_dra_labels(dra_node_labels, parent.dra_labels if parent else None),
                     tree or bool(parent and parent.tree))


def _describe_cluster(settings: _Settings) -> tuple[Any, Any]:
    """Print the cluster's GPUs; returns the objects listed and the report, for the caller to keep:
    freeing 10,000 pods' and claims' JSON object by object is work the process's end does at once."""
    from kubectl_gpu.inspect.fetch import discover_dra, start_fetch_cluster

    connection = _connect(settings.options)
    dra = discover_dra(connection.api)
    with _reading("nodes, pods, ResourceClaims and ResourceSlices"):
        lists = start_fetch_cluster(connection.api, dra, node_selector=settings.options.selector,
                                    namespace=settings.options.namespace or connection.namespace)
        # Loaded while the server answers (~0.15 s of the lists' wait).
        from kubectl_gpu.inspect import tables
        from kubectl_gpu.inspect.cluster import cluster_report
        objects = lists()
    options = settings.options
    report = cluster_report(objects.nodes, objects.slices, objects.claims, objects.pods, settings.dra_labels,
                            namespace=options.namespace if not options.all_namespaces else None,
                            devices=objects.devices, holders=objects.holders)
    warn_unreadable(objects.unreadable)
    people = (lambda: tables.tree(report.nodes)) if settings.tree else (
        lambda: tables.cluster(report, settings.options.output == "wide", headers=not settings.options.no_headers))
    emit(settings.options, report.to_dict, people, lambda: [f"node/{n.name}" for n in report.nodes])
    return objects, report


@command.command("node", epilog=_examples(
    "kubectl gpu describe node gpu-7 -o wide", "kubectl gpu describe nodes --tree"))
@click.argument("name", required=False, shell_complete=names_from_cluster("nodes"))
@cluster_options
@dra_node_label_option
@tree_option
@click.pass_context
def node_command(ctx: click.Context, name: str | None, dra_node_labels: tuple[str, ...], tree: bool,
                 **values: Any) -> None:
    """A node's GPUs: DRA devices and who holds them, device-plugin resources, double counting.

    Without NAME: every GPU node (narrow with -l)."""
    settings = _settings(ctx, values, dra_node_labels, tree)

    def run() -> None:
        from kubectl_gpu.inspect import tables
        from kubectl_gpu.inspect.cluster import build_node_reports
        from kubectl_gpu.inspect.fetch import discover_dra, fetch_cluster

        connection = _connect(settings.options)
        dra = discover_dra(connection.api)
        with _reading("nodes, pods, ResourceClaims and ResourceSlices"):
            objects = fetch_cluster(connection.api, dra, node_selector=settings.options.selector, node_name=name,
                                    namespace=settings.options.namespace or connection.namespace)
        if name and not objects.nodes:
            from kubectl_gpu.k8s import ApiError
            raise ApiError(403, "/api/v1/nodes", f'forbidden to get node "{name}"; a ClusterRole granting '
                           "get/list on nodes would show it", "Forbidden")
        warn_unreadable(objects.unreadable)
        reports, _ = build_node_reports(objects.nodes, objects.devices, objects.holders,
                                        objects.pods, settings.dra_labels, only_gpu_nodes=name is None)
        wide = settings.options.output == "wide"
        if settings.tree:
            emit(settings.options, object_list([r.to_dict() for r in reports]), lambda: tables.tree(reports),
                 lambda: [f"node/{r.name}" for r in reports])
            return
        if name:
            (report,) = reports
            emit(settings.options, report.to_dict(), lambda: tables.node(report, wide), lambda: [f"node/{name}"])
            return
        emit_reports(settings.options, reports, tables.node, "No GPU nodes found.", "node")

    fail_on_errors(run)


@command.command("pod", epilog=_examples(
    "kubectl gpu describe pod train-0 -n ml    # legacy requests, claims, why it waits",
    "kubectl gpu describe pods -A -l app=infer"))
@click.argument("name", required=False, shell_complete=names_from_cluster("pods"))
@cluster_options(selects="pods")
@click.pass_context
def pod_command(ctx: click.Context, name: str | None, **values: Any) -> None:
    """A pod's legacy GPU requests, DRA claims (generated ones too), allocated devices with their
    attributes, the kubectl-gpu conversion annotation and, for a Pending pod, why it waits.

    Without NAME: every pod using GPUs in the namespace (-A: all namespaces; narrow with -l)."""
    settings = _settings(ctx, values, ())

    def run() -> None:
        from kubectl_gpu.inspect import tables
        from kubectl_gpu.inspect.devices import current_devices
        from kubectl_gpu.inspect.fetch import (NothingToExplain, discover_dra, explain_pod_objects, fetch_dra,
                                              fetch_pod, list_pods, pod_claim_objects)
        from kubectl_gpu.k8s import NotFound
        from kubectl_gpu.inspect.pods import pod_report, pod_reports

        options = settings.options
        connection = _connect(options)
        namespace = options.namespace or connection.namespace
        dra = discover_dra(connection.api)
        with _reading("ResourceSlices, DeviceClasses and ResourceClaims"):
            dra_objects = fetch_dra(connection.api, dra, namespace)
        warn_unreadable(dra_objects.unreadable)
        devices = current_devices(dra_objects.slices)
        wide = options.output == "wide"
        if name:
            pod = fetch_pod(connection.api, namespace, name)
            explanation = None
            report = pod_report(pod, dra_objects.claims, devices)
            if report.pending and report.unallocated_claims:
                try:
                    claims = pod_claim_objects(connection.api, dra, pod, dra_objects.claims)
                    explanation = explain_pod_objects(pod, claims, dra_objects)
                except (NotFound, NothingToExplain):
                    explanation = None  # the claim rows already say what is missing
                report = pod_report(pod, dra_objects.claims, devices, explanation)
            if report.pending and report.scheduling is None:
                import dataclasses

                from kubectl_gpu.inspect.fetch import scheduling_events
                from kubectl_gpu.inspect.pods import scheduling_from_events

                report = dataclasses.replace(
                    report, scheduling=scheduling_from_events(scheduling_events(connection.api, pod)))
            if report.needs_legacy_step():
                report = _with_legacy_step(report, pod, dra_objects.nodes, list_pods(connection.api, None, None))
            emit(options, report.to_dict(), lambda: tables.pod(report, wide), lambda: [f"pod/{name}"])
            return
        pods = list_pods(connection.api, None if options.all_namespaces else namespace, options.selector)
        reports = [r for r in pod_reports(pods, dra_objects.claims, devices) if r.claims or r.legacy_requests]
        if any(r.needs_legacy_step() for r in reports):
            everyone = pods if options.all_namespaces else list_pods(connection.api, None, None)
            by_ref = {f"{p['metadata'].get('namespace')}/{p['metadata'].get('name')}": p for p in pods}
            reports = [_with_legacy_step(r, by_ref[r.ref], dra_objects.nodes, everyone) if r.needs_legacy_step()
                       else r for r in reports]
        emit_reports(options, reports, tables.pod, "No pods using GPUs found.", "pod", tables.pod_list)

    fail_on_errors(run)


def _with_legacy_step(report: Any, pod: Any, nodes: Any, pods: Any) -> Any:
    import dataclasses

    from kubectl_gpu.inspect.pending import legacy_pending_step

    return dataclasses.replace(report, next_step=legacy_pending_step(pod, nodes, pods))


@command.command("claim", epilog=_examples(
    "kubectl gpu describe claim train-gpus -n ml", "kubectl gpu describe claims -A -o name"))
@click.argument("name", required=False, shell_complete=names_from_cluster("resourceclaims"))
@cluster_options(selects="ResourceClaims")
@click.pass_context
def claim_command(ctx: click.Context, name: str | None, **values: Any) -> None:
    """A ResourceClaim: its requests, allocated devices with attributes and consumed capacity, the
    pods it is reserved for and, when unallocated, why.

    Without NAME: every claim in the namespace (-A: all namespaces; narrow with -l)."""
    settings = _settings(ctx, values, ())

    def run() -> None:
        from kubectl_gpu.inspect import tables
        from kubectl_gpu.inspect.claims import claim_report, claim_reports
        from kubectl_gpu.inspect.devices import current_devices
        from kubectl_gpu.inspect.fetch import discover_dra, explain_claims, fetch_claim, fetch_dra
        from kubectl_gpu.k8s import list_objects

        options = settings.options
        connection = _connect(options)
        namespace = options.namespace or connection.namespace
        dra = discover_dra(connection.api)
        with _reading("ResourceSlices, DeviceClasses and ResourceClaims"):
            dra_objects = fetch_dra(connection.api, dra, namespace)
        warn_unreadable(dra_objects.unreadable)
        devices = current_devices(dra_objects.slices)
        wide = options.output == "wide"
        if name:
            claim = fetch_claim(connection.api, dra, namespace, name)
            report = claim_report(claim, devices)
            if not report.devices:
                report = claim_report(claim, devices, explain_claims([claim], dra_objects))
            emit(options, report.to_dict(), lambda: tables.claim(report, wide),
                 lambda: [f"{CLAIM_KIND}/{name}"])
            return
        path = dra.path("resourceclaims", None if options.all_namespaces else namespace)
        claims = list_objects(connection.api, path, label_selector=options.selector)
        reports = claim_reports(claims, devices)
        emit_reports(options, reports, tables.claim, "No ResourceClaims found.", CLAIM_KIND, tables.claim_list)

    fail_on_errors(run)
