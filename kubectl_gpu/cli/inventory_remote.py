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

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubectl_gpu.core.constants import MANAGED_BY_LABEL, MANAGED_BY_VALUE
from kubectl_gpu.k8s import ApiError

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
            "command": ["kubectl-gpu", "inventory", "-o", "json", "--node-name", node],
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


def run_on_node(api: client.ApiClient, namespace: str, node: str, image: str, wait_seconds: float,
                runtime_class: str | None = None) -> tuple[int, str]:
    """The inventory pod's exit code and output (stdout and stderr, as `kubectl logs` gives them).
    The pod is deleted whatever happens."""
    core = client.CoreV1Api(api)
    timeout = getattr(api, "request_timeout", None)
    where = f"/api/v1/namespaces/{namespace}/pods"
    try:
        created = core.create_namespaced_pod(namespace, pod_manifest(node, image, runtime_class),
                                             _request_timeout=timeout)
    except ApiException as exc:
        raise ApiError(exc.status or 0, where, f"cannot create the inventory pod: {exc.reason}") from None
    name = created.metadata.name
    try:
        deadline = time.monotonic() + wait_seconds
        while True:
            pod = core.read_namespaced_pod(name, namespace, _request_timeout=timeout)
            if pod.status and pod.status.phase in ("Succeeded", "Failed"):
                break
            if time.monotonic() > deadline:
                reason = _waiting_reason(pod)
                raise ApiError(504, f"{where}/{name}", f"the inventory pod on node {node} did not finish in "
                               f"{wait_seconds:g}s{reason}; check the image ({image}) can be pulled there, "
                               "or raise --wait", "Timeout")
            time.sleep(POLL_SECONDS)
        log = core.read_namespaced_pod_log(name, namespace, _request_timeout=timeout)
        return _exit_code(pod), log
    except ApiException as exc:
        raise ApiError(exc.status or 0, f"{where}/{name}", str(exc.reason)) from None
    finally:
        try:
            core.delete_namespaced_pod(name, namespace, grace_period_seconds=0, _request_timeout=timeout)
        except ApiException:
            pass  # gone already, or the cluster went away: nothing more to do


def split_output(log: str) -> tuple[dict[str, Any] | None, list[str]]:
    """The ResourceSlice the pod printed (-o json) and its other lines (errors, warnings)."""
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


def _exit_code(pod: Any) -> int:
    for status in (pod.status.container_statuses or ()):
        terminated = status.state and status.state.terminated
        if terminated is not None:
            return int(terminated.exit_code or 0)
    return 0 if pod.status.phase == "Succeeded" else 1


def _waiting_reason(pod: Any) -> str:
    for status in (pod.status.container_statuses or ()) if pod.status else ():
        waiting = status.state and status.state.waiting
        if waiting is not None and waiting.reason:
            return f" (container {waiting.reason}: {waiting.message or ''})".replace(": )", ")")
    return ""
