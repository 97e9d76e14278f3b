"""`kubectl gpu inventory`: this node's GPUs as the NVIDIA DRA driver (or HAMi's) will publish them.

Data flows one way: NVML (``nvml_reader``, the only I/O) -> :class:`NodeReadings` ->
``plan_inventory`` (pure: the driver's naming rules; ``plan_hami_inventory`` for HAMi's driver) ->
``resource_slice`` (pure: the ``resource.k8s.io/v1`` document) or the table in
``kubectl_gpu.cli.inventory``.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubectl_gpu.dra import hami
from kubectl_gpu.inventory.driver_settings import DriverSettings
from kubectl_gpu.inventory.failures import ExitCode, InventoryUnavailable
from kubectl_gpu.inventory.hami_devices import plan_hami_inventory
from kubectl_gpu.inventory.nvml_reader import read_node
from kubectl_gpu.inventory.published_devices import InventoryPlan, PublishedDevice, plan_inventory
from kubectl_gpu.inventory.readings import DeviceFailure, NodeReadings
from kubectl_gpu.inventory.resource_slice import DRIVER_NAME, resource_slice, resource_slices
from kubectl_gpu.inventory.sysfs import Sysfs

__all__ = [
    "DRIVER_NAME",
    "DeviceFailure",
    "DriverSettings",
    "ExitCode",
    "Inventory",
    "InventoryPlan",
    "InventoryUnavailable",
    "NodeReadings",
    "PublishedDevice",
    "default_node_name",
    "local_inventory",
    "local_resource_slices",
    "plan_hami_inventory",
    "plan_inventory",
    "read_node",
    "resource_slice",
    "resource_slices",
]


@dataclass(frozen=True)
class Inventory:
    node_name: str
    plan: InventoryPlan
    slices: tuple[dict[str, Any], ...]
    readings: NodeReadings  # what was read, for --record


def default_node_name() -> str:
    # The kubelet registers a node under its lower-cased hostname unless told otherwise.
    return socket.gethostname().lower()


def local_inventory(node_name: str | None = None, sysfs_root: Path | Sysfs = Path("/sys"),
                    settings: DriverSettings = DriverSettings(), node_uid: str | None = None,
                    nvml: Any = None, driver: str = DRIVER_NAME) -> Inventory:
    """Read this machine's GPUs (sysfs: /sys, or a recording's; nvml: pynvml, or a recording's) and
    preview what the driver of ``settings`` publishes for them (``driver``: HAMi's, which has no
    settings, instead of NVIDIA's).  Raises :class:`InventoryUnavailable` when no GPU can be
    listed; devices NVML could not describe are in ``plan.failures`` (and named in an annotation
    of the slices)."""
    name = node_name or default_node_name()
    readings = read_node(sysfs_root, nvml)
    plan = plan_hami_inventory(readings) if driver == hami.HAMI_DRIVER else plan_inventory(readings, settings)
    return Inventory(node_name=name, plan=plan, slices=tuple(resource_slices(plan, name, node_uid)),
                     readings=readings)


def local_resource_slices(node_name: str | None = None) -> list[dict[str, Any]]:
    """The ResourceSlices the NVIDIA DRA driver would publish for this machine's GPUs.

    Raises :class:`InventoryUnavailable` (``str(error)`` is one line for a person,
    ``error.exit_code`` an :class:`ExitCode`) when there is no NVIDIA library or no GPU.
    """
    return list(local_inventory(node_name).slices)
