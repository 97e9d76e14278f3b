"""`kubectl gpu rollback`: restore live workloads migrated by `migrate --from-cluster --apply`."""
from __future__ import annotations

import sys
from typing import Any

import click

from kubectl_gpu.cli import exits
from kubectl_gpu.cli.fleet_common import EXIT_STOPPED, FIELD_MANAGER, fail

EPILOG = exits.epilog("""\b
Each workload's pod templates carry the kubectl-gpu.io/original-resources
annotation that migrate recorded: the legacy GPU requests and node constraints
come back exactly, and the claim references and the annotation (owned by
kubectl-gpu alone) are removed, with one server-side apply per object; so are
the ResourceQuota entries migrate added (unless KIND/NAME are named). Claim
templates are left in place (doctor lists unused ones). Without --apply it is a
server dry run.

""")


@click.command("rollback", epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("refs", nargs=-1, metavar="[KIND/NAME]...")
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None, help="Path to the kubeconfig file.")
@click.option("--context", default=None, help="The kubeconfig context to use.")
@click.option("-n", "--namespace", default=None, help="Only this namespace (default: all).")
@click.option("--apply", "do_apply", is_flag=True, help="Write (default: --dry-run=server).")
@click.option("--timeout", type=click.FloatRange(min=0), default=300.0, show_default=True,
              help="Seconds to wait for each rollout to become ready.")
def command(refs: tuple[str, ...], kubeconfig: str | None, context: str | None, namespace: str | None,
            do_apply: bool, timeout: float) -> None:
    """Restore workloads to their original legacy GPU requests (all migrated ones, or KIND/NAME...)."""
    from kubectl_gpu.core.constants import ORIGINAL_RESOURCES_ANNOTATION
    from kubectl_gpu.dra.facts import QUOTA_ENTRIES_ANNOTATION
    from kubectl_gpu.fleet.quotas import list_quotas, rollback_quota
    from kubectl_gpu.fleet.apply import RollbackError
    from kubectl_gpu.fleet.execute import BUILTIN_PLURALS, StepFailed, Target, rollback_workload, wait_ready
    from kubectl_gpu.fleet.cluster_io import fetch_snapshot
    from kubectl_gpu.k8s import ApiError, KubeconfigError, connect
    from kubectl_gpu.manifests.locate import find_pod_sites
    from kubectl_gpu.manifests.tree_patch import resolve

    try:
        connection = connect(kubeconfig, context)
        snapshot = fetch_snapshot(connection.api, namespace, profile=False)  # restores the records: fits no claim
    except (KubeconfigError, ApiError) as exc:
        exits.fail(exc)

    def recorded(obj: Any) -> bool:
        return any(ORIGINAL_RESOURCES_ANNOTATION in ((resolve(obj, s.pointer).get("metadata") or {})
                                                     .get("annotations") or {}) for s in find_pod_sites(obj))

    wanted = {r.lower() for r in refs}
    targets = []
    for obj in snapshot.workloads:
        meta = obj.get("metadata") or {}
        if any(o.get("controller") for o in meta.get("ownerReferences") or ()):
            continue  # its owner rolls back; the controller rolls the change down
        key = f"{obj.get('kind')}/{meta.get('name')}".lower()
        if wanted and key not in wanted:
            continue
        if not recorded(obj):
            continue
        plural = BUILTIN_PLURALS.get((obj["apiVersion"], obj["kind"])) or snapshot.plurals.get((obj["apiVersion"], obj["kind"]))
        targets.append(Target(obj["apiVersion"], obj["kind"], plural, meta.get("namespace", ""), meta["name"]))
    try:
        quotas = [q for q in list_quotas(connection.api, namespace)
                  if QUOTA_ENTRIES_ANNOTATION in ((q.get("metadata") or {}).get("annotations") or {})]
    except ApiError as exc:
        exits.fail(exc)
    if not targets and not quotas:
        click.echo("nothing to roll back: no workload carries the " + ORIGINAL_RESOURCES_ANNOTATION + " annotation")
        sys.exit(0)
    try:
        for target in targets:
            click.echo(f"{target.ref}: {rollback_workload(connection.api, target, FIELD_MANAGER, not do_apply)}")
            if do_apply:
                click.echo(f"{target.ref}: {wait_ready(connection.api, target, timeout)}")
        # The quota last: the DRA entries it lost would have counted the claims the workloads held.
        if not wanted:
            for quota in quotas:
                click.echo(rollback_quota(connection.api, quota, FIELD_MANAGER, not do_apply))
    except (StepFailed, RollbackError) as exc:
        fail(str(exc), EXIT_STOPPED)
    except ApiError as exc:
        exits.fail(exc)
    if not do_apply:
        click.echo("server dry run: nothing was written; run with --apply to roll back")
