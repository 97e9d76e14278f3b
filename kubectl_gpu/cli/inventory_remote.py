"""`kubectl gpu inventory --node NODE`: run the inventory on a GPU node nobody logs into, in a
short-lived pod with the project's image (as `kubectl debug node/NODE` runs a pod there), read its
output and delete it.

The pod asks for no GPU (it must not take one from a workload): like dcgm-exporter it sets
NVIDIA_VISIBLE_DEVICES=all, which makes the NVIDIA container runtime mount the driver's library and
every GPU's device node read-only; it tolerates every taint and is bound to the node by nodeName,
so the scheduler is not involved.
"""

from __future__ import annotations

import json
import time
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from kubectl_gpu.core.constants import MANAGED_BY_LABEL, MANAGED_BY_VALUE
from kubectl_gpu.k8s import ApiError, Client

IMAGE_REPOSITORY = "ghcr.io/kubectl-gpu/kubectl-gpu-webhook"  # the chart's image: it has kubectl-gpu too
POLL_SECONDS = 0.5


def default_image() -> str:
    try:
        return f"{IMAGE_REPOSITORY}:{version('kubectl-gpu')}"
    except PackageNotFoundError:
        return f"{IMAGE_REPOSITORY}:latest"


def pod_manifest(node: str, image: str, runtime_class: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "nodeName": node,
        "restartPolicy": "Never",
        "tolerations": [{"operator": "Exists"}],
        "automountServiceAccountToken": False,
        "containers": [{
            "name": "inventory",
            "image": image,
            # The node's recording, not its slices: the driver settings and the Node's UID are applied
            # here, and --record keeps it as the node gave it.
            "command": ["kubectl-gpu", "inventory", "--record", "-", "--node-name", node],
            "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                    {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "utility"}],
            "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
        }],
    }
    if runtime_class:
        spec["runtimeClassName"] = runtime_class
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": "kubectl-gpu-inventory-",
                         "labels": {MANAGED_BY_LABEL: MANAGED_BY_VALUE,
                                    "app.kubernetes.io/name": "kubectl-gpu-inventory"}},
            "spec": spec}


def run_on_node(api: Client, namespace: str, node: str, image: str, wait_seconds: float,
                runtime_class: str | None = None) -> tuple[int, str]:
    """The inventory pod's exit code and output (stdout and stderr, as `kubectl logs` gives them).
    The pod is deleted whatever happens."""
    pods = f"/api/v1/namespaces/{namespace}/pods"
    created = api.request("POST", pods, body=pod_manifest(node, image, runtime_class))
    name = (created.get("metadata") or {}).get("name")
    try:
        deadline = time.monotonic() + wait_seconds
        while True:
            pod = api.request("GET", f"{pods}/{name}")
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                break
            if time.monotonic() > deadline:
                raise ApiError(504, f"{pods}/{name}", f"the inventory pod on node {node} did not finish in "
                               f"{wait_seconds:g}s{_waiting_reason(pod)}; check the image ({image}) can be "
                               "pulled there, or raise --wait", "Timeout")
            time.sleep(POLL_SECONDS)
        return _exit_code(pod), api.get_text(f"{pods}/{name}/log")
    finally:
        try:
            api.request("DELETE", f"{pods}/{name}", query=[("gracePeriodSeconds", 0)])
        except ApiError:
            pass  # gone already, or the cluster went away: nothing more to do


def split_output(log: str) -> tuple[dict[str, Any] | None, list[str]]:
    """The recording the pod printed (--record -) and its other lines (errors, warnings)."""
    lines = log.splitlines()
    try:
        start, end = lines.index("{"), len(lines) - lines[::-1].index("}")
    except ValueError:
        return None, [line for line in lines if line.strip()]
    try:
        document = json.loads("\n".join(lines[start:end]))
    except ValueError:
        return None, [line for line in lines if line.strip()]
    return document, [line for line in lines[:start] + lines[end:] if line.strip()]


def _exit_code(pod: dict[str, Any]) -> int:
    status = pod.get("status") or {}
    for container in status.get("containerStatuses") or ():
        terminated = (container.get("state") or {}).get("terminated")
        if terminated is not None:
            return int(terminated.get("exitCode") or 0)
    return 0 if status.get("phase") == "Succeeded" else 1


def _waiting_reason(pod: dict[str, Any]) -> str:
    for container in (pod.get("status") or {}).get("containerStatuses") or ():
        waiting = (container.get("state") or {}).get("waiting") or {}
        if waiting.get("reason"):
            message = f": {waiting['message']}" if waiting.get("message") else ""
            return f" (container {waiting['reason']}{message})"
    return ""
