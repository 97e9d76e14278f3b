"""`kubectl gpu inventory`: show this node's GPUs as the NVIDIA DRA driver (or HAMi's) will publish them."""

from __future__ import annotations

import json
import re

import click
from rich.text import Text

from kubectl_gpu.cli import exits, yaml_output
from kubectl_gpu.cli.console import console, progress
from kubectl_gpu.cli.options import driver_options, driver_settings
from kubectl_gpu.core import TargetDriver
from kubectl_gpu.dra import hami
from kubectl_gpu.dra.facts import NEWEST_KUBERNETES_MINOR, NVIDIA_DRIVER
from kubectl_gpu.k8s.options import ClusterOptions, request_timeout_callback
from kubectl_gpu.kubetable import KubeTable
from kubectl_gpu.inventory import (
    ExitCode,
    Inventory,
    InventoryUnavailable,
    default_node_name,
    local_inventory,
)
from kubectl_gpu.inventory.table import COLUMNS, table_rows

# --target-driver: whose kubelet plugin's slices to preview (no auto: a node alone says nothing of the cluster).
TARGET_DRIVERS = {TargetDriver.NVIDIA.value: NVIDIA_DRIVER, TargetDriver.HAMI.value: hami.HAMI_DRIVER}
_NVIDIA_ONLY_OPTIONS = ("driver_version", "driver_gates", "consumable_shares", "kubernetes_version")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

EXIT_CODES = exits.epilog(f"""\b
What inventory's exit codes mean (table below):
  {ExitCode.OK:d}  every GPU was read
  {ExitCode.USAGE:d}  bad option
  {ExitCode.PARTIAL:d}  some devices could not be read: they are named on stderr (and in the
     table, or in the kubectl-gpu.io/unreadable-devices annotation); the rest is printed
  {ExitCode.NO_NVML_LIBRARY:d}  no NVIDIA driver library (libnvidia-ml.so.1) on this machine
  {ExitCode.NO_GPU:d}  no usable GPU: kernel driver not loaded, no permission, or 0 GPUs
  {ExitCode.NVML_FAILED:d}  NVML failed before it could list the GPUs

\b
Examples:
  kubectl gpu inventory                          # on a GPU node: this node's devices
  kubectl gpu inventory -o yaml > slices.yaml    # the ResourceSlices, for explain --slices
  kubectl gpu inventory --driver-gates DynamicMIG=true  # what DynamicMIG publishes
  kubectl gpu inventory --node gpu-7             # run it in a pod on that node
""")


@click.command(name="inventory", epilog=EXIT_CODES)
@click.option(
    "-o",
    "--output",
    type=click.Choice(["table", "yaml", "json"]),
    default="table",
    show_default=True,
    help="table for people; yaml/json for a resource.k8s.io/v1 ResourceSlice that "
    "`kubectl gpu explain --slices` reads.",
)
@click.option(
    "--node-name",
    envvar="NODE_NAME",
    metavar="NAME",
    help="Node name for spec.nodeName and the pool  [default: $NODE_NAME, else the lower-cased hostname]",
)
@click.option(
    "--nvml-recording",
    envvar="KUBECTL_GPU_NVML_RECORDING",
    metavar="FILE",
    help="Read the GPUs from a recorded NVML node (JSON, see docs/inventory.md) instead of this "
    "machine's driver: for support bundles and demos.  [env: KUBECTL_GPU_NVML_RECORDING]",
)
@click.option("--record", "record_file", metavar="FILE",
              help="Also write what NVML and sysfs said (the recording of docs/inventory.md) to FILE, so "
                   "--nvml-recording FILE gives this node's slices anywhere ('-': stdout, instead of the preview).")
@click.option("--target-driver", type=click.Choice(sorted(TARGET_DRIVERS)), default=TargetDriver.NVIDIA.value, show_default=True,
              help=f"Whose slices to preview: NVIDIA's DRA driver ({NVIDIA_DRIVER}), or HAMi's "
                   f"({hami.HAMI_DRIVER}: one {hami.HAMI_GPU_TYPE} device per GPU, MIG mode or not, with "
                   "consumable cores (0-100) and memory that HAMi-core enforces).  HAMi's driver has no "
                   "release, gate or Kubernetes-version options here.")
@driver_options
@click.option("--kubernetes-version", metavar="1.MINOR", default=None,
              help="The cluster's Kubernetes version: with DynamicMIG the driver puts counters in a slice of "
                   f"their own from 1.35 on  [default: 1.{NEWEST_KUBERNETES_MINOR}]")
@click.option("--node", "remote_node", metavar="NODE",
              help="Run the inventory on this cluster node instead, in a short-lived pod with the project's "
                   "image (deleted afterwards): for nodes nobody logs into.")
@click.option("--image", default=None, metavar="IMAGE",
              help="--node: the image with kubectl-gpu  [default: the chart's image of this version]")
@click.option("--runtime-class", default=None, metavar="NAME",
              help="--node: the pod's runtimeClassName, where the NVIDIA runtime is not the default (e.g. nvidia).")
@click.option("--wait", "wait_seconds", type=click.FloatRange(min=1), default=120.0, show_default=True,
              metavar="SECONDS", help="--node: how long the pod may take to pull its image and finish.")
@click.option("--kubeconfig", default=None, help="--node: path to the kubeconfig file.")
@click.option("--context", default=None, help="--node: the kubeconfig context to use.")
@click.option("-n", "--namespace", default=None, help="--node: namespace of the pod (default: the context's).")
@click.option("--request-timeout", callback=request_timeout_callback, metavar="DURATION", default=None,
              help="--node: how long to wait for each answer of the API server.")
@click.pass_context
def command(ctx: click.Context, output: str, node_name: str | None, nvml_recording: str | None,
            record_file: str | None, target_driver: str, driver_version: str | None, driver_gates: str | None,
            consumable_shares: str | None, kubernetes_version: str | None,
            remote_node: str | None, image: str | None, runtime_class: str | None, wait_seconds: float,
            kubeconfig: str | None, context: str | None, namespace: str | None,
            request_timeout: float | None) -> None:
    """Read this node's GPUs through NVML and preview the devices, attributes and capacities
    the NVIDIA DRA driver (gpu.nvidia.com) will publish for them.

    GPUs with MIG mode enabled appear as their MIG devices (type mig), as the driver
    announces them; index and minor are not attributes since driver v25.8.0.  With the
    driver's DynamicMIG gate every MIG-capable GPU is its full GPU plus every MIG placement,
    drawing on the GPU's counters (one slice per GPU).

    With --target-driver hami, what HAMi's DRA driver publishes instead: every GPU as one
    hami-gpu device that several claims share (allowMultipleAllocations), each consuming
    cores (percent of the GPU) and memory, in one slice.
    """
    driver = TARGET_DRIVERS[target_driver]
    if driver != NVIDIA_DRIVER:
        given = [f"--{name.replace('_', '-')}" for name in _NVIDIA_ONLY_OPTIONS if ctx.params[name] is not None]
        if given:
            raise click.UsageError(f"{', '.join(given)} describe NVIDIA's driver: drop them with --target-driver "
                                   f"{target_driver}")
    settings = driver_settings(driver_version, driver_gates, consumable_shares, _minor(kubernetes_version))
    if remote_node:
        if nvml_recording or node_name:
            raise click.UsageError("--node runs the inventory on that node: drop --nvml-recording/--node-name")
        options = ClusterOptions(kubeconfig=kubeconfig, context=context, namespace=namespace,
                                 request_timeout=request_timeout)
        ctx.exit(_remote(options, remote_node, image, runtime_class, wait_seconds, output, settings, record_file,
                         driver))
    node = node_name or default_node_name()
    if len(node) > 253 or not _DNS_SUBDOMAIN.match(node):
        raise click.BadParameter(
            f"{node!r} is not a Kubernetes node name (lower-case letters, digits, '-' and '.')",
            param_hint="--node-name",
        )
    recording_errors: tuple[type[Exception], ...] = ()  # a key the recording lacks is found when a call reads it
    source: dict = {}
    if nvml_recording:
        from kubectl_gpu.inventory.recorded_nvml import RecordedNvml, RecordingError

        recording_errors = (RecordingError,)
        try:
            recorded = RecordedNvml.from_file(nvml_recording)
        except RecordingError as error:
            raise click.BadParameter(str(error), param_hint="--nvml-recording") from None
        source = {"nvml": recorded.module(), "sysfs_root": recorded.sysfs}
    try:
        inventory = local_inventory(node, settings=settings, driver=driver, **source)
    except InventoryUnavailable as error:
        click.echo(f"error: {error}", err=True)
        ctx.exit(error.exit_code)
    except recording_errors as error:
        raise click.BadParameter(f"{nvml_recording}: {error}", param_hint="--nvml-recording") from None
    if record_file:
        _record(inventory, record_file)
        if record_file == "-":
            ctx.exit(ExitCode.PARTIAL if inventory.plan.failures else ExitCode.OK)

    for failure in inventory.plan.failures:
        uuid = f" ({failure.uuid})" if failure.uuid else ""
        click.echo(f"error: {failure.where}{uuid}: {failure.message}", err=True)
    for note in inventory.plan.notes:
        click.echo(f"warning: {note}", err=True)

    if output == "table":
        _print_table(inventory)
    else:
        _print_documents(list(inventory.slices), output)
    ctx.exit(ExitCode.PARTIAL if inventory.plan.failures else ExitCode.OK)


def _minor(kubernetes_version: str | None) -> int | None:
    if kubernetes_version is None:
        return None
    from kubectl_gpu.dra.gates import kubernetes_minor

    try:
        return kubernetes_minor(kubernetes_version)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--kubernetes-version") from None


def _print_documents(documents: list[dict], output: str) -> None:
    """One slice as itself; several as kubectl prints several objects (a v1 List, or YAML documents)."""
    if output == "json":
        value = documents[0] if len(documents) == 1 else {"apiVersion": "v1", "kind": "List", "items": documents}
        click.echo(json.dumps(value, indent=2))
    else:
        click.echo(yaml_output.dump_all(documents), nl=False)


def _record(inventory: Inventory, path: str) -> None:
    """--record: the readings as a recording, where --nvml-recording reads them back."""
    from kubectl_gpu.inventory.recording import recording_of

    for failure in inventory.plan.failures:
        click.echo(f"warning: {failure.where} is not in the recording: NVML could not describe it", err=True)
    _write(path, json.dumps(recording_of(inventory.readings, f"node {inventory.node_name}, recorded by kubectl gpu "
                                                           "inventory --record"), indent=1) + "\n")


def _print_table(inventory: Inventory) -> None:
    out = console()
    plan = inventory.plan
    out.print(Text(
        f"node {inventory.node_name}  driverVersion {plan.driver_version} "
        f"(NVML: {plan.nvml_driver_version})  cudaDriverVersion {plan.cuda_driver_version}"))
    # Device names and UUIDs are what people copy from here: never elided.
    table = KubeTable(*COLUMNS, wide=True)
    for row in table_rows(plan):
        style = "red" if row.is_error else ""
        table.add_row(*(Text(cell, style=style) for cell in row.cells()))
    out.print(table)



def _remote(options: ClusterOptions, node: str, image: str | None, runtime_class: str | None,
            wait_seconds: float, output: str, settings, record_file: str | None, driver: str) -> int:
    """`inventory --node NODE`: the node's recording, read through its pod, previewed here (with the
    Node's UID as the slices' owner) as a local run previews it."""
    from kubectl_gpu.cli.inventory_remote import default_image, run_on_node, split_output
    from kubectl_gpu.inventory.recorded_nvml import RecordedNvml, recording_problem

    try:
        connection = options.connect()
        with progress(f"running the inventory on node {node}..."):
            code, log = run_on_node(connection.api, options.namespace or connection.namespace, node,
                                    image or default_image(), wait_seconds, runtime_class)
            node_uid = (connection.api.request("GET", f"/api/v1/nodes/{node}").get("metadata") or {}).get("uid")
    except exits.cluster_errors() as exc:
        exits.fail(exc)
    document, messages = split_output(log)
    for line in messages:
        click.echo(line if line.startswith(("error:", "warning:")) else f"{node}: {line}", err=True)
    problem = recording_problem(document) if isinstance(document, dict) else "no recording"
    if document is None or problem:
        if code == 0:
            click.echo(f"error: the inventory pod on node {node} printed no NVML recording ({problem})", err=True)
            return exits.FINDINGS
        return code
    if record_file:
        _write(record_file, json.dumps(document, indent=1) + "\n")
        if record_file == "-":
            return code
    recorded = RecordedNvml(document)
    try:
        inventory = local_inventory(node, recorded.sysfs, settings, node_uid, recorded.module(), driver)
    except InventoryUnavailable as error:
        click.echo(f"error: {node}: {error}", err=True)
        return error.exit_code
    if output == "table":
        _print_table(inventory)
    else:
        _print_documents(list(inventory.slices), output)
    return code


def _write(path: str, text: str) -> None:
    if path == "-":
        click.echo(text, nl=False)
        return
    try:
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
    except OSError as error:
        raise click.BadParameter(f"cannot write {path}: {error.strerror or error}", param_hint="--record") from None
