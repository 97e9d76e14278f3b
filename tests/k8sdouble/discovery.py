"""Discovery documents (/api, /apis, ...), /version, and server-side Table output for kubectl."""
from __future__ import annotations

import hashlib
import base64
from datetime import datetime, timezone
from typing import Any, Iterable

from .kinds import ALL_VERBS, SPECIAL_SUBRESOURCES, SUBRESOURCE_VERBS, Registry, ResourceKind
from .store import Entry


def version_info(kubernetes_version: str) -> dict[str, str]:
    major, minor = kubernetes_version.split(".")[:2]
    return {"major": major, "minor": minor, "gitVersion": f"v{major}.{minor}.0", "gitCommit": "k8s-double",
            "gitTreeState": "clean", "buildDate": "2025-08-27T00:00:00Z", "goVersion": "go1.24.6",
            "compiler": "gc", "platform": "linux/amd64"}


def api_versions(address: str) -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}]}


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    gvs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": gvs, "preferredVersion": gvs[0]}


def api_group_list(registry: Registry) -> dict[str, Any]:
    groups = [_group(g, vs) for g, vs in registry.group_versions().items() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: Registry, group: str) -> dict[str, Any] | None:
    versions = registry.group_versions().get(group)
    if not group or not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(group, versions)}


def _storage_hash(kind: ResourceKind) -> str:
    digest = hashlib.sha256(f"{kind.group}/{kind.storage_version}/{kind.kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def api_resource_list(registry: Registry, group: str, version: str) -> dict[str, Any]:
    resources: list[dict[str, Any]] = []
    for kind in registry.resources(group, version):
        entry: dict[str, Any] = {"name": kind.plural, "singularName": kind.singular, "namespaced": kind.namespaced,
                                 "kind": kind.kind, "verbs": list(ALL_VERBS),
                                 "storageVersionHash": _storage_hash(kind)}
        if kind.short_names:
            entry["shortNames"] = list(kind.short_names)
        if kind.categories:
            entry["categories"] = list(kind.categories)
        resources.append(entry)
        for sub in kind.subresources:
            sub_entry = {"name": f"{kind.plural}/{sub}", "singularName": "", "namespaced": kind.namespaced,
                         "kind": kind.kind, "verbs": list(SUBRESOURCE_VERBS)}
            if sub in SPECIAL_SUBRESOURCES:
                sub_group, sub_version, sub_kind, verbs = SPECIAL_SUBRESOURCES[sub]
                sub_entry.update(group=sub_group, version=sub_version, kind=sub_kind, verbs=list(verbs))
            resources.append(sub_entry)
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version, "resources": resources}


def human_duration(seconds: float) -> str:
    """Kubernetes' duration.HumanDuration, as kubectl shows AGE."""
    s = max(int(seconds), 0)
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    d = h // 24
    if h < 24 * 8:
        return f"{d}d{h % 24}h" if h % 24 else f"{d}d"
    if d < 365 * 2:
        return f"{d}d"
    return f"{d // 365}y"


COLUMNS = [
    {"name": "Name", "type": "string", "format": "name", "priority": 0,
     "description": "Name must be unique within a namespace."},
    {"name": "Age", "type": "string", "format": "", "priority": 0,
     "description": "CreationTimestamp is a timestamp representing the server time when this object was created."},
]


def _age(entry: Entry, now: datetime) -> str:
    created = entry.obj["metadata"].get("creationTimestamp")
    try:
        then = datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except (TypeError, ValueError):
        return "<unknown>"
    return human_duration((now - then).total_seconds())


def table(entries: Iterable[Entry], version: str, include_object: str, list_meta: dict[str, Any]) -> dict[str, Any]:
    """A meta.k8s.io/v1 Table with the columns Kubernetes gives kinds without printers: Name, Age."""
    now = datetime.now(timezone.utc)
    rows = []
    for entry in entries:
        row: dict[str, Any] = {"cells": [entry.obj["metadata"]["name"], _age(entry, now)]}
        if include_object == "Object":
            row["object"] = entry.at(version)
        elif include_object != "None":
            row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                             "metadata": entry.obj["metadata"]}
        rows.append(row)
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta, "columnDefinitions": COLUMNS,
            "rows": rows}
