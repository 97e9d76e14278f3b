"""Options and output that several commands share (as pip's cmdoptions.py): --dra-node-label, --gpu-memory,
--target-driver (which DRA driver the claims are for: migrate, plan),
--driver-version/--driver-gates/--consumable-shares (which NVIDIA DRA driver a prediction of its devices is
for: inventory, plan), and printing a result in the form -o asks for."""

from __future__ import annotations

from typing import Any, Callable

import click

from kubectl_gpu.dra import facts
from kubectl_gpu.k8s.options import ClusterOptions

DRA_NODE_LABEL_HELP = ("Label marking nodes that run the DRA driver instead of the device plugin "
                       "(KEY=VALUE, repeatable; default ack.node.gpu.schedule=disabled); nodes a gpu.nvidia.com "
                       "ResourceSlice names run it too.")


def dra_node_label_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--dra-node-label", "dra_node_labels", multiple=True, metavar="KEY=VALUE",
                        help=DRA_NODE_LABEL_HELP)(func)


def parse_dra_labels(values: tuple[str, ...], parent: tuple | None = None) -> tuple:
    from kubectl_gpu.inspect.dra_nodes import DEFAULT_DRA_NODE_LABELS, NodeLabel

    if not values:
        return parent or DEFAULT_DRA_NODE_LABELS
    try:
        return tuple(NodeLabel.parse(v) for v in values)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--dra-node-label") from exc


def gpu_memory_quantity(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """--gpu-memory's check (migrate and the fleet commands): a memory quantity above zero."""
    if value is None:
        return None
    from kubectl_gpu.dra.quantity import QuantityError, parse_quantity  # loaded only when the option is given

    try:
        if parse_quantity(value) <= 0:
            raise QuantityError("must be more than zero")
    except QuantityError as err:
        raise click.BadParameter(f"{value!r} is not a memory quantity like 80Gi ({err})") from err
    return value


def emit(options: ClusterOptions, payload: dict[str, Any] | Callable[[], dict[str, Any]], table: Callable[[], Any],
         names: Callable[[], list[str]] | None = None) -> None:
    """Print `payload` as JSON/YAML for scripts, KIND/NAME lines for -o name, or tables for people:
    `table()`'s list of kubectl_gpu/kubetable.py Printables (printed without loading rich where there
    is no colour), or a rich renderable.  A callable payload is built only for JSON/YAML (describe's
    1,000 nodes need no JSON for a table)."""
    if options.output == "name":
        if names is None:
            raise click.UsageError("-o name needs objects to name: use it with describe node|pod|claim")
        for name in names():
            click.echo(name)
    elif options.output in ("json", "yaml"):
        from kubectl_gpu.cli.reports import print_structured

        print_structured(payload() if callable(payload) else payload, options.output)
    else:
        from kubectl_gpu.cli.console import console, print_lines

        people = table()
        if isinstance(people, list):
            print_lines(people)
        else:
            console().print(people)


def target_driver_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """--target-driver (migrate, plan, migrate --from-cluster): the DRA driver the claims are written for."""
    from kubectl_gpu.core import TargetDriver
    from kubectl_gpu.dra import hami

    return click.option(
        "--target-driver", type=click.Choice([t.value for t in TargetDriver]), default=TargetDriver.NVIDIA.value,
        show_default=True,
        help=f"DRA driver the claims are for: nvidia ({facts.NVIDIA_DRIVER}: a GPU share is memory the scheduler "
             f"accounts, not enforced), hami (HAMi's {hami.HAMI_DRIVER}: a share is cores and memory HAMi-core "
             "enforces), or auto (HAMi's where the cluster publishes its slices or DeviceClass, else NVIDIA's).")(func)


def driver_options(func: Callable[..., Any]) -> Callable[..., Any]:
    decorators = [
        click.option("--driver-version", metavar="vX.Y.Z", default=None,
                     help=f"NVIDIA DRA driver release to predict ({', '.join(facts.DRIVER_RELEASES[2:])})  "
                          f"[default: {facts.NEWEST_DRIVER_RELEASE}]"),
        click.option("--driver-gates", metavar="GATE=BOOL,...", default=None,
                     help="The driver's own feature gates that differ from its defaults, as its Helm chart's "
                          f"featureGates take them (e.g. {facts.DYNAMIC_MIG}=true)."),
        click.option("--consumable-shares", metavar="MODE", default=None,
                     help="The kubelet plugin's --consumable-shares (disabled, memory, unlimited or a share "
                          f"count); needs {facts.CONSUMABLE_SHARES}=true in --driver-gates  [default: disabled]"),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def driver_settings(driver_version: str | None, driver_gates: str | None, consumable_shares: str | None,
                    kubernetes_minor: int | None = None) -> Any:
    """The options as DriverSettings; a usage error (exit 2) that says what to change."""
    from kubectl_gpu.inventory.driver_settings import DriverSettings

    try:
        return DriverSettings.parse(driver_version, driver_gates, consumable_shares, kubernetes_minor)
    except ValueError as error:
        raise click.UsageError(str(error)) from None
