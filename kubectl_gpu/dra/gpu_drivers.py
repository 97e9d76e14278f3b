"""The GPU DRA drivers kubectl-gpu knows, and the nodes their kubelet plugins publish on.

A node whose ResourceSlices a GPU DRA driver publishes hands its GPUs out as DRA devices; the device
plugin there (NVIDIA's or HAMi's) may advertise the same GPUs again, so describe, doctor, plan and the
webhook treat it as a DRA node whether or not it carries a DRA label (GPU Operator's GPUCluster and
HAMi's chart set none).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .facts import NVIDIA_DRIVER
from .hami import HAMI_DRIVER

GPU_DRA_DRIVERS = (NVIDIA_DRIVER, HAMI_DRIVER)


def publishing_nodes(resource_slices: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    """The nodes a current ResourceSlice of a GPU DRA driver names: its kubelet plugin runs there."""
    # The ResourceSlice reader loads with the first slices read, not with the driver names: describe
    # asks for its lists before it (~25 ms of imports) and reads the slices on their own thread.
    from .devices import nodes_of_drivers

    return nodes_of_drivers(resource_slices, GPU_DRA_DRIVERS)
