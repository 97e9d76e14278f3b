"""The few Kubernetes API calls the webhook makes, as raw JSON over the official client.

Raw JSON rather than generated models: the webhook must speak whichever ``resource.k8s.io``
version it is configured for (v1, v1beta2, v1beta1) and compare objects field by field, and the
generated models would silently drop fields they do not know.

The client is synchronous (urllib3); :class:`AsyncKubeApi` runs it on a small thread pool so the
event loop never blocks on the API server.  Only cache misses reach it, so the pool stays idle on
the hot path.
"""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, TypeVar
from urllib.parse import quote

import kubernetes
from kubernetes.client import ApiClient, Configuration
from kubernetes.client.exceptions import ApiException

T = TypeVar("T")

# kind -> URL plural, for the objects the webhook reads or writes.
PLURALS = {
    "ResourceClaimTemplate": "resourceclaimtemplates",
    "ResourceClaim": "resourceclaims",
    "Pod": "pods",
    "Namespace": "namespaces",
    "Node": "nodes",
    "Deployment": "deployments",
    "StatefulSet": "statefulsets",
    "DaemonSet": "daemonsets",
    "ReplicaSet": "replicasets",
    "Job": "jobs",
    "CronJob": "cronjobs",
    "ReplicationController": "replicationcontrollers",
}


class ApiError(Exception):
    """The API server answered with an error status (or could not be reached: status 0)."""

    def __init__(self, status: int, reason: str, message: str = "") -> None:
        super().__init__(f"{status} {reason}: {message}" if message else f"{status} {reason}")
        self.status = status
        self.reason = reason
        self.message = message

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        return self.status == 409

    @property
    def retryable(self) -> bool:
        return self.status == 0 or self.status == 429 or self.status >= 500


@dataclass(frozen=True)
class Resource:
    """Where a kind lives: ``/api/v1`` or ``/apis/<group>/<version>``."""

    api_version: str  # "v1", "apps/v1", "resource.k8s.io/v1"
    kind: str

    def path(self, namespace: str | None, name: str | None = None) -> str:
        base = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        if namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{PLURALS[self.kind]}"
        if name:
            base += f"/{quote(name, safe='')}"
        return base


WORKLOAD_RESOURCES = (
    Resource("apps/v1", "Deployment"),
    Resource("apps/v1", "StatefulSet"),
    Resource("apps/v1", "DaemonSet"),
    Resource("apps/v1", "ReplicaSet"),
    Resource("batch/v1", "Job"),
    Resource("batch/v1", "CronJob"),
    Resource("v1", "ReplicationController"),
)


def load_api_client(kubeconfig: str | None = None) -> ApiClient:
    """In-cluster credentials when running in a pod, the kubeconfig otherwise."""
    configuration = Configuration()
    try:
        kubernetes.config.load_incluster_config(client_configuration=configuration)
    except kubernetes.config.ConfigException:
        kubernetes.config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
    return ApiClient(configuration)


class KubeApi:
    """Synchronous JSON calls; every error becomes :class:`ApiError`."""

    def __init__(self, client: ApiClient, timeout_seconds: float) -> None:
        self.client = client
        self.timeout = timeout_seconds

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: list[tuple[str, str]] | None = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        try:
            _, url, header_params, serialized, _ = self.client.param_serialize(
                method=method,
                resource_path=path,
                query_params=query or [],
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
            )
            response = self.client.call_api(method, url, header_params, serialized, _request_timeout=self.timeout)
            data = response.read()
        except ApiException as exc:
            raise ApiError(exc.status or 0, exc.reason or "error", str(exc.body or "")) from exc
        except Exception as exc:  # urllib3 connection errors, timeouts, DNS...
            raise ApiError(0, "unreachable", f"{type(exc).__name__}: {exc}") from exc
        status = response.status
        try:
            payload = json.loads(data) if data else {}
        except ValueError:
            payload = {}
        if not 200 <= status <= 299:
            message = payload.get("message", "") if isinstance(payload, dict) else ""
            raise ApiError(status, response.reason or "error", message)
        return payload

    def get(self, resource: Resource, namespace: str | None, name: str) -> dict[str, Any]:
        return self.request("GET", resource.path(namespace, name))

    def create(self, resource: Resource, namespace: str | None, obj: dict[str, Any]) -> dict[str, Any]:
        return self.request("POST", resource.path(namespace), body=obj)

    def merge_patch(self, resource: Resource, namespace: str | None, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        return self.request(
            "PATCH", resource.path(namespace, name), body=patch, content_type="application/merge-patch+json"
        )

    def delete(self, resource: Resource, namespace: str | None, name: str, resource_version: str | None) -> None:
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if resource_version:
            # Delete only the version that was checked: a concurrent change (a webhook reviving
            # the object) turns the delete into a 409 instead of a lost object.
            body["preconditions"] = {"resourceVersion": resource_version}
        self.request("DELETE", resource.path(namespace, name), body=body)

    def list(
        self, resource: Resource, namespace: str | None, label_selector: str | None = None, page_size: int = 500
    ) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            query = [("limit", str(page_size))]
            if label_selector:
                query.append(("labelSelector", label_selector))
            if token:
                query.append(("continue", token))
            page = self.request("GET", resource.path(namespace), query=query)
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items

    def reachable(self) -> bool:
        try:
            self.request("GET", "/version")
        except ApiError as exc:
            return exc.status not in (0,) and exc.status < 500
        return True


class AsyncKubeApi:
    """:class:`KubeApi` off the event loop."""

    def __init__(self, api: KubeApi, workers: int = 4) -> None:
        self.sync = api
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kubeapi")

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    async def get(self, resource: Resource, namespace: str | None, name: str) -> dict[str, Any]:
        return await self.call(self.sync.get, resource, namespace, name)

    async def create(self, resource: Resource, namespace: str | None, obj: dict[str, Any]) -> dict[str, Any]:
        return await self.call(self.sync.create, resource, namespace, obj)

    async def merge_patch(self, resource: Resource, namespace: str | None, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        return await self.call(self.sync.merge_patch, resource, namespace, name, patch)

    async def reachable(self) -> bool:
        return await self.call(self.sync.reachable)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
