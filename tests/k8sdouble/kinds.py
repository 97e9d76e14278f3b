"""The resources the double serves: one table row per kind.

Adding a kind is one line in ``KINDS``. The first version in ``versions`` is the storage (hub)
version; objects written at any other version are converted to it (see ``conversion.py``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

# Every kind supports selecting on these, as in Kubernetes.
COMMON_FIELD_LABELS = ("metadata.name", "metadata.namespace")
ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
SUBRESOURCE_VERBS = ("get", "patch", "update")
# Subresources that are not a view of the object itself: (group, version, kind, verbs) as discovery
# lists them. pods/eviction takes a policy/v1 Eviction by POST (create) only.
SPECIAL_SUBRESOURCES = {"eviction": ("policy", "v1", "Eviction", ("create",)),
                        "log": ("", "v1", "Pod", ("get",))}


@dataclass(frozen=True)
class ResourceKind:
    group: str
    versions: tuple[str, ...]
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    # Field labels usable in fieldSelector beyond metadata.name/metadata.namespace. Kubernetes
    # rejects any other field with 400, and so does the double.
    field_labels: tuple[str, ...] = ()
    # Filled in at create time when absent (the small part of API-server defaulting tests notice).
    create_defaults: Mapping[str, Any] = field(default_factory=dict)
    # Kubernetes answers DELETE of pods and namespaces with the object, of most others with a Status.
    delete_returns_object: bool = False
    categories: tuple[str, ...] = ()

    @property
    def storage_version(self) -> str:
        return self.versions[0]

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def qualified_name(self) -> str:
        """``pods`` or ``resourceclaims.resource.k8s.io``: how Kubernetes names it in messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def api_version(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version

    def allowed_field_labels(self) -> tuple[str, ...]:
        return COMMON_FIELD_LABELS + self.field_labels


NS, CLUSTER = True, False
RESOURCE_VERSIONS = ("v1", "v1beta2", "v1beta1")
WORKLOAD = dict(subresources=("status",), categories=("all",))
POD_FIELDS = ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
              "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName")
EVENT_FIELDS = ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
                "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type")


def _r(group: str, versions: str | tuple[str, ...], plural: str, kind: str, namespaced: bool,
       **options: Any) -> ResourceKind:
    versions = (versions,) if isinstance(versions, str) else versions
    return ResourceKind(group, versions, plural, kind, namespaced, **options)


KINDS: tuple[ResourceKind, ...] = (
    _r("", "v1", "pods", "Pod", NS, short_names=("po",), subresources=("status", "eviction", "log"), field_labels=POD_FIELDS,
       create_defaults={"status": {"phase": "Pending"}}, delete_returns_object=True, categories=("all",)),
    _r("", "v1", "nodes", "Node", CLUSTER, short_names=("no",), subresources=("status",),
       field_labels=("spec.unschedulable",)),
    _r("", "v1", "namespaces", "Namespace", CLUSTER, short_names=("ns",), subresources=("status",),
       field_labels=("status.phase",), create_defaults={"status": {"phase": "Active"}},
       delete_returns_object=True),
    _r("", "v1", "events", "Event", NS, short_names=("ev",), field_labels=EVENT_FIELDS),
    _r("", "v1", "services", "Service", NS, short_names=("svc",), subresources=("status",),
       categories=("all",)),
    _r("", "v1", "endpoints", "Endpoints", NS, short_names=("ep",)),
    _r("", "v1", "configmaps", "ConfigMap", NS, short_names=("cm",)),
    _r("", "v1", "secrets", "Secret", NS, field_labels=("type",)),
    _r("", "v1", "serviceaccounts", "ServiceAccount", NS, short_names=("sa",)),
    _r("", "v1", "resourcequotas", "ResourceQuota", NS, short_names=("quota",), subresources=("status",)),
    _r("", "v1", "limitranges", "LimitRange", NS, short_names=("limits",)),
    _r("", "v1", "podtemplates", "PodTemplate", NS),
    _r("coordination.k8s.io", "v1", "leases", "Lease", NS),
    _r("apps", "v1", "deployments", "Deployment", NS, short_names=("deploy",), **WORKLOAD),
    _r("apps", "v1", "replicasets", "ReplicaSet", NS, short_names=("rs",), **WORKLOAD),
    _r("apps", "v1", "statefulsets", "StatefulSet", NS, short_names=("sts",), **WORKLOAD),
    _r("apps", "v1", "daemonsets", "DaemonSet", NS, short_names=("ds",), **WORKLOAD),
    _r("batch", "v1", "jobs", "Job", NS, **WORKLOAD),
    _r("batch", "v1", "cronjobs", "CronJob", NS, short_names=("cj",), **WORKLOAD),
    _r("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", NS, short_names=("pdb",),
       subresources=("status",)),
    _r("resource.k8s.io", RESOURCE_VERSIONS, "deviceclasses", "DeviceClass", CLUSTER),
    _r("resource.k8s.io", RESOURCE_VERSIONS, "resourceclaims", "ResourceClaim", NS, subresources=("status",)),
    _r("resource.k8s.io", RESOURCE_VERSIONS, "resourceclaimtemplates", "ResourceClaimTemplate", NS),
    _r("resource.k8s.io", RESOURCE_VERSIONS, "resourceslices", "ResourceSlice", CLUSTER,
       field_labels=("spec.nodeName", "spec.driver")),
    # As Kubernetes 1.36 serves it: v1beta2 only (k8s.io/api resource/v1beta2 at v0.36.0; v1 from 1.37).
    _r("resource.k8s.io", "v1beta2", "devicetaintrules", "DeviceTaintRule", CLUSTER),
    # Served so that clients can read custom resources' schemas; seeding one does not serve its kind
    # (pass the kind in `extra_kinds`).
    _r("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", CLUSTER,
       short_names=("crd", "crds"), subresources=("status",)),
    _r("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
       "MutatingWebhookConfiguration", CLUSTER),
    _r("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
       "ValidatingWebhookConfiguration", CLUSTER),
)


class UnknownResource(LookupError):
    """A kind, resource or apiVersion the double does not serve."""


class Registry:
    """Looks kinds up by URL parts, by apiVersion+kind, or by any name a test might use."""

    def __init__(self, kinds: Iterable[ResourceKind], disabled_group_versions: Iterable[str] = ()):
        self.kinds = tuple(kinds)
        self.disabled = frozenset(disabled_group_versions)
        unknown = self.disabled - {k.api_version(v) for k in self.kinds for v in k.versions}
        if unknown:
            raise ValueError(f"cannot disable {sorted(unknown)}: the double does not serve them")
        self._by_url = {(k.group, v, k.plural): k for k in self.kinds for v in k.versions
                        if k.api_version(v) not in self.disabled}
        self._by_type = {(k.api_version(v), k.kind): k for k in self.kinds for v in k.versions}
        self._by_name: dict[str, ResourceKind] = {}
        for k in self.kinds:
            for alias in (k.kind, k.kind.lower(), k.plural, k.qualified_name, *k.short_names):
                self._by_name.setdefault(alias, k)

    def served(self, group: str, version: str) -> bool:
        return any(k.group == group and version in k.versions for k in self.kinds) and \
            (f"{group}/{version}" if group else version) not in self.disabled

    def group_versions(self) -> dict[str, list[str]]:
        """Served versions per group, preferred (storage) version first."""
        out: dict[str, list[str]] = {}
        for k in self.kinds:
            for v in k.versions:
                if k.api_version(v) not in self.disabled and v not in out.setdefault(k.group, []):
                    out[k.group].append(v)
        return out

    def resources(self, group: str, version: str) -> list[ResourceKind]:
        return [k for k in self.kinds if k.group == group and (group, version, k.plural) in self._by_url]

    def by_url(self, group: str, version: str, plural: str) -> ResourceKind | None:
        return self._by_url.get((group, version, plural))

    def by_type(self, api_version: str, kind: str) -> ResourceKind:
        found = self._by_type.get((api_version, kind))
        if found is None or api_version in self.disabled:
            served = sorted({f"{k.api_version(v)} {k.kind}" for (_, v, _), k in self._by_url.items()})
            raise UnknownResource(f"the double does not serve apiVersion {api_version!r} kind {kind!r}; "
                                  f"served: {', '.join(served)}")
        return found

    def resolve(self, name: str) -> ResourceKind:
        """``Pod``, ``pods``, ``po`` or ``resourceclaims.resource.k8s.io``."""
        found = self._by_name.get(name) or self._by_name.get(name.lower())
        if found is None:
            raise UnknownResource(f"unknown resource {name!r}; use a kind (Pod), a plural (pods) or "
                                  f"plural.group (resourceclaims.resource.k8s.io)")
        return found
