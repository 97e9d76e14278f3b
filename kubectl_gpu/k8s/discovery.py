"""Discovery: which versions of an API group the cluster serves (GET /apis/GROUP), which
resource a person names by `deploy`, `deployment` or `deployments.apps` (as kubectl resolves TYPE),
and which custom resources the cluster serves."""

from __future__ import annotations

from dataclasses import dataclass

from kubectl_gpu.dra.facts import DRA_GROUP, DRA_VERSIONS
from kubectl_gpu.k8s.client import Client
from kubectl_gpu.k8s.errors import ApiError
from kubectl_gpu.k8s.rest import get_json

# DRA_VERSIONS, newest first (v1 GA in 1.34, v1beta2 in 1.33, v1beta1 in 1.32), come from the facts.


def served_versions(api: Client, group: str) -> tuple[str, ...]:
    """The versions the server lists for `group`, preferred first; () when it serves none."""
    try:
        doc = get_json(api, f"/apis/{group}")
    except ApiError as exc:
        if exc.not_found:
            return ()
        raise
    versions = [v.get("version") for v in doc.get("versions") or () if v.get("version")]
    preferred = (doc.get("preferredVersion") or {}).get("version")
    if preferred in versions:
        versions.remove(preferred)
        versions.insert(0, preferred)
    return tuple(versions)


def preferred_dra_version(served: tuple[str, ...]) -> str | None:
    """The newest DRA version both the cluster and kubectl-gpu understand."""
    for version in DRA_VERSIONS:
        if version in served:
            return version
    return None


@dataclass(frozen=True)
class ServedResource:
    """One resource the API server serves, as discovery lists it."""
    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """How the API server names the resource in its errors: `deployments.apps`, `nodes`."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


def resolve_resource(api: Client, word: str) -> ServedResource | None:
    """The resource a person means by `word`, as kubectl resolves the TYPE of `TYPE/NAME`: its
    plural, singular, a short name or its kind, in any case, optionally qualified by its group
    (`deployments.apps`, `deploy`, `Deployment`); the core group first, then the groups in the
    order the server lists them (their priority). None when nothing served is called that."""
    name, _, group = word.strip().lower().partition(".")
    for resource in _served_resources(api, group or None):
        if name in (resource.plural, resource.singular, resource.kind.lower(), *resource.short_names):
            return resource
    return None


def _served_resources(api: Client, group: str | None) -> list[ServedResource]:
    sources: list[tuple[str, str]] = []
    if group in (None, "", "core"):
        sources.append(("", "v1"))
    if group != "core":
        for entry in get_json(api, "/apis").get("groups") or ():
            preferred = (entry.get("preferredVersion") or {}).get("version")
            if preferred and (group is None or entry.get("name") == group):
                sources.append((entry["name"], preferred))
    found = []
    for name, version in sources:
        path = f"/apis/{name}/{version}" if name else "/api/v1"
        try:
            listed = get_json(api, path).get("resources") or ()
        except ApiError as exc:
            if exc.not_found or exc.forbidden:
                continue
            raise
        for entry in listed:
            plural = entry.get("name") or ""
            if "/" in plural or not entry.get("kind"):
                continue  # a subresource
            found.append(ServedResource(name, version, plural, (entry.get("singularName") or
                                                                entry["kind"]).lower(),
                                        entry["kind"], bool(entry.get("namespaced")),
                                        tuple(s.lower() for s in entry.get("shortNames") or ()),
                                        tuple(entry.get("verbs") or ())))
    return found


# Built-in groups whose objects hold no pod template of their own (the built-in workloads of apps
# and batch are known kinds, read without discovery): not listed as custom resources.
BUILTIN_GROUPS = frozenset({
    "apps", "batch", "resource.k8s.io", "policy", "rbac.authorization.k8s.io", "storage.k8s.io", "networking.k8s.io",
    "coordination.k8s.io", "events.k8s.io", "admissionregistration.k8s.io", "apiextensions.k8s.io",
    "apiregistration.k8s.io", "authentication.k8s.io", "authorization.k8s.io", "autoscaling", "certificates.k8s.io",
    "discovery.k8s.io", "flowcontrol.apiserver.k8s.io", "node.k8s.io", "scheduling.k8s.io", "metrics.k8s.io",
    "internal.apiserver.k8s.io", "storagemigration.k8s.io", "resource.kubernetes.io"})


def custom_resources(api: Client) -> list[ServedResource]:
    """Every listable custom resource (a group outside BUILTIN_GROUPS), at its group's preferred
    version; a group whose discovery is missing or forbidden is left out."""
    return [r for r in _served_resources(api, None)
            if r.group and r.group not in BUILTIN_GROUPS and "list" in r.verbs]
