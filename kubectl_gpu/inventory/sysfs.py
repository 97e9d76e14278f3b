"""What the NVIDIA DRA driver reads about a GPU from sysfs rather than NVML: its PCIe root and its
NUMA node.  A live node reads /sys; a recording (``recorded_nvml``) carries the same two facts, so
a replay publishes exactly what the node did.

Driver (kubernetes-sigs/dra-driver-nvidia-gpu, main at 95932046, VERSION v0.5.0-dev):
cmd/gpu-kubelet-plugin/nvlib.go ``getGpuInfo``: ``deviceattribute.GetPCIeRootAttributeByPCIBusID``
(the ``pci<domain>:<bus>`` directory the device sits under) and ``discoverNumaNode`` (go-nvlib
nvpci reads ``numa_node``, a signed integer, -1 meaning no affinity).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


class Sysfs(Protocol):
    def pcie_root(self, pci_bus_id: str) -> str | None:
        """``pci0000:00`` for a device under /sys/devices/pci0000:00/...; None when sysfs does not say."""

    def numa_node(self, pci_bus_id: str) -> int | None:
        """The device's ``numa_node`` as written (-1 included); None when sysfs has no such device."""


@dataclass(frozen=True)
class LiveSysfs:
    root: Path = Path("/sys")

    def _device_link(self, pci_bus_id: str) -> Path:
        return self.root / "bus" / "pci" / "devices" / pci_bus_id

    def pcie_root(self, pci_bus_id: str) -> str | None:
        link = self._device_link(pci_bus_id)
        try:
            target = Path(os.path.realpath(link))
            relative = target.relative_to(Path(os.path.realpath(self.root / "devices")))
        except (OSError, ValueError):
            return None
        if not link.exists() or not relative.parts or not relative.parts[0].startswith("pci"):
            return None
        return relative.parts[0]

    def numa_node(self, pci_bus_id: str) -> int | None:
        try:
            text = (self._device_link(pci_bus_id) / "numa_node").read_text(encoding="ascii").strip()
            return int(text, 0)  # Go's strconv.ParseInt(s, 0, 64), as nvpci parses it
        except (OSError, ValueError, UnicodeDecodeError):
            # nvpci fails for this device; the driver then publishes no numaNode (discoverNumaNode).
            return None
