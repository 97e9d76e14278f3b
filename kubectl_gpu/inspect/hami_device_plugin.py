"""HAMi's device plugin on a node, as the node shows it: the GPUs it registered for HAMi's scheduler.

HAMi's device plugin (Project-HAMi/HAMi at 4707fb02) writes the node annotation
``hami.io/node-nvidia-register`` (pkg/device/nvidia/device.go ``RegisterAnnos``; the plugin's
register.go) with every GPU it offers, and HAMi's scheduler hands GPUs out from that annotation, not
from the node's allocatable ``nvidia.com/gpu``.  Its value is the JSON list of pkg/device/devices.go
``MarshalNodeDevices``; releases before it wrote ``id,count,devmem,devcore,type,numa,health`` entries
joined by ``:`` (docs/develop/protocol.md).  Its DaemonSet runs on nodes labelled ``gpu=on``
(charts/hami/values.yaml ``devicePlugin.nodeSelector``).
"""

from __future__ import annotations

import json
from typing import Any, Mapping

REGISTER_ANNOTATION = "hami.io/node-nvidia-register"
NODE_SELECTOR_LABEL = ("gpu", "on")


def registered_gpus(node: Mapping[str, Any]) -> int | None:
    """How many GPUs HAMi's device plugin registered on ``node``; None when it registered none."""
    metadata = node.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    value = annotations.get(REGISTER_ANNOTATION) if isinstance(annotations, Mapping) else None
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        devices = json.loads(value)
    except ValueError:
        return len([entry for entry in value.split(":") if entry.strip()]) or None
    if not isinstance(devices, list):
        return None
    return len([d for d in devices if isinstance(d, Mapping) and d.get("id")]) or None
