"""`kubectl gpu rollback`: restore live workloads migrated by `migrate --from-cluster --apply`,
and nodes switched by `migrate nodes --apply`."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import click

from kubectl_gpu.cli import exits
from kubectl_gpu.cli.completion import complete_kind_and_name
from kubectl_gpu.k8s.name_completion import complete_namespaces
from kubectl_gpu.k8s.options import ClusterOptions, request_timeout_option, timeout_option
from kubectl_gpu.cli.fleet_common import EXIT_STOPPED, FIELD_MANAGER, dry_run_api, dry_run_mode, dry_run_option, fail
from kubectl_gpu.cli.step_report import StepReport, output_option

EPILOG = exits.epilog("""\b
Each workload's pod templates carry the kubectl-gpu.io/original-resources
annotation that migrate recorded: the legacy GPU requests and node constraints
come back exactly, and the claim references and the annotation (owned by
kubectl-gpu alone) are removed, with one server-side apply per object; so are
the ResourceQuota entries migrate added (when no KIND/NAME is named). Claim
templates are left in place (doctor lists unused ones). A node switched by
`migrate nodes` carries the kubectl-gpu.io/node-wave annotation: node/NAME
puts back what the wave changed (cordon, the DRA-node label). Without --apply
(--dry-run=none) it is a server dry run; --dry-run=client sends no write.

\b
KIND/NAME takes the names kubectl takes (deploy/web, deployment/web,
deployments.apps/web, node/gpu-7), in the -n namespace or the context's.
A named object that does not exist is the answer "no" (exit 1).

\b
Examples:
  kubectl gpu rollback -A                       # every migrated workload, server dry run
  kubectl gpu rollback -n serving --apply       # those of one namespace (default: the context's)
  kubectl gpu rollback deploy/infer -n serving --apply
  kubectl gpu rollback node/gpu-7 --apply       # undo a node wave
""")


@dataclass(frozen=True)
class Named:
    """One KIND/NAME argument, resolved through discovery."""
    resource: Any  # kubectl_gpu.k8s.discovery.ServedResource
    name: str


@click.command("rollback", epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("refs", nargs=-1, metavar="[KIND/NAME]...", shell_complete=complete_kind_and_name)
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None, help="Path to the kubeconfig file.")
@click.option("--context", default=None, help="The kubeconfig context to use.")
@request_timeout_option
@click.option("-n", "--namespace", default=None, shell_complete=complete_namespaces,
              help="The namespace of KIND/NAME, or of every migrated workload rolled back without KIND/NAME "
                   "(default: the context's, as kubectl).")
@click.option("-A", "--all-namespaces", is_flag=True, help="Without KIND/NAME: every namespace.")
@dry_run_option
@timeout_option("How long to wait for each rollout to become ready.")
@output_option
def command(refs: tuple[str, ...], kubeconfig: str | None, context: str | None, request_timeout: float | None,
            namespace: str | None,
            all_namespaces: bool, do_apply: bool, dry_run: str | None, timeout: float, output: str | None) -> None:
    """Restore workloads to their original legacy GPU requests (all migrated ones, or KIND/NAME...),
    and nodes to what they were before `migrate nodes` (node/NAME)."""
    from kubectl_gpu.fleet.apply import RollbackError
    from kubectl_gpu.fleet.execute import StepFailed
    from kubectl_gpu.k8s import ApiError, KubeconfigError

    mode = dry_run_mode(do_apply, dry_run)
    if all_namespaces and namespace:
        raise click.UsageError("use either -n NAMESPACE or -A, not both")
    if all_namespaces and refs:
        raise click.UsageError("-A is for rolling back every migrated workload: KIND/NAME names one object; "
                               "give its namespace with -n")
    for ref in refs:
        kind, sep, name = ref.partition("/")
        if not sep or not kind or not name or "/" in name:
            raise click.UsageError(f'"{ref}": rollback takes KIND/NAME, such as deployment/{ref.strip("/") or "web"} '
                                   f"or node/gpu-7")
    try:
        connection = ClusterOptions(kubeconfig, context, request_timeout).connect()
        named = [_resolve(connection.api, ref) for ref in refs]
    except (KubeconfigError, ApiError) as exc:
        exits.fail(exc)
    simulate = not mode.writes
    writer = dry_run_api(connection.api, mode)
    report = StepReport("RollbackResult", output, dry_run=simulate)
    try:
        if named:
            missing = _roll_back_named(connection, writer, named, namespace or connection.namespace, simulate,
                                       timeout, report)
            if missing:
                for line in missing:
                    click.echo(f"error: {line}", err=True)
                report.finish("; ".join(missing))
                sys.exit(exits.FINDINGS)
        else:
            _roll_back_all(connection, writer, None if all_namespaces else namespace or connection.namespace, simulate,
                           timeout, report)
    except (StepFailed, RollbackError) as exc:
        report.finish(str(exc))
        fail(str(exc), EXIT_STOPPED)
    except ApiError as exc:
        report.finish(str(exc))
        exits.fail(exc)
    if simulate:
        report.say(f"{mode.value} dry run: nothing was written; run with --apply to roll back")
    report.finish()


def _resolve(api: Any, ref: str) -> Named:
    from kubectl_gpu.k8s.discovery import resolve_resource

    kind, _, name = ref.partition("/")
    resource = resolve_resource(api, kind)
    if resource is None:
        raise click.UsageError(f'the server doesn\'t have a resource type "{kind}"')
    return Named(resource, name)


def _roll_back_named(connection: Any, writer: Any, named: list[Named], namespace: str, simulate: bool,
                     timeout: float, report: StepReport) -> list[str]:
    """Roll back each named object; returns the "not found" lines (the answer is no)."""
    from kubectl_gpu.core.constants import ORIGINAL_RESOURCES_ANNOTATION
    from kubectl_gpu.fleet.cluster_io import object_path, send
    from kubectl_gpu.fleet.execute import Target, rollback_workload, wait_ready
    from kubectl_gpu.k8s import ApiError

    missing = []
    for item in named:
        resource = item.resource
        if resource.kind == "Node" and resource.group == "":
            line = _roll_back_node(connection.api, writer, item.name, simulate, report)
            if line is None:
                missing.append(f'nodes "{item.name}" not found')
            continue
        ns = namespace if resource.namespaced else ""
        target = Target(resource.api_version, resource.kind, resource.plural, ns, item.name)
        try:
            obj = send(connection.api, "GET", object_path(resource.api_version, resource.plural, ns, item.name))
        except ApiError as exc:
            if not exc.not_found:
                raise
            missing.append(f'{resource.group_resource} "{item.name}" not found'
                           + (f" in namespace {ns}" if ns else ""))
            continue
        owner = next((o for o in (obj.get("metadata") or {}).get("ownerReferences") or () if o.get("controller")),
                     None)
        if owner is not None:
            missing.append(f"{target.ref} is managed by {owner.get('kind')}/{owner.get('name')}: roll back that "
                           f"instead (its controller rolls the change down)")
            continue
        if not _recorded(obj, ORIGINAL_RESOURCES_ANNOTATION):
            report.step(target.ref, f"nothing to roll back (no {ORIGINAL_RESOURCES_ANNOTATION} annotation)")
            continue
        report.step(target.ref, rollback_workload(writer, target, FIELD_MANAGER, simulate))
        if not simulate:
            report.step(target.ref, wait_ready(connection.api, target, timeout, progress=_say, undo=_follow(target)))
    return missing


def _roll_back_all(connection: Any, writer: Any, namespace: str | None, simulate: bool, timeout: float,
                   report: StepReport) -> None:
    from kubectl_gpu.core.constants import ORIGINAL_RESOURCES_ANNOTATION
    from kubectl_gpu.fleet.execute import BUILTIN_PLURALS, Target, rollback_workload, wait_ready
    from kubectl_gpu.dra.facts import QUOTA_ENTRIES_ANNOTATION
    from kubectl_gpu.fleet.cluster_io import fetch_snapshot
    from kubectl_gpu.fleet.quotas import list_quotas, rollback_quota

    from kubectl_gpu.cli.console import progress

    with progress("reading the cluster's workloads"):
        snapshot = fetch_snapshot(connection.api, namespace, profile=False)  # restores the records: fits no claim
    targets = []
    for obj in snapshot.workloads:
        meta = obj.get("metadata") or {}
        if any(o.get("controller") for o in meta.get("ownerReferences") or ()):
            continue  # its owner rolls back; the controller rolls the change down
        if not _recorded(obj, ORIGINAL_RESOURCES_ANNOTATION):
            continue
        plural = BUILTIN_PLURALS.get((obj["apiVersion"], obj["kind"])) or snapshot.plurals.get((obj["apiVersion"], obj["kind"]))
        targets.append(Target(obj["apiVersion"], obj["kind"], plural, meta.get("namespace", ""), meta["name"]))
    quotas = [q for q in list_quotas(connection.api, namespace)
              if QUOTA_ENTRIES_ANNOTATION in ((q.get("metadata") or {}).get("annotations") or {})]
    from kubectl_gpu.fleet.queues import recorded_queues, rollback_queue

    # Cluster-wide queues only when rolling back every namespace (-A): they cap all of them.
    queues = recorded_queues((*snapshot.cluster_queues, *snapshot.volcano_queues)) if namespace is None else []
    if not targets and not quotas and not queues:
        where = f" in namespace {namespace} (-A: every namespace)" if namespace else ""
        report.say(f"nothing to roll back{where}: no workload carries the {ORIGINAL_RESOURCES_ANNOTATION} annotation")
        report.finish()
        sys.exit(0)
    for target in targets:
        report.step(target.ref, rollback_workload(writer, target, FIELD_MANAGER, simulate))
        if not simulate:
            report.step(target.ref, wait_ready(connection.api, target, timeout, progress=_say, undo=_follow(target)))
    # The quota last: the DRA entries it loses would have counted the claims the workloads held.
    for quota in quotas:
        line = rollback_quota(writer, quota, FIELD_MANAGER, simulate)
        if line is not None:  # None only for a quota migrate never changed, which the list above left out
            report.line_step(line)
    for queue in queues:
        report.line_step(rollback_queue(writer, queue, FIELD_MANAGER, simulate))


def _roll_back_node(api: Any, writer: Any, name: str, simulate: bool, report: StepReport) -> str | None:
    """Undo the node wave recorded on the node; None when there is no such node."""
    from kubectl_gpu.dra.facts import NODE_WAVE_ANNOTATION
    from kubectl_gpu.fleet.execute import NodeBefore, read_node, undo_wave
    from kubectl_gpu.k8s import ApiError

    try:
        node = read_node(api, name)
    except ApiError as exc:
        if exc.not_found:
            return None
        raise
    before = NodeBefore.recorded(node)
    if before is None:
        result = f"nothing to roll back (no {NODE_WAVE_ANNOTATION} annotation)"
    else:
        changed = undo_wave(writer, name, before, FIELD_MANAGER, simulate)
        done = ", ".join(changed) or "its record removed"
        if simulate:
            done = "would be " + done
        result = (f"{done}; legacy GPU pods may be scheduled there again: turn the NVIDIA device plugin "
                  f"back on there (and the DRA driver off) before they are")
    report.step(f"node/{name}", result)
    return result


def _recorded(obj: Any, annotation: str) -> bool:
    from kubectl_gpu.manifests.locate import find_pod_sites
    from kubectl_gpu.manifests.tree_patch import resolve

    return any(annotation in ((resolve(obj, s.pointer).get("metadata") or {}).get("annotations") or {})
               for s in find_pod_sites(obj))


def _follow(target: Any) -> str:
    """What to run when a rolled-back workload is not ready in time: rollback cannot undo itself."""
    where = f" -n {target.namespace}" if target.namespace else ""
    return f"the rollback was written; follow it with kubectl rollout status {target.kind.lower()}/{target.name}{where}"


def _say(line: str) -> None:
    click.echo(line, err=True)
