"""`kubectl gpu migrate --from-cluster`: rewrite live workloads with server-side apply, in waves.

Reached through `kubectl gpu migrate --from-cluster ...` (see migrate.py's dispatch).
"""
from __future__ import annotations

import sys
from collections import OrderedDict
from pathlib import Path
from typing import Any

import click

from kubectl_gpu.cli.options import dra_node_label_option, parse_dra_labels
from kubectl_gpu.cli import exits
from kubectl_gpu.k8s.name_completion import complete_namespaces
from kubectl_gpu.k8s.options import ClusterOptions, request_timeout_option, timeout_option
from kubectl_gpu.cli.fleet_common import (EXIT_STOPPED, FIELD_MANAGER, ProfileChoices, dry_run_api, dry_run_mode,
                                          dry_run_option, fail, fitted_translate_options, list_selected,
                                          translate_options)
from kubectl_gpu.cli.step_report import StepReport, output_option

EPILOG = exits.epilog("""\b
Without --apply (--dry-run=none) nothing is written: every write is sent with
dryRun=All (--dry-run=server), so the API server validates it and reports
conflicts; --dry-run=client sends no write at all.
Only workloads whose pods fit on the DRA nodes now (wave 0 of `kubectl gpu
plan`) are rewritten; switch more nodes (`kubectl gpu migrate nodes`) and run
it again for the rest. Running it twice changes nothing.

\b
Examples:
  kubectl gpu migrate --from-cluster -A                   # server dry run, every namespace
  kubectl gpu migrate --from-cluster --apply -n serving   # only serving (default: the context's)
  kubectl gpu migrate --from-cluster --output-dir gitops/ # files for Git instead
""")


@click.command("migrate --from-cluster", epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--from-cluster", is_flag=True, required=True, help="Migrate the live cluster's workloads.")
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None, help="Path to the kubeconfig file.")
@click.option("--context", default=None, help="The kubeconfig context to use.")
@request_timeout_option
@click.option("-n", "--namespace", default=None, shell_complete=complete_namespaces, help="The namespace to migrate (default: the context's, as kubectl).")
@click.option("-A", "--all-namespaces", is_flag=True, help="Every namespace.")
@click.option("-l", "--selector", default=None, metavar="SELECTOR",
              help="Only workloads (and bare pods) with these labels (kubectl's selector: key=value, key!=value, "
                   "'key in (a,b)', 'key notin (a)', key, !key).")
@dry_run_option
@click.option("--output-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write the migrated objects and their claim templates as files under DIR instead.")
@timeout_option("How long to wait for each wave's rollouts to become ready.")
@click.option("--kueue", is_flag=True,
              help="Also give Kueue's ClusterQueues covering GPUs their DRA device counts, and print the "
                   "deviceClassMappings Kueue's Configuration needs (Volcano's Queues are always changed).")
@output_option
@dra_node_label_option
@translate_options
def command(from_cluster: bool, kubeconfig: str | None, context: str | None, request_timeout: float | None,
            namespace: str | None,
            all_namespaces: bool, selector: str | None, do_apply: bool, dry_run: str | None, output_dir: Path | None, timeout: float,
            kueue: bool, dra_node_labels: tuple[str, ...], output: str | None, **translate: Any) -> None:
    """Rewrite the live workloads the plan can move now, with server-side apply (field manager
    kubectl-gpu): claim templates first, then each workload, one namespace at a time, waiting
    for every rollout to become ready and stopping at the first that does not."""
    from kubectl_gpu.cluster.quota import quota_target
    from kubectl_gpu.fleet.execute import StepFailed, apply_claims, apply_workload, wait_ready
    from kubectl_gpu.fleet.quotas import apply_quota, list_quotas, plan_quotas
    from kubectl_gpu.fleet.cluster_io import fetch_snapshot
    from kubectl_gpu.fleet.migration_plan import plan_migration
    from kubectl_gpu.fleet.workloads import MIGRATE, RECREATE
    from kubectl_gpu.k8s import ApiError, KubeconfigError
    from kubectl_gpu.cli.console import progress

    if all_namespaces and namespace:
        raise click.UsageError("use either -n NAMESPACE or -A, not both")
    mode = dry_run_mode(do_apply, dry_run)
    if mode.writes and output_dir:
        raise click.UsageError("--output-dir writes files instead of the cluster: drop --apply")
    choices = ProfileChoices.parse(translate.get("kubernetes_version"), translate.get("feature_gates"))
    try:
        connection = ClusterOptions(kubeconfig, context, request_timeout).connect()
        with progress(f"reading the cluster at {connection.server}"):
            # kubectl's scope: -n, else the context's namespace; -A for all of them.
            scope = None if all_namespaces else namespace or connection.namespace
            snapshot = fetch_snapshot(connection.api, scope, source=f"cluster {connection.server}",
                                      gate_overrides=choices.gate_overrides)
            wanted = _selected_refs(connection.api, selector, snapshot, scope) if selector is not None else None
    except (KubeconfigError, ApiError) as exc:
        exits.fail(exc)
    except ValueError as exc:  # an invalid ResourceSlice: every answer depends on it
        fail(f"cannot read the cluster profile: {exc}", exits.USAGE)
    choices.check_live(snapshot.profile)
    if snapshot.dra_version is None:
        fail("the cluster serves no resource.k8s.io version: DRA needs Kubernetes 1.32 or newer", EXIT_STOPPED)
    options, fitted = fitted_translate_options(snapshot, **translate)
    simulate = not mode.writes
    report = StepReport("MigrationResult", output, dry_run=simulate)
    for line in fitted:
        report.say(line)
    plan = plan_migration(snapshot, options, dra_labels=parse_dra_labels(dra_node_labels))
    from kubectl_gpu.fleet.queues import plan_queue_writes

    queue_writes = plan_queue_writes((*snapshot.cluster_queues, *snapshot.volcano_queues), options, kueue)
    chosen = [w for w in plan.workloads if wanted is None or w.ref in wanted]

    if output_dir is not None:
        for path in _write_files(output_dir, [w for w in chosen if w.status in (MIGRATE, RECREATE)]):
            report.record(str(path), "written")
        for path in _write_queue_files(output_dir, queue_writes):
            report.record(str(path), "written")
        report.say(f"wrote {len(report.steps)} file(s) under {output_dir}")
        report.finish()
        return

    fits_now = set(plan.waves[0].workloads) if plan.waves and plan.waves[0].index == 0 else set()
    movable = [w for w in chosen if w.status == MIGRATE and w.ref in fits_now]
    now = plan.waves[0] if plan.waves and plan.waves[0].index == 0 else None
    room = (f": {now.dra_devices_used} of {now.dra_devices} DRA devices taken after this wave, "
            f"{now.dra_devices_allocated} of them by claims already allocated" if now is not None else "")
    for w in chosen:
        if w.status == MIGRATE and w.ref not in fits_now:
            report.step(w.ref, f"waits: its pods do not fit on the DRA nodes yet{room} (kubectl gpu plan shows "
                               "its wave)")
        elif w.status not in (MIGRATE, "migrated"):
            report.step(w.ref, f"{w.status}: {'; '.join(w.reasons)}")
    writer = dry_run_api(connection.api, mode)
    waves: OrderedDict[str, list] = OrderedDict()
    for w in movable:
        waves.setdefault(w.namespace, []).append(w)
    try:
        # Cluster-wide queues first: a claim held before its queue counts it escapes the queue's cap.
        _apply_queues(writer, queue_writes, simulate, report)
        target = quota_target(snapshot.profile)
        for ns, workloads in waves.items():
            report.say(f"namespace {ns}: {len(workloads)} workload(s)")
            # The quota first: the moment a pod holds a claim, only a DRA entry counts it.
            for quota in plan_quotas(list_quotas(connection.api, ns), options, target):
                report.line_step(apply_quota(writer, quota, FIELD_MANAGER, simulate), "  ")
                for note in quota.notes:
                    report.note(f"{note.severity.value}: {note.render()}")
            claims = {c["metadata"]["name"]: c for w in workloads for c in w.claims}
            for done in apply_claims(writer, list(claims.values()), FIELD_MANAGER, simulate):
                report.step(done, f"would apply {mode.words}" if simulate else "applied", "  ")
            targets = []
            for w in workloads:
                target = _target(w, snapshot)
                report.step(w.ref, apply_workload(writer, target, w.migrated, FIELD_MANAGER, simulate), "  ")
                for note in w.notes:  # what each request became and what to know, as migrate reports it
                    report.note(str(note))
                targets.append(target)
            if not simulate:
                for target in targets:
                    report.step(target.ref, wait_ready(connection.api, target, timeout, progress=_say), "  ")
    except StepFailed as exc:
        report.finish(str(exc))
        fail(str(exc), EXIT_STOPPED)
    except ApiError as exc:
        report.finish(str(exc))
        exits.fail(exc)
    if not movable:
        report.say("nothing to migrate now" + (f" in namespace {scope} (-A: every namespace)" if scope else ""))
    elif simulate:
        report.say(f"{mode.value} dry run: nothing was written; run with --apply to migrate")
    report.finish()
    sys.exit(0)


def _apply_queues(api: Any, writes: list, simulate: bool, report: StepReport) -> None:
    from kubectl_gpu.core import kueue_configuration, kueue_notes, merged_mappings
    from kubectl_gpu.cli import yaml_output
    from kubectl_gpu.fleet.queues import apply_queue

    for write in writes:
        report.line_step(apply_queue(api, write, FIELD_MANAGER, simulate))
        for note in write.notes:
            report.note(f"{note.severity.value}: {note.render()}", "  ")
    mappings = merged_mappings(writes)
    configuration = kueue_configuration(mappings)
    for line in kueue_notes(mappings):
        report.say(f"kueue: {line}")
    if configuration is not None:
        report.say("kueue: merge into Kueue's Configuration:\n" + yaml_output.dump(configuration).rstrip("\n"))


def _write_queue_files(output_dir: Path, writes: list) -> list[Path]:
    from kubectl_gpu.cli import yaml_output
    from kubectl_gpu.core import kueue_configuration, merged_mappings
    from kubectl_gpu.fleet.apply import clean_for_file
    from kubectl_gpu.manifests.tree_patch import apply_patch
    import copy

    written: list[Path] = []
    folder = output_dir / "_cluster"
    for write in writes:
        if not write.operations:
            continue
        folder.mkdir(parents=True, exist_ok=True)
        queue = copy.deepcopy(dict(write.queue))
        apply_patch(queue, list(write.operations))
        path = folder / f"{str(queue['kind']).lower()}-{queue['metadata']['name']}.yaml"
        path.write_text(yaml_output.dump(clean_for_file(queue)))
        written.append(path)
    configuration = kueue_configuration(merged_mappings(writes))
    if configuration is not None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "kueue-configuration.yaml").write_text(yaml_output.dump(configuration))
        written.append(folder / "kueue-configuration.yaml")
    return written


def _say(line: str) -> None:
    click.echo(line, err=True)


def _selected_refs(api: Any, selector: str, snapshot: Any, scope: str | None) -> set[str]:
    """KIND/NAMESPACE/NAME of every workload and bare pod with these labels (the plan's refs), one
    list per kind the snapshot holds, as kubectl get -l lists them."""
    from kubectl_gpu.fleet.execute import BUILTIN_PLURALS
    from kubectl_gpu.fleet.snapshot import ref as plan_ref
    from kubectl_gpu.k8s import ApiError, collection_path

    refs: set[str] = set()
    for (api_version, kind), plural in {**BUILTIN_PLURALS, **snapshot.plurals}.items():
        group, _, version = api_version.rpartition("/")
        try:
            listed = list_selected(api, collection_path(group, version, plural, scope), selector)
        except ApiError as exc:
            if exc.not_found:  # a kind this cluster does not serve
                continue
            raise
        # Named by the plan's own rule, so a selected workload is found among the plan's; the kind is
        # the one listed (a list's items may lack theirs).
        refs.update(plan_ref({"kind": kind, "metadata": obj.get("metadata")}) for obj in listed)
    return refs


def _target(plan: Any, snapshot: Any):
    from kubectl_gpu.fleet.execute import BUILTIN_PLURALS, StepFailed, Target

    plural = BUILTIN_PLURALS.get((plan.api_version, plan.kind)) or snapshot.plurals.get((plan.api_version, plan.kind))
    if plural is None:
        raise StepFailed(f"{plan.ref}: the API resource of {plan.api_version} {plan.kind} is unknown")
    return Target(plan.api_version, plan.kind, plural, plan.namespace, plan.name)


def _write_files(output_dir: Path, plans: list) -> list[Path]:
    from kubectl_gpu.cli import yaml_output
    from kubectl_gpu.fleet.apply import clean_for_file
    from kubectl_gpu.fleet.workloads import recreate_manifest

    written: list[Path] = []
    for plan in plans:
        folder = output_dir / (plan.namespace or "_cluster")
        folder.mkdir(parents=True, exist_ok=True)
        for claim in plan.claims:
            path = folder / f"{claim['kind'].lower()}-{claim['metadata']['name']}.yaml"
            if not path.exists():
                path.write_text(yaml_output.dump(claim))
                written.append(path)
        if plan.kind == "Pod":
            pod = recreate_manifest(plan)
            if pod is None:
                continue
            ref = f"pod/{plan.name} -n {plan.namespace}"
            path = folder / f"pod-{plan.name}.yaml"
            path.write_text(f"# kubectl-gpu: replaces the bare pod {plan.ref}, which cannot be changed in place: "
                            f"kubectl delete {ref}, then kubectl create -f this file\n" + yaml_output.dump(pod))
            written.append(path)
            continue
        migrated = plan.migrated
        if migrated is None:
            continue
        path = folder / f"{plan.kind.lower()}-{plan.name}.yaml"
        path.write_text(yaml_output.dump(clean_for_file(migrated)))
        written.append(path)
    return written
