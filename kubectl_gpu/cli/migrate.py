"""`kubectl gpu migrate`: rewrite legacy GPU requests in manifests into DRA claims."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console

from kubectl_gpu.cli import exits
from kubectl_gpu.cluster.fit import checked_translator, fit_options
from kubectl_gpu.cluster.device_classes import mig_device_classes
from kubectl_gpu.cluster.quota import quota_target
from kubectl_gpu.core import kueue_configuration, kueue_notes, merged_mappings
from kubectl_gpu.cluster.shared_gpus import every_gpu_node_shares, lands_only_on_shared_gpus, shared_pools
from kubectl_gpu.dra.gates import EXTENDED_RESOURCE, default_history
from kubectl_gpu.core import (ApiVersion, IntegerGpuMode, KnownClaim, Sharing, TargetDriver, TranslateOptions,
                              is_plain_integer_gpu, known_claims, legacy_requests, mig_profile_of, translate_pod_template)
from kubectl_gpu.core.constants import MIG
from kubectl_gpu.dra.facts import (DRA_API_VERSIONS, DRA_GROUP, DRA_VERSIONS, GFD_REPLICAS_LABEL,
                                   GFD_SHARING_STRATEGY_LABEL, SUPPORTED_KUBERNETES_MINORS, served_dra_versions,
                                   versions_served_text)
from kubectl_gpu.k8s.errors import ApiError, KubeconfigError
from kubectl_gpu.cli.console import migrate_progress
from kubectl_gpu.cli.options import gpu_memory_quantity, target_driver_option
from kubectl_gpu.k8s.name_completion import complete_namespaces
from kubectl_gpu.manifests import (DraTarget, FileResult, Format, InputError, MigrateOptions, MigrationResult, collect_sources,
                                   is_stream, migrate_files, unified_diff)
from kubectl_gpu.manifests.output import (JsonList, OutputError, StreamJoiner, WriteReport, join_stream, output_paths,
                                          write_files)
from kubectl_gpu.manifests.report import print_report, print_write_failures

if TYPE_CHECKING:
    from kubectl_gpu.cluster import ClusterProfile

EXIT_OK = exits.OK
EXIT_CHANGES = exits.FINDINGS  # --check/--diff: something would change (kubectl diff exits 1 too)
EXIT_NOT_MIGRATED = exits.NOT_MIGRATED  # some input could not be migrated; the rest was still written
EXIT_LEGACY_LEFT = exits.LEGACY_LEFT  # --check/--diff: GPU requests left that migrate cannot rewrite

EPILOG = """\b
What migrate's exit codes mean (table below):
  0  everything migrated (or nothing needed to change)
  1  --check or --diff: some manifest would change (like kubectl diff)
  2  usage error (bad option, missing file, a file or directory that cannot
     be read, all of them named; a symbolic link to nothing; unreadable
     --cluster files); nothing was written
  3  some input was not migrated (a document that does not parse or repeats
     a key with different values, an invalid legacy value, one container
     mixing two GPU plugins' resources, a claim that no device of the
     --cluster/--from-cluster profile can satisfy); everything else was
     still migrated and written, and the report on stderr says what to fix;
     or some file could not be written (the report lists which were and
     which were not; each file is replaced whole or not at all)
  9  --check or --diff: GPU requests are left that migrate cannot rewrite
     (inside strings, containers outside a pod template, an operator's GPU
     count field): the report names each place and what to do there; it
     wins over 1, so a CI gate fails until they are gone. Without --check
     or --diff they are warnings and leave the exit code as it is.

\b
Examples:
  kubectl gpu migrate deploy.yaml > deploy-dra.yaml
  kubectl gpu migrate --diff k8s/
  kubectl gpu migrate -f base/ -f overlays/prod -R --check   # kubectl apply's -f and -R
  kubectl gpu migrate --in-place --sharing mps k8s/
  kubectl get resourceslices,deviceclasses -o yaml > cluster.yaml
  kubectl gpu migrate --cluster cluster.yaml k8s/   # checked against its GPUs
  kubectl gpu migrate --check k8s/        # in CI: fail while legacy GPU requests remain
  helm template my-chart | kubectl gpu migrate - | kubectl apply -f -

\b
Live clusters (see their --help):
  kubectl gpu migrate --from-cluster [--apply]   rewrite live workloads (server-side apply)
  kubectl gpu migrate nodes [NODE...] [--apply]  switch a wave of GPU nodes to DRA
"""


@click.command(name="migrate", epilog=exits.epilog(EPILOG), context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("inputs", nargs=-1, metavar="[FILE|DIR|-]...")
@click.option("-f", "--filename", "filenames", multiple=True, metavar="FILE|DIR|-",
              help="A manifest file, a directory of them or - (stdin), as kubectl apply -f takes them "
                   "(repeatable; after the FILE arguments).")
@click.option("-R", "--recursive", is_flag=True,
              help="Also read the subdirectories of -f directories, as kubectl apply -R (a DIR argument is "
                   "always read with its subdirectories).")
@click.option("--in-place", is_flag=True,
              help="Rewrite the input files that change (a symbolic link: the file it reaches; in the encoding "
                   "the file was read in, UTF-16 or a byte order mark included, as kubectl reads them).")
@click.option("--output-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Write every migrated file under DIR, mirroring the input paths.")
@click.option("--diff", "show_diff", is_flag=True,
              help="Print a unified diff per file instead of the migrated manifests.")
@click.option("--check", is_flag=True,
              help="Write nothing; exit 1 if any manifest would change (for CI).")
@click.option("-o", "--output", "output_format", type=click.Choice(["yaml", "json"]),
              help="Output format (default: the format of each input file).")
@click.option("--api-version", type=click.Choice(list(DRA_VERSIONS)), default=None,
              help=f"resource.k8s.io version: {versions_served_text()}. "
                   "Default: the newest the cluster profile serves, else v1.")
@click.option("--sharing", type=click.Choice([s.value for s in Sharing]), default=Sharing.AUTO.value,
              show_default=True,
              help="Fractional GPUs: auto (consumable capacity where the cluster profile's GPUs advertise "
                   "allowMultipleAllocations and DRAConsumableCapacity is on, else whole GPUs; whole GPUs "
                   "without a profile), consumable (KEP-5075), exclusive (whole GPUs), or one shared claim per "
                   "workload with timeslicing/mps.")
@click.option("--cluster", "cluster_files", multiple=True, metavar="FILE|DIR",
              help="Cluster profile from files: the output of `kubectl get resourceslices,deviceclasses -o yaml` "
                   "(repeatable). Every claim is checked against these devices; one no device can satisfy is "
                   "an error (exit 3). Nodes among them (`kubectl get nodes -o yaml`) name the node pools whose "
                   "device plugin time-slices GPUs.")
@click.option("--from-cluster", is_flag=True,
              help="Read the cluster profile (version, DeviceClasses, ResourceSlices, Nodes) from the current "
                   "kubeconfig context, as --cluster does from files.")
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None,
              help="Kubeconfig for --from-cluster (default: $KUBECONFIG, ~/.kube/config).")
@click.option("--context", default=None, help="Kubeconfig context for --from-cluster.")
@click.option("--kubernetes-version", metavar="1.MINOR",
              help="Kubernetes version of the target cluster (its DRA feature gate defaults); default: the "
                   "live cluster's, or the oldest that serves the profile files' API version.")
@click.option("--feature-gates", metavar="NAME=BOOL,...",
              help="DRA feature gates that differ from the version's defaults, as kube-apiserver takes them "
                   "(e.g. DRAConsumableCapacity=true).")
@click.option("--integer-gpus", type=click.Choice([m.value for m in IntegerGpuMode]),
              default=IntegerGpuMode.REWRITE.value, show_default=True,
              help="Plain nvidia.com/gpu: N: rewrite to claims, or leave it to a DeviceClass with "
                   "extendedResourceName (KEP-5004).")
@click.option("--device-classes", is_flag=True,
              help="Also emit a DeviceClass with extendedResourceName (KEP-5004) for every MIG profile the "
                   "inputs request (and the cluster profile publishes), and leave those nvidia.com/mig-* "
                   "requests as they are: the scheduler serves them from DRA (needs DRAExtendedResource: off by "
                   "default in 1.34-1.35, on from 1.36; with a cluster profile whose gate is off they are "
                   "rewritten). Written before the manifests on stdout, or to device-classes.yaml under "
                   "--output-dir.")
@click.option("--kueue", is_flag=True,
              help="Also carry Kueue's GPU quota: ClusterQueues in the inputs get the MIG device count their "
                   "quotas need, and the deviceClassMappings Kueue's Configuration needs are written after the "
                   "manifests on stdout, or to kueue-configuration.yaml under --output-dir.")
@click.option("--gpu-memory", callback=gpu_memory_quantity, metavar="QUANTITY",
              help="Memory of one GPU in the node pool (e.g. 80Gi): lets fractions become memory shares.")
@click.option("--aliyun-memory-unit", type=click.Choice(["GiB", "MiB"]), default="GiB", show_default=True,
              help="Unit of aliyun.com/gpu-mem (the gpushare plugin's --memory-unit).")
@target_driver_option
@click.option("-n", "--namespace", shell_complete=complete_namespaces,
              help="Namespace for objects that name none (claims go there too).")
@click.option("-q", "--quiet", is_flag=True,
              help="Report only errors (each under its file and object); the exit code says the rest.")
def command(
    inputs: tuple[str, ...],
    filenames: tuple[str, ...],
    recursive: bool,
    in_place: bool,
    output_dir: Path | None,
    show_diff: bool,
    check: bool,
    output_format: str | None,
    api_version: str | None,
    sharing: str,
    cluster_files: tuple[str, ...],
    from_cluster: bool,
    kubeconfig: str | None,
    context: str | None,
    kubernetes_version: str | None,
    feature_gates: str | None,
    integer_gpus: str,
    device_classes: bool,
    kueue: bool,
    gpu_memory: str | None,
    aliyun_memory_unit: str,
    target_driver: str,
    namespace: str | None,
    quiet: bool,
) -> None:
    """Rewrite legacy GPU requests (nvidia.com/gpu, fractions, vcuda, MIG, HAMi, ACK gpushare,
    TPU) in manifests into DRA claims: ResourceClaimTemplates, or with --sharing timeslicing|mps
    one ResourceClaim per workload.

    Reads files, directories (recursively: *.yaml, *.yml, *.json) and '-' (stdin). Comments,
    key order and every untouched document survive; the DRA objects the rewritten pods need
    are added once, just before the first object that uses them. Documents are migrated and
    written to stdout one at a time (with --device-classes, once all are read). A report goes
    to stderr, and progress too while stderr is a terminal.
    """
    if not inputs and not filenames:
        raise click.UsageError("no input: name FILE|DIR|- arguments or -f FILE|DIR|- (see the examples)")
    if recursive and not filenames:
        raise click.UsageError("-R reads the directories -f names: add -f DIR (a DIR argument is always "
                               "read with its subdirectories)")
    inputs = (*inputs, *filenames)
    if any(not name for name in (*inputs, *cluster_files)):
        # An unset shell variable ("$DIR") would otherwise name the working directory, and with
        # --in-place rewrite everything under it; kubectl refuses `-f ''` too.
        raise click.UsageError("an empty file name ('') names nothing: name a FILE, a DIR or - (is a shell "
                               "variable unset?)")
    if in_place and output_dir is not None:
        raise click.UsageError("use either --in-place or --output-dir, not both")
    streams = [name for name in inputs if is_stream(name)] if in_place or output_dir is not None else []
    if streams:
        name = streams[0]
        what = "standard input ('-')" if name == "-" else f"{name} (a pipe or device, not a file)"
        raise click.UsageError(f"{what} can only be written to stdout; drop --in-place/--output-dir")
    profile, cluster_claims = _cluster_profile(cluster_files, from_cluster, kubeconfig, context, kubernetes_version,
                                               feature_gates)
    _check_api_version_served(api_version, profile)
    fitted = fit_options(
        TranslateOptions(
            api_version=ApiVersion.parse(api_version or "v1"),
            sharing=Sharing(sharing),
            integer_gpus=IntegerGpuMode(integer_gpus),
            gpu_memory=gpu_memory,
            aliyun_memory_unit=aliyun_memory_unit,
            target_driver=TargetDriver(target_driver),
        ),
        profile,
        api_version_given=api_version is not None,
    )
    # The classes --device-classes emits serve every MIG profile requested here, so those requests stay as
    # they are (KEP-5004), unless the cluster profile says the scheduler cannot serve them.
    leave_mig = device_classes and _extended_resources_served(profile)
    options = MigrateOptions(
        translate=fitted.options,
        namespace=namespace,
        self_contained_files=in_place or output_dir is not None or show_diff,
        known_claims=cluster_claims,
        quota_target=quota_target(profile),
        mig_stays_legacy=leave_mig,
        kueue=kueue,
        dra_target=_dra_target(profile, api_version),
    )
    try:
        sources = collect_sources(inputs, sys.stdin, top_level_only=() if recursive else frozenset(filenames))
    except InputError as err:
        raise click.UsageError(str(err)) from err
    translate = checked_translator(profile) if profile is not None else translate_pod_template
    mig_requests: dict[str, int] = {}  # legacy MIG resource -> pod templates asking for it
    whole_gpus: list[int] = [0]  # pod templates whose nvidia.com/gpu became whole GPUs
    # The classes --device-classes emits serve every MIG profile requested here, so those requests stay as
    # they are (KEP-5004), unless the cluster profile says the scheduler cannot serve them.
    leave_mig = device_classes and _extended_resources_served(profile)

    def recording(template, translate_options):  # type: ignore[no-untyped-def]
        if profile is not None and not translate_options.gpu_slots \
                and lands_only_on_shared_gpus(template, profile.slot_nodes):
            translate_options = replace(translate_options, gpu_slots=True)
        if leave_mig:
            served = {r.name for r in legacy_requests(template) if r.family == MIG and mig_profile_of(r.name)}
            if served:
                translate_options = replace(translate_options,
                                            dra_extended_resources=translate_options.dra_extended_resources | served)
        translation = translate(template, translate_options)
        for name in {r.name for r in translation.legacy if r.family == MIG and r.amount > 0}:
            mig_requests[name] = mig_requests.get(name, 0) + 1
        if translation.patch and any(is_plain_integer_gpu(r) for r in translation.legacy):
            whole_gpus[0] += 1
        return translation

    migrations = migrate_files(sources, options, Format(output_format) if output_format else None, recording)
    # Manifests go to stdout as each document is done, unless the DRA DeviceClasses must come
    # first (they depend on every input): then the whole stream is written at the end.
    to_stdout = not (check or show_diff or in_place or output_dir is not None)
    streaming = to_stdout and not device_classes
    joiner = StreamJoiner(_stdout_write)
    # -o json prints one value, however many files (kubectl's List of several objects).
    json_list = JsonList(_stdout_write) if to_stdout and output_format == "json" else None
    files: list[FileResult] = []
    with migrate_progress(len(sources), writes_stdout=to_stdout or show_diff, quiet=quiet) as progress:
        for migration in migrations:
            progress.file(migration)
            if streaming and json_list is not None:
                for _ in progress.counting(migration.pieces()):
                    pass
                json_list.file(migration.result.rendered)
            elif streaming:
                joiner.file(progress.counting(migration.pieces()), lambda m=migration: m.format)
            else:
                for _ in progress.counting(migration.pieces()):
                    pass
            files.append(migration.result)
            if show_diff and migration.result.changed:
                _stdout_write(unified_diff(migration.result.rendered))
    result = MigrationResult(tuple(files))
    rendered = [f.rendered for f in result.files]
    classes = _device_classes(mig_requests, profile) if device_classes else []
    mappings = merged_mappings([c for f in result.files for c in f.plan.quotas if c.mappings]) if kueue else ()
    kueue_config = kueue_configuration(mappings)

    writes = WriteReport()
    if classes or kueue_config is not None:  # only then: migrate FILE loads no YAML writer it does not use
        from kubectl_gpu.cli import yaml_output
    if not check:
        if classes and output_dir is None and not show_diff:
            # The classes come first, in the stream's own format (JSON values, or YAML documents).
            if json_list is not None:
                for device_class in classes:
                    json_list.value(device_class)
            else:
                from kubectl_gpu.cli import yaml_output

                _stdout_write(yaml_output.dump_all(classes) + "---\n")
        if output_dir is not None:
            try:
                targets = output_paths(rendered, output_dir)
            except OutputError as err:
                raise click.UsageError(str(err)) from err
            jobs = [(target, file.text, file.source.path, file.source.encoding)
                    for target, file in zip(targets, rendered)]
            if classes:
                from kubectl_gpu.cli import yaml_output

                jobs.append((output_dir / "device-classes.yaml", yaml_output.dump_all(classes), None,
                             "utf-8"))
            if kueue_config is not None:
                jobs.append((output_dir / "kueue-configuration.yaml", yaml_output.dump(kueue_config), None, "utf-8"))
            writes = write_files(jobs)
        elif in_place:
            writes = write_files([(file.source.path, file.text, file.source.path, file.source.encoding)
                                  for file in rendered if file.changed and file.source.path is not None])
        elif to_stdout and not streaming and json_list is not None:
            for file in rendered:
                json_list.file(file)
        elif to_stdout and not streaming:
            _stdout_write(join_stream(rendered))
        if kueue_config is not None and to_stdout:
            # After the manifests: Kueue's own configuration, to merge into its manager's (not to apply).
            if json_list is not None:
                json_list.value(kueue_config)
            else:
                _stdout_write("---\n" + yaml_output.dump(kueue_config))
        if json_list is not None:
            json_list.close()

    console = Console(stderr=True, highlight=False, soft_wrap=True)
    if not quiet:
        if profile is not None:
            console.print(profile.describe(), markup=False)
        for line in fitted.notes:
            console.print(line, markup=False)
        if device_classes:
            console.print(_device_classes_report(classes, mig_requests, profile), markup=False)
        for line in _shared_pool_warnings(profile, whole_gpus[0]):
            console.print(line, markup=False)
    print_report(result, console, written=not (check or show_diff), quiet=quiet)
    if not quiet:
        for line in kueue_notes(mappings):
            console.print(f"kueue: {line}", markup=False)
        if kueue_config is not None and not to_stdout and output_dir is None:
            console.print("kueue: merge into Kueue's Configuration:\n" + yaml_output.dump(kueue_config), markup=False)
    if writes.failed:
        print_write_failures(writes, console, quiet=quiet)
        sys.exit(EXIT_NOT_MIGRATED)
    sys.exit(_exit_code(result, check or show_diff))


def _served_versions(profile: ClusterProfile | None) -> tuple[int, tuple[str, ...]] | None:
    """The profile's Kubernetes minor and the resource.k8s.io versions its release serves (a minor
    past the newest known is read as the newest); None without a known, supported release."""
    minor = profile.kubernetes_minor if profile is not None else None
    if minor is None or minor < SUPPORTED_KUBERNETES_MINORS[0]:
        return None
    return minor, tuple(served_dra_versions(min(minor, SUPPORTED_KUBERNETES_MINORS[-1])))


def _check_api_version_served(api_version: str | None, profile: ClusterProfile | None) -> None:
    """--api-version naming a version the profile's Kubernetes release no longer serves (v1beta1 on
    1.38) is a usage error: every claim written in it would be refused."""
    release = _served_versions(profile)
    if api_version is None or release is None:
        return
    minor, served = release
    if api_version in served:
        return
    last = next((v.until_minor for v in DRA_API_VERSIONS if v.name == api_version), None)
    if last is None or min(minor, SUPPORTED_KUBERNETES_MINORS[-1]) <= last:
        return  # not yet served there: the profile's note says so (a release DRA's beta was switched on for)
    raise click.UsageError(
        f"--api-version {api_version}: Kubernetes 1.{minor} no longer serves {DRA_GROUP}/{api_version} (served "
        f"through 1.{last}), so the API server would refuse every claim written in it: use --api-version "
        f"{' or '.join(served)}, or leave --api-version out to write the newest the cluster serves ({served[0]})")


def _dra_target(profile: ClusterProfile | None, api_version: str | None) -> DraTarget | None:
    """With a cluster profile of a known release: the versions that release serves (a profile read from
    files knows only the versions its objects were written in), to which the input's own DRA objects
    are rewritten when it no longer serves theirs: the ``--api-version`` asked for (it is served:
    checked before), else the newest."""
    release = _served_versions(profile)
    if release is None or not release[1]:
        return None
    minor, served = release
    return DraTarget(api_version if api_version in served else served[0], served, minor)


def _shared_pool_warnings(profile: ClusterProfile | None, whole_gpu_templates: int) -> list[str]:
    """Where nvidia.com/gpu: 1 may have been a slot of a shared GPU: the profile's shared pools by
    name, or (without Nodes to read) the labels to look for."""
    if profile is not None and profile.nodes:
        everywhere = every_gpu_node_shares(profile.nodes)
        return [f"warning: {pool.describe(everywhere)}" for pool in shared_pools(profile.nodes)]
    if not whole_gpu_templates:
        return []
    return [f"warning: {whole_gpu_templates} pod template(s) had nvidia.com/gpu read as whole GPUs; on nodes where "
            "NVIDIA's device plugin shares each GPU (GFD labels "
            f"{GFD_SHARING_STRATEGY_LABEL}=time-slicing|mps, {GFD_REPLICAS_LABEL} above 1) each was one slot of a "
            f"GPU: check `kubectl get nodes -L {GFD_SHARING_STRATEGY_LABEL},{GFD_REPLICAS_LABEL}`, and give migrate "
            "the Nodes (`kubectl get nodes -o yaml` as one more --cluster file, or --from-cluster) to have such "
            "pools named"]


def _stdout_write(text: str) -> None:
    """Write to stdout now (a reader such as `| head -1` sees each document as it is done).  A reader
    that has gone (exit 141, quietly, as kubectl dies of SIGPIPE) or a full disk (exit 74) ends the
    run where every command's does: kubectl_gpu/cli/main.py, exits.output_failure."""
    sys.stdout.write(text)
    sys.stdout.flush()


def _device_classes(mig_requests: dict[str, int], profile: ClusterProfile | None) -> list[dict]:
    published = profile.mig_profiles() if profile is not None else ()
    return mig_device_classes(sorted(mig_requests), published)


def _extended_resources_served(profile: ClusterProfile | None) -> bool:
    """Whether the scheduler serves extended resources from DRA: unknown without a profile (the report
    names the gate), else the profile's DRAExtendedResource gate."""
    return profile is None or profile.gate(EXTENDED_RESOURCE)


def _device_classes_report(classes: list[dict], mig_requests: dict[str, int], profile: ClusterProfile | None) -> str:
    if not classes:
        return "--device-classes: no MIG profile is requested here (or published by the cluster profile): no DeviceClass"
    served = {c["spec"]["extendedResourceName"] for c in classes}
    needed = ", ".join(f"{name} ({count} pod template(s))" for name, count in sorted(mig_requests.items())
                       if name in served)
    lines = [f"--device-classes: {len(classes)} DeviceClass(es) with extendedResourceName (KEP-5004): "
             + ", ".join(f"{c['metadata']['name']} -> {c['spec']['extendedResourceName']}" for c in classes)]
    gate = f"{EXTENDED_RESOURCE} ({default_history(EXTENDED_RESOURCE)}; kube-apiserver, kube-scheduler, kubelet)"
    if _extended_resources_served(profile):
        lines.append("MIG requests they serve are left as they are" + (f": {needed}" if needed else "")
                     + f"; the scheduler serves them from DRA devices once the classes exist, which needs {gate} "
                       "and no device plugin advertising the same names on those nodes")
    else:
        lines.append(f"MIG requests are still rewritten: {EXTENDED_RESOURCE} is off in the cluster profile "
                     f"({profile.gates_source if profile else ''}); with {gate} on, the classes would serve "
                     + (needed or "them") + " without any rewrite")
    lines.append("(nvidia.com/gpu needs no class of ours: NVIDIA's gpu.nvidia.com DeviceClass maps it on "
                 "resource.k8s.io/v1; see --integer-gpus extended-resource)")
    return "\n".join(lines)


ClusterClaims = dict[str | None, tuple[KnownClaim, ...]]


def _cluster_profile(files: tuple[str, ...], live: bool, kubeconfig: str | None, context: str | None,
                     kubernetes_version: str | None, feature_gates: str | None
                     ) -> tuple[ClusterProfile | None, ClusterClaims]:
    """The profile, and (read live) the ResourceClaimTemplates and ResourceClaims the cluster holds by
    namespace, so a legacy GPU beside one of them is judged as beside one in the input."""
    if not (files or live or kubernetes_version or feature_gates):
        return None, {}  # `migrate FILE`: the profile's module (and the slice reader) never load
    from kubectl_gpu.cluster.profile import (ProfileError, parse_feature_gates, parse_kubernetes_version,
                                             read_live_profile)

    if files and live:
        raise click.UsageError("use either --cluster FILE|DIR or --from-cluster, not both")
    try:
        overrides = parse_feature_gates(feature_gates) if feature_gates else None
        minor = parse_kubernetes_version(kubernetes_version) if kubernetes_version else None
        if files:
            # Profile files are read by PyYAML, a second YAML library `migrate FILE` never needs.
            from kubectl_gpu.cluster.files import load_profile_files

            return load_profile_files(files, kubernetes_minor=minor, gate_overrides=overrides), {}
    except (ProfileError, ValueError) as err:
        raise click.UsageError(str(err)) from err
    if not live:
        if minor is not None or overrides:
            raise click.UsageError("--kubernetes-version and --feature-gates describe a cluster profile: "
                                   "add --cluster FILE|DIR or --from-cluster")
        return None, {}
    # The client (the kubernetes package and aiohttp, most of a second to import) only when a
    # cluster is read: `migrate FILE` and every --help stay offline (tests/test_cli_startup.py).
    from kubectl_gpu.k8s.kubeconfig import connect
    from kubectl_gpu.k8s.rest import get_json

    try:
        connection = connect(kubeconfig, context)
    except KubeconfigError as err:
        raise click.UsageError(str(err)) from err
    try:
        profile = read_live_profile(lambda path, query: get_json(connection.api, path, query),
                                    f"cluster {connection.server}", overrides, fetch_text=connection.api.get_text)
        claims = _live_claims(connection.api, profile, connection.namespace)
    except ApiError as err:
        # Nothing was written; the code says unreachable or forbidden, as for every command.
        click.echo(f"error: cannot read the cluster profile: {err}", err=True)
        sys.exit(exits.code_for(err))
    finally:
        connection.close()
    if minor is not None and profile.kubernetes_minor != minor:
        raise click.UsageError(f"--kubernetes-version 1.{minor}, but the cluster runs 1.{profile.kubernetes_minor}")
    return profile, claims


def _live_claims(api: Any, profile: ClusterProfile, context_namespace: str | None) -> ClusterClaims:
    """Every ResourceClaimTemplate and ResourceClaim of the cluster, by namespace (those of the
    context's namespace also for objects that name none, where kubectl applies them); a user who may
    not list them gets a note, and claims outside the input stay unchecked (a warning per pod says so)."""
    from kubectl_gpu.k8s.lists import list_objects

    if profile.api_version is None:
        return {}
    found: dict[str | None, list[KnownClaim]] = {}
    for plural, kind in (("resourceclaimtemplates", "ResourceClaimTemplate"), ("resourceclaims", "ResourceClaim")):
        try:
            items = list_objects(api, f"/apis/{profile.api_version.value}/{plural}")
        except ApiError as err:
            if err.status not in (401, 403, 404):
                raise
            click.echo(f"note: {plural} of the cluster not read ({err.status}): a legacy GPU beside a claim "
                       "that is not in the input is not checked", err=True)
            continue
        for item in items:
            namespace = (item.get("metadata") or {}).get("namespace")
            found.setdefault(namespace, []).extend(known_claims({**item, "kind": kind}))
    if context_namespace and context_namespace in found:
        found[None] = [*found.get(None, []), *found[context_namespace]]
    return {namespace: tuple(claims) for namespace, claims in found.items()}


def _exit_code(result: MigrationResult, report_changes: bool) -> int:
    if result.not_migrated:
        return EXIT_NOT_MIGRATED
    if report_changes and result.legacy_left:
        return EXIT_LEGACY_LEFT
    if report_changes and result.changed:
        return EXIT_CHANGES
    return EXIT_OK
