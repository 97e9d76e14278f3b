"""Which ResourceClaimTemplates and ResourceClaims the objects of a cluster still reference.

The clean-up may delete a claim object only when nothing that can make pods names it: not only
Pods and the built-in workloads, but a PodTemplate, a suspended JobSet, a RayCluster scaled to no
workers, a Kueue Workload or any custom resource that embeds a pod spec.  So every served resource
that could hold a pod spec is listed (discovery, as `kubectl gpu migrate plan` finds custom
workloads: kubectl_gpu.k8s.discovery), and every object is searched for ``resourceClaims`` entries
wherever they sit, by shape, without a table of kinds to keep up to date.

A custom resource whose CustomResourceDefinition schema has no ``resourceClaims`` field and keeps
no unknown fields cannot hold a reference (the API server prunes fields its schema lacks), so it
is not listed: the clean-up needs no right to read ServiceMonitors or Certificates.  A resource
that could hold one but cannot be listed (403) stops the clean-up: references unknown, nothing may
be deleted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping

from kubectl_gpu.k8s import POD, WORKLOAD_RESOURCES, ApiError, Client, Resource, collection_path, list_objects
from kubectl_gpu.k8s.discovery import ServedResource, custom_resources

# Built-in resources whose objects hold a pod spec: Pods, PodTemplates and the workload kinds.
BUILTIN_POD_HOLDERS = tuple(
    ServedResource(r.group, r.version, r.plural, r.kind.lower(), r.kind, True, verbs=("list",))
    for r in (POD, *WORKLOAD_RESOURCES, Resource("v1", "PodTemplate")))
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


@dataclass(frozen=True)
class ObjectKey:
    kind: str
    namespace: str  # "" for a reference from a cluster-scoped object: it may mean any namespace
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


class ReferencesUnknown(Exception):
    """A resource that may reference claim objects could not be read; the message says what to grant."""


def claim_references(obj: Any, namespace: str) -> set[ObjectKey]:
    """The claim objects ``obj`` names in any ``resourceClaims`` list, wherever it sits."""
    found: set[ObjectKey] = set()
    for entry in _claim_entries(obj):
        if isinstance(entry.get("resourceClaimTemplateName"), str):
            found.add(ObjectKey("ResourceClaimTemplate", namespace, entry["resourceClaimTemplateName"]))
        if isinstance(entry.get("resourceClaimName"), str):
            found.add(ObjectKey("ResourceClaim", namespace, entry["resourceClaimName"]))
    return found


def _claim_entries(node: Any) -> Iterator[Mapping[str, Any]]:
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            claims = item.get("resourceClaims")
            if isinstance(claims, list):
                yield from (entry for entry in claims if isinstance(entry, Mapping))
            stack.extend(value for value in item.values() if isinstance(value, (Mapping, list)))
        elif isinstance(item, list):
            stack.extend(value for value in item if isinstance(value, (Mapping, list)))


def schema_can_hold_claims(schema: Any) -> bool:
    """Whether objects under this OpenAPI v3 schema can carry a ``resourceClaims`` field: the
    schema names one, or somewhere keeps fields it does not list."""
    stack = [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            if item.get("x-kubernetes-preserve-unknown-fields") is True:
                return True
            properties = item.get("properties")
            if isinstance(properties, Mapping) and "resourceClaims" in properties:
                return True
            stack.extend(value for value in item.values() if isinstance(value, (Mapping, list)))
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _unable_to_hold_claims(api: Client) -> set[tuple[str, str]] | None:
    """(group, plural) of the custom resources whose schemas rule references out; None when the
    CustomResourceDefinitions cannot be read (then every custom resource is listed)."""
    try:
        definitions = list_objects(api, CRD_PATH)
    except ApiError as exc:
        if exc.not_found or exc.forbidden:
            return None
        raise
    ruled_out = set()
    for crd in definitions:
        spec = crd.get("spec") or {}
        versions = [v for v in spec.get("versions") or () if isinstance(v, Mapping) and v.get("served")]
        if not any(schema_can_hold_claims((v.get("schema") or {}).get("openAPIV3Schema")) for v in versions):
            ruled_out.add((str(spec.get("group") or ""), str((spec.get("names") or {}).get("plural") or "")))
    return ruled_out


def pod_holding_resources(api: Client) -> list[ServedResource]:
    """The built-in pod holders and every served custom resource that could reference a claim."""
    ruled_out = _unable_to_hold_claims(api)
    customs = [r for r in custom_resources(api) if ruled_out is None or (r.group, r.plural) not in ruled_out]
    return [*BUILTIN_POD_HOLDERS, *customs]


def referenced(api: Client, resources: Iterable[ServedResource], namespace: str | None) -> set[ObjectKey]:
    """Every claim object the objects of ``resources`` in ``namespace`` (None: all) reference."""
    found: set[ObjectKey] = set()
    for resource in resources:
        path = collection_path(resource.group, resource.version, resource.plural,
                               namespace if resource.namespaced else None)
        try:
            items = list_objects(api, path)
        except ApiError as exc:
            if exc.not_found:
                continue  # not served (any more): nothing of it can hold a reference
            name = f"{resource.plural}.{resource.group}" if resource.group else resource.plural
            raise ReferencesUnknown(
                f"cannot list {name} ({exc.status or 'no answer'} {exc.reason}): its objects may reference "
                "claim templates, so nothing was deleted; grant the clean-up `list` on it (chart value "
                "cleanup.listResources)") from exc
        for item in items:
            where = ((item.get("metadata") or {}).get("namespace") or "") if resource.namespaced else ""
            found |= claim_references(item, where)
    return found


def is_referenced(key: ObjectKey, references: set[ObjectKey]) -> bool:
    return key in references or ObjectKey(key.kind, "", key.name) in references
