"""--driver-version, --driver-gates and --consumable-shares: which NVIDIA DRA driver a prediction
of its devices is for (inventory; plan's predicted nodes)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from kubectl_gpu.dra import facts


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
