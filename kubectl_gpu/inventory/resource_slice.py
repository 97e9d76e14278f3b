"""An :class:`InventoryPlan` as the ResourceSlice the NVIDIA DRA driver would publish (pure).

Shape of ``resource.k8s.io/v1`` (Kubernetes 1.34+): devices carry ``attributes``
(``{name: {string|int|bool|version: value}}``) and ``capacity`` (``{name: {value: quantity}}``)
directly, with no ``basic:`` wrapper.  The driver publishes one pool named after the node,
made of a single slice.
"""

from __future__ import annotations

import json
from typing import Any

from kubectl_gpu.core.constants import NVIDIA_DRIVER as DRIVER_NAME
from kubectl_gpu.dra.facts import NEWEST_DRA_API_VERSION
from kubectl_gpu.inventory.published_devices import InventoryPlan, PublishedDevice
from kubectl_gpu.inventory.quantity import binary_si

API_VERSION = NEWEST_DRA_API_VERSION
# Lists the devices NVML could not describe, so a reader of the preview knows it is partial.
UNREADABLE_DEVICES_ANNOTATION = "kubectl-gpu.io/unreadable-devices"
_MAX_NAME = 253


def resource_slice(plan: InventoryPlan, node_name: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": slice_name(node_name)}
    if plan.failures:
        metadata["annotations"] = {
            UNREADABLE_DEVICES_ANNOTATION: json.dumps(
                [{"device": failure.where, "uuid": failure.uuid, "error": failure.message}
                 for failure in plan.failures]
            )
        }
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceSlice",
        "metadata": metadata,
        "spec": {
            "driver": DRIVER_NAME,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": [_device(device) for device in plan.devices],
        },
    }


def slice_name(node_name: str) -> str:
    # The kubelet plugin helper uses generateName "<node>-gpu.nvidia.com-"; a preview has
    # no server to pick the random suffix, so it ends the name there.
    return f"{node_name}-{DRIVER_NAME}"[:_MAX_NAME].rstrip("-.")


def _device(device: PublishedDevice) -> dict[str, Any]:
    published: dict[str, Any] = {
        "name": device.name,
        "attributes": {name: {kind: value} for name, (kind, value) in device.attributes.items()},
    }
    if device.capacity:
        published["capacity"] = {
            name: {"value": binary_si(amount)} for name, amount in device.capacity.items()
        }
    return published
