"""`kubectl gpu explain -f claim.yaml --slices slices.yaml`: why a claim can or cannot be allocated.

Offline: everything comes from files (or, with --local, from this machine's GPUs through NVML).
Files may hold several documents and `kind: List` objects mixing claims, templates, DeviceClasses,
ResourceSlices and allocated ResourceClaims.  Exit codes (kubectl_gpu/cli/exits.py): 0 when every
claim can be allocated, 1 when one cannot (or is invalid), 2 for bad usage or unreadable input.
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path
from typing import Any, Sequence

import click

from kubectl_gpu.allocator.features import releases_text
from kubectl_gpu.dra.devices import InvalidResourceSlice, SliceFacts
from kubectl_gpu.cli import exits
from kubectl_gpu.cli.completion import names_from_cluster
from kubectl_gpu.collector import with_collector_paused
from kubectl_gpu.explain import InvalidClaim, InvalidTaintRule, allocator_nodes, explain_objects, sort_objects
from kubectl_gpu.explain.loading import UnreadableInput, load_documents
from kubectl_gpu.explain.render import render_table, to_dict
from kubectl_gpu.input_error import InputError
from kubectl_gpu.input_text import NotText, decode
from kubectl_gpu.k8s.options import ClusterOptions, cluster_options


def _load(path: str) -> list[Any]:
    try:
        if path == "-":  # bytes, as kubectl reads stdin; a text stream without them (a test's) is text already
            buffer = getattr(sys.stdin, "buffer", None)
            text = decode(buffer.read(), "<stdin>")[0] if buffer is not None else sys.stdin.read().removeprefix("\ufeff")
        else:
            text = decode(Path(path).read_bytes(), path)[0]
    except OSError as err:
        raise InputError(f"cannot read {path}: {err.strerror or err}") from None
    except NotText as err:
        raise InputError(str(err)) from None
    try:
        return load_documents(text, path)
    except UnreadableInput as err:
        raise InputError(str(err)) from None


def _local_slices() -> list[dict[str, Any]]:
    try:
        from kubectl_gpu.inventory import local_resource_slices
    except ImportError as err:
        raise InputError(
            f"--local needs the NVML inventory (kubectl_gpu.inventory.local_resource_slices), which is not available: {err}"
        ) from None
    try:
        return list(local_resource_slices())
    except Exception as err:  # the inventory reports missing NVML/GPUs with its own message
        raise InputError(f"--local: cannot read this machine's GPUs: {err}") from None


EPILOG = exits.epilog("""\b
Examples:
  kubectl gpu explain my-pod -n ml               # a pod's claims against the live cluster
  kubectl gpu explain claim/train-gpus --node gpu-7
  kubectl gpu explain -f claim.yaml --slices slices.yaml --classes classes.yaml
  kubectl gpu migrate pod.yaml | kubectl gpu explain -f - --local   # this machine's GPUs
""")


@click.command(name="explain", epilog=EPILOG, help="")
@click.argument("pod", required=False, metavar="[POD | pod/NAME | claim/NAME]",
                shell_complete=names_from_cluster("pods"))
@cluster_options(outputs=("table", "wide", "json", "yaml"), selects="pods")  # explanations, not objects to name
@click.option("-f", "--filename", "files", multiple=True, metavar="FILE",
              help="ResourceClaim/ResourceClaimTemplate manifests (may also hold slices and classes; - for stdin).")
@click.option("--slices", "slice_files", multiple=True, metavar="FILE",
              help="ResourceSlices, e.g. `kubectl get resourceslices -o yaml` (repeatable).")
@click.option("--classes", "class_files", multiple=True, metavar="FILE",
              help="DeviceClasses, e.g. `kubectl get deviceclasses -o yaml` (repeatable).")
@click.option("--allocations", "allocation_files", multiple=True, metavar="FILE",
              help="Allocated ResourceClaims (`kubectl get resourceclaims -A -o yaml`) to tell free devices from taken.")
@click.option("--local", is_flag=True, help="Also use this machine's GPUs, as the NVIDIA DRA driver would publish them.")
@click.option("--kubernetes-version", metavar="1.MINOR",
              help="Compile the claims' selectors under this release's DRA feature gates (default: the live "
                   "cluster's version and its API server's own gates from /metrics; with -f the oldest release "
                   "serving the slices' API version; a slice with allowMultipleAllocations proves "
                   "DRAConsumableCapacity on).")
@click.option("--feature-gates", metavar="NAME=BOOL,...",
              help="DRA feature gates that differ from the cluster's (e.g. DRAConsumableCapacity=true).")
@click.option("--node", "node", metavar="NAME",
              help="Allocate on this node only (its labels, for slices selecting nodes by label, from the "
                   "cluster's Node or a Node object among the files; without one every node selector is "
                   "taken to match).")
def command(pod: str | None, files: tuple[str, ...], slice_files: tuple[str, ...], class_files: tuple[str, ...],
            allocation_files: tuple[str, ...], local: bool, kubernetes_version: str | None,
            feature_gates: str | None, node: str | None = None, **values: Any) -> None:
    """Explain how each device request of a claim meets the devices in ResourceSlices.

    For every request: devices in the DeviceClass, how many each selector matches and rejects,
    how many are free, and CEL runtime errors as the scheduler reports them (a missing attribute
    aborts scheduling; it is not a non-match).  Without a DeviceClass for gpu.nvidia.com or
    mig.nvidia.com the NVIDIA driver's definitions are used, and for hami-core-gpu.project-hami.io
    HAMi's DRA driver's, and the output says so.  HAMi's GPUs (kubectl gpu inventory
    --target-driver hami) are shared: each claim consumes cores (% of the GPU) and memory until
    one runs out, and a claim that names neither takes the whole GPU (the request policies' defaults).

    \b
    Whether a claim can be allocated, on which node and with which devices
    (pool/device per request, the firstAvailable alternative chosen, the device
    configuration) is decided by Kubernetes' structured allocator
    (k8s.io/dynamic-resource-allocation structured at commit 3d03671) as the
    scheduler runs it: a pod's claims together on one node, under the cluster's
    DRA feature gates (on by default from these releases; --feature-gates):
    {releases}
    A search that exceeds its step budget says "cannot be decided", never
    "cannot be allocated".  DeviceTaintRules are read from the cluster or from
    the files beside the slices.
    """
    options = ClusterOptions(**values)
    output = options.output
    read: Any = None  # the objects read from the files, kept until the end (see skip_teardown below)
    try:
        if pod:
            explanation = _explain_live(pod, options, kubernetes_version, feature_gates, node)
        elif files:
            explanation, read = _explain_files(files, slice_files, class_files, allocation_files, local, options,
                                               kubernetes_version, feature_gates, node)
        elif options.all_namespaces or options.selector:
            explanation = _explain_live(None, options, kubernetes_version, feature_gates, node)
        else:
            raise InputError("pass a POD or claim/NAME (live cluster), -A or -l SELECTOR (every pod with DRA "
                             "claims), or -f FILE (claims or templates)")
    except InputError as err:
        raise exits.bad_input(err) from None
    if output in {"json", "yaml"}:
        from kubectl_gpu.cli.reports import print_structured

        print_structured(to_dict(explanation), output)
    else:
        from kubectl_gpu.cli.console import text_console

        render_table(explanation, text_console(), wide=output == "wide", headers=not options.no_headers)
    # Everything went to stdout and every file read is closed: the executable may end without
    # freeing the explanation and ``read`` (the parsed slices, their devices) object by object.
    exits.skip_teardown()
    sys.exit(0 if explanation.allocatable else 1)


# The release table comes from dra/gates.py (the one home of each gate's defaults).
command.help = inspect.cleandoc(command.callback.__doc__ or "").replace("{releases}", "\n".join(
    ["always     counts, allocationMode All, matchAttribute, distinctAttribute,",
     "           pools (generations, resourceSliceCount), 32 devices per claim",
     *releases_text(76).splitlines()]))

CLAIM_TYPES = ("claim", "claims", "resourceclaim", "resourceclaims", "resourceclaim.resource.k8s.io")
POD_TYPES = ("pod", "pods", "po")


def _explain_live(target: str | None, options: ClusterOptions, kubernetes_version: str | None = None,
                  feature_gates: str | None = None, node: str | None = None) -> Any:
    """`explain POD`, `explain claim/NAME` (kubectl's TYPE/NAME), or with no target every pod with
    DRA claims (-A, -l): claims (or templates) against the cluster's slices, classes and
    allocations, fetched through kubectl_gpu.inspect.fetch, compiled under the cluster's gates."""
    from kubectl_gpu.inspect.fetch import explain_claim_live, explain_pod_live, explain_pods_live

    kind, name = "pod", target
    if target and "/" in target:
        kind, _, name = target.partition("/")
        if kind.lower() in CLAIM_TYPES:
            kind = "claim"
        elif kind.lower() not in POD_TYPES:
            raise InputError(f"{target}: explain takes a pod (NAME or pod/NAME) or a ResourceClaim (claim/NAME)")
    try:
        connection = options.connect()
        namespace = options.namespace or connection.namespace
        gates = _live_gates(connection.api, kubernetes_version, feature_gates)
        if name is None:
            return explain_pods_live(connection.api, None if options.all_namespaces else namespace, options.selector,
                                     gates, node)
        if kind == "claim":
            return explain_claim_live(connection.api, namespace, name, gates, node)
        return explain_pod_live(connection.api, namespace, name, gates, node)
    except (InvalidResourceSlice, InvalidClaim, InvalidTaintRule) as err:
        raise InputError(str(err)) from None
    except exits.cluster_errors() as err:
        exits.fail(err)


def _live_gates(api: Any, kubernetes_version: str | None, feature_gates: str | None) -> Any:
    """The live cluster's profile (kubectl_gpu.cluster), for the fetched objects: gates from its version's
    defaults, the API server's own from /metrics where RBAC allows, what its slices prove, then
    --feature-gates; and the devices, which explain reuses rather than builds again.  /version
    and /metrics are read beside the other fetches; the answer is built once those arrive."""
    from concurrent.futures import ThreadPoolExecutor

    from kubectl_gpu.cluster import ProfileError, build_profile, parse_feature_gates, parse_kubernetes_version
    from kubectl_gpu.cluster.profile import read_server_gates

    try:
        minor = parse_kubernetes_version(kubernetes_version) if kubernetes_version else None
        overrides = parse_feature_gates(feature_gates) if feature_gates else None
    except ProfileError as err:
        raise click.UsageError(str(err)) from err
    pool = ThreadPoolExecutor(2)
    version = pool.submit(api.get_json, "/version")
    server = pool.submit(read_server_gates, api.get_text)
    pool.shutdown(wait=False)

    def profile_of(dra_objects: Any) -> Any:
        cluster_minor = minor
        if cluster_minor is None:
            match = re.match(r"\d+", str(version.result().get("minor") or ""))
            cluster_minor = int(match.group()) if match else None
        # explain compiles under its gates and reuses its devices (built once, to prove gates)
        return build_profile("the cluster", objects=[*dra_objects.slices, *dra_objects.classes],
                             kubernetes_minor=cluster_minor, gate_overrides=overrides, server_gates=server.result())

    return profile_of


def _live_devices(options: ClusterOptions) -> Any:
    """Without --slices: the live cluster's ResourceSlices, DeviceClasses and allocated claims."""
    from kubectl_gpu.inspect.fetch import discover_dra, fetch_dra

    try:
        connection = options.connect()
        return fetch_dra(connection.api, discover_dra(connection.api))
    except exits.cluster_errors() as err:
        raise InputError(
            "no ResourceSlices to explain against, and the cluster could not be read for them "
            f"({err}); pass --slices FILE (kubectl get resourceslices -o yaml), put them in the -f file, "
            "or use --local") from None


def _profile(slices: list[Any], classes: list[Any], kubernetes_version: str | None,
             feature_gates: str | None) -> tuple[frozenset[str] | None, Sequence[SliceFacts]]:
    """The DRA feature gates of the cluster these objects describe (kubectl_gpu.cluster), so a new
    claim compiles as that API server would compile it (None, the CEL default, when nothing says),
    and the devices of the slices, which the profile reads to prove gates and explain reuses."""
    from kubectl_gpu.cluster import ProfileError, build_profile, parse_feature_gates, parse_kubernetes_version

    try:
        minor = parse_kubernetes_version(kubernetes_version) if kubernetes_version else None
        overrides = parse_feature_gates(feature_gates) if feature_gates else None
        profile = build_profile("explain inputs", objects=[*slices, *classes], kubernetes_minor=minor,
                                gate_overrides=overrides)
    except ProfileError as err:
        raise click.UsageError(str(err)) from err
    gates = profile.feature_gates if profile.kubernetes_minor is not None or overrides else None
    return gates, profile.slice_facts


@with_collector_paused  # reading and building 8,000 devices makes millions of acyclic objects
def _explain_files(files: tuple[str, ...], slice_files: tuple[str, ...], class_files: tuple[str, ...],
                   allocation_files: tuple[str, ...], local: bool, options: ClusterOptions,
                   kubernetes_version: str | None = None, feature_gates: str | None = None,
                   node: str | None = None) -> tuple[Any, Any]:
    """The explanation, and what was read and built for it (the caller keeps it until the end)."""
    main = sort_objects(doc for path in files for doc in _load(path))
    extra = sort_objects(doc for path in (*slice_files, *class_files) for doc in _load(path))
    allocated = sort_objects(doc for path in allocation_files for doc in _load(path))
    if not main.claims:
        raise InputError(f"no ResourceClaim or ResourceClaimTemplate (resource.k8s.io) in {', '.join(files)}")
    slices = [*main.slices, *extra.slices, *allocated.slices]
    classes = [*main.classes, *extra.classes, *allocated.classes]
    allocated_claims = [*extra.claims, *allocated.claims]
    if local:
        slices.extend(_local_slices())
    avoid: frozenset[str] = frozenset()
    live_rules: list[Any] = []
    if not slices:
        live = _live_devices(options)  # like kubectl: no file given, ask the cluster
        slices, classes, allocated_claims = live.slices, [*classes, *live.classes], [*allocated_claims, *live.claims]
        live_rules = list(live.taint_rules)
        avoid = live.double_counted_nodes()
        if not slices:
            raise InputError("no ResourceSlices to explain against: the cluster publishes none; pass --slices FILE "
                             "(kubectl get resourceslices -o yaml), put them in the -f file, or use --local")
    gates, slice_facts = _profile(slices, classes, kubernetes_version, feature_gates)
    try:
        explanation = explain_objects(
            claims=main.claims,
            slices=slices,
            classes=classes,
            allocated_claims=allocated_claims,
            avoid_nodes=avoid,
            gates=gates,
            slice_facts=slice_facts,
            nodes=allocator_nodes([*main.nodes, *extra.nodes, *allocated.nodes], node),
            taint_rules=[*main.taint_rules, *extra.taint_rules, *allocated.taint_rules, *live_rules],
        )
    except (InvalidResourceSlice, InvalidClaim, InvalidTaintRule) as err:
        raise InputError(str(err)) from None
    return explanation, (main, extra, allocated, slices, classes, slice_facts)
