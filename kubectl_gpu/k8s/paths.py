"""URL paths of API resources, the way the API server lays them out, and the one table of the
kinds kubectl-gpu reads or writes with their URL plurals."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

# kind -> URL plural (the `name` of the resource in /apis/GROUP/VERSION discovery).
PLURALS = {
    "Pod": "pods",
    "Namespace": "namespaces",
    "ResourceQuota": "resourcequotas",
    "Node": "nodes",
    "Deployment": "deployments",
    "StatefulSet": "statefulsets",
    "DaemonSet": "daemonsets",
    "ReplicaSet": "replicasets",
    "Job": "jobs",
    "CronJob": "cronjobs",
    "ReplicationController": "replicationcontrollers",
    "PodTemplate": "podtemplates",
    "ResourceClaim": "resourceclaims",
    "ResourceClaimTemplate": "resourceclaimtemplates",
    "ResourceSlice": "resourceslices",
    "DeviceClass": "deviceclasses",
    "MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
    "ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
}


def collection_path(group: str, version: str, plural: str, namespace: str | None = None) -> str:
    """/api/v1/pods, /api/v1/namespaces/ns/pods, /apis/resource.k8s.io/v1/resourceslices..."""
    root = f"/api/{version}" if group in ("", "core") else f"/apis/{group}/{version}"
    if namespace:
        return f"{root}/namespaces/{quote(namespace, safe='')}/{plural}"
    return f"{root}/{plural}"


def object_path(group: str, version: str, plural: str, name: str,
                namespace: str | None = None) -> str:
    return f"{collection_path(group, version, plural, namespace)}/{quote(name, safe='')}"


@dataclass(frozen=True)
class Resource:
    """A kind at an apiVersion ("v1", "apps/v1", "resource.k8s.io/v1"), and where it lives."""

    api_version: str
    kind: str

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    @property
    def plural(self) -> str:
        return PLURALS[self.kind]

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        if name:
            return object_path(self.group, self.version, self.plural, name, namespace)
        return collection_path(self.group, self.version, self.plural, namespace)


@dataclass(frozen=True)
class Workload:
    """A built-in kind that runs pods from a pod template, and where the template sits."""

    resource: Resource
    template: tuple[str, ...] = ("spec", "template")

    @property
    def template_pointer(self) -> str:
        return "".join(f"/{part}" for part in self.template)


# The one table of built-in workloads: fleet lists and patches them, the webhook rewrites their
# templates (and labels its metrics by them), the clean-up scans them for claim references, and
# the chart routes them to /mutate (tests/test_workload_kinds_table.py holds them all to it).
WORKLOADS = (
    Workload(Resource("apps/v1", "Deployment")),
    Workload(Resource("apps/v1", "StatefulSet")),
    Workload(Resource("apps/v1", "DaemonSet")),
    Workload(Resource("apps/v1", "ReplicaSet")),
    Workload(Resource("batch/v1", "Job")),
    Workload(Resource("batch/v1", "CronJob"), ("spec", "jobTemplate", "spec", "template")),
    Workload(Resource("v1", "ReplicationController")),
)
WORKLOAD_RESOURCES = tuple(workload.resource for workload in WORKLOADS)
POD = Resource("v1", "Pod")
