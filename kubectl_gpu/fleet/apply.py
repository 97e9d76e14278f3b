"""What to send to rewrite a live object with server-side apply, and to roll it back (pure).

Server-side apply (https://kubernetes.io/docs/reference/using-api/server-side-apply/) only
removes a field when the applier owns it alone; the legacy GPU limits of a live Deployment are
owned by whoever created it (helm, kubectl, a GitOps controller). So one migration is two writes:

1. ownership: a JSON patch of ``metadata.managedFields`` (guarded by the resourceVersion) that
   moves exactly the fields the migration removes or changes from their managers to
   kubectl-gpu's Apply entry, as kubectl's own client-side-to-server-side upgrade does
   (k8s.io/client-go/util/csaupgrade). It changes no spec: nothing rolls out.
2. the apply: the fields kubectl-gpu adds or changes (claim references, resourceClaims, the
   original-requests annotation, moved node constraints), without ``force``; the fields it took
   over in step 1 and leaves out are removed. Every other field keeps its owner and its value,
   and a conflict (someone changed one of these fields meanwhile) stops the migration (409).

Rollback is one apply built from the original-requests annotation alone: the recorded legacy
requests and node constraints come back, and the claim references and the annotation, which
kubectl-gpu owns alone, go.

Field paths are FieldsV1 path elements (``f:key``, ``k:{"name":"c"}``); lists of the pod
template that Kubernetes merges by key (x-kubernetes-list-map-keys) are listed in LIST_KEYS,
every other list is atomic.
"""
from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from typing import Any

from kubectl_gpu.core.constants import ORIGINAL_RESOURCES_ANNOTATION
from kubectl_gpu.manifests.locate import find_pod_sites
from kubectl_gpu.core import split_pointer
from kubectl_gpu.manifests.tree_patch import resolve

Path = tuple[str, ...]
# Pod template lists with listType=map and listMapKey=name (core/v1 types.go).
LIST_KEYS = {"containers": "name", "initContainers": "name", "ephemeralContainers": "name",
             "resourceClaims": "name", "claims": "name", "volumes": "name", "env": "name"}
SERVER_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink",
                   "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences")


class RollbackError(ValueError):
    """The object has no usable original-requests record; the message says what to do."""


def leaves(obj: Any, path: Path = (), field: str = "") -> dict[Path, Any]:
    """Every owned leaf of ``obj`` (scalars, empty maps/lists, atomic lists) -> its value."""
    out: dict[Path, Any] = {}
    if isinstance(obj, Mapping) and obj:
        for key, value in obj.items():
            if not path and key in ("apiVersion", "kind", "status"):
                continue
            if path == ("f:metadata",) and key not in ("labels", "annotations"):
                continue
            out.update(leaves(value, path + (f"f:{key}",), str(key)))
        return out
    key = LIST_KEYS.get(field)
    if isinstance(obj, list) and obj and key and all(isinstance(i, Mapping) and key in i for i in obj):
        for item in obj:
            item_path = path + ("k:" + json.dumps({key: item[key]}, separators=(",", ":")),)
            for ikey, value in item.items():
                if ikey != key:
                    out.update(leaves(value, item_path + (f"f:{ikey}",), str(ikey)))
            out.setdefault(item_path + (f"f:{key}",), item[key])
        return out
    out[path] = obj
    return out


def _set(config: dict, path: Path, value: Any) -> None:
    node: Any = config
    for i, element in enumerate(path):
        last = i == len(path) - 1
        if element.startswith("f:"):
            key = element[2:]
            if last:
                node[key] = copy.deepcopy(value)
                return
            following = path[i + 1]
            node = node.setdefault(key, [] if following.startswith("k:") else {})
        else:  # k:{"name":"x"}: find or add the keyed item
            wanted = json.loads(element[2:])
            item = next((x for x in node if all(x.get(k) == v for k, v in wanted.items())), None)
            if item is None:
                item = dict(wanted)
                node.append(item)
            node = item


def intent(migrated: Mapping[str, Any], paths: Iterable[Path]) -> dict[str, Any]:
    """The apply configuration: identity plus exactly ``paths`` at their migrated values."""
    meta = migrated.get("metadata") or {}
    config: dict[str, Any] = {"apiVersion": migrated["apiVersion"], "kind": migrated["kind"],
                              "metadata": {"name": meta["name"]}}
    if meta.get("namespace"):
        config["metadata"]["namespace"] = meta["namespace"]
    values = leaves(migrated)
    for path in sorted(paths):
        _set(config, path, values[path])
    return config


def diff(live: Mapping[str, Any], migrated: Mapping[str, Any]) -> tuple[set[Path], set[Path], set[Path]]:
    """(added, changed, removed) leaf paths from ``live`` to ``migrated``."""
    before, after = leaves(live), leaves(migrated)
    added = {p for p in after if p not in before}
    changed = {p for p in after if p in before and before[p] != after[p]}
    removed = {p for p in before if p not in after}
    return added, changed, removed


def _dotted(path: Path) -> str:
    out = ""
    for element in path:
        if element.startswith("k:"):
            out += "[" + ",".join(str(v) for v in json.loads(element[2:]).values()) + "]"
        else:
            out += ("." if out else "") + element[2:]
    return out


def describe_change(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """What the server's answer changes in the spec, as field paths: what goes, what comes."""
    spec_before = {k: v for k, v in before.items() if k == "spec"}
    spec_after = {k: v for k, v in after.items() if k == "spec"}
    added, changed, removed = diff(spec_before, spec_after)
    parts = []
    if removed:
        parts.append("removes " + ", ".join(_dotted(p) for p in sorted(removed)))
    if changed:
        parts.append("changes " + ", ".join(_dotted(p) for p in sorted(changed)))
    if added:
        parts.append("adds " + ", ".join(_dotted(p) for p in sorted(added)))
    return "; ".join(parts) or "no change to the spec"


# ------------------------------------------------------------------ ownership

def _drop(tree: dict, path: Path) -> bool:
    """Remove ``path`` from a FieldsV1 tree, pruning parents it leaves empty; True if it was there."""
    trail = [tree]
    for element in path[:-1]:
        child = trail[-1].get(element)
        if not isinstance(child, dict):
            return False
        trail.append(child)
    if path[-1] not in trail[-1]:
        return False
    del trail[-1][path[-1]]
    for depth in range(len(trail) - 1, 0, -1):  # an empty {} would mean "owned": prune it
        if trail[depth]:
            break
        del trail[depth - 1][path[depth - 1]]
    return True


def _has(tree: Any, path: Path) -> bool:
    node = tree
    for element in path:
        if not isinstance(node, dict) or element not in node:
            return False
        node = node[element]
    return True


def ownership_patch(live: Mapping[str, Any], paths: set[Path], manager: str) -> list[dict[str, Any]] | None:
    """The JSON patch moving ``paths`` from every other manager to ``manager``'s Apply entry, or
    None when no other manager owns any of them."""
    managed = copy.deepcopy((live.get("metadata") or {}).get("managedFields") or [])
    moved = False
    for entry in managed:
        if entry.get("manager") == manager and entry.get("operation") == "Apply":
            continue
        tree = entry.get("fieldsV1") or {}
        for path in paths:
            moved = _drop(tree, path) or moved
        entry["fieldsV1"] = tree
    if not moved:
        return None
    managed = [e for e in managed if e.get("fieldsV1") or (e.get("manager") == manager and e.get("operation") == "Apply")]
    mine = next((e for e in managed if e.get("manager") == manager and e.get("operation") == "Apply"), None)
    if mine is None:
        mine = {"manager": manager, "operation": "Apply", "apiVersion": live["apiVersion"], "fieldsType": "FieldsV1",
                "fieldsV1": {}}
        managed.append(mine)
    for path in paths:
        if not _has(mine["fieldsV1"], path):
            node = mine["fieldsV1"]
            for element in path:
                node = node.setdefault(element, {})
    return [{"op": "test", "path": "/metadata/resourceVersion", "value": live["metadata"]["resourceVersion"]},
            {"op": "replace", "path": "/metadata/managedFields", "value": managed}]


def owned_paths(live: Mapping[str, Any], manager: str) -> set[Path]:
    """Leaf paths ``manager``'s Apply entry owns now (what its next apply keeps or removes)."""
    for entry in (live.get("metadata") or {}).get("managedFields") or ():
        if entry.get("manager") == manager and entry.get("operation") == "Apply":
            return _tree_paths(entry.get("fieldsV1") or {})
    return set()


def _tree_paths(tree: Mapping[str, Any], prefix: Path = ()) -> set[Path]:
    out: set[Path] = set()
    for element, child in tree.items():
        if element == ".":
            continue
        if isinstance(child, Mapping) and any(k != "." for k in child):
            out |= _tree_paths(child, prefix + (element,))
        else:
            out.add(prefix + (element,))
    return out


def migration_steps(live: Mapping[str, Any], migrated: Mapping[str, Any], manager: str
                    ) -> tuple[list[dict[str, Any]] | None, dict[str, Any]]:
    """(ownership JSON patch or None, apply configuration) that turn ``live`` into ``migrated``."""
    added, changed, removed = diff(live, migrated)
    transfer = ownership_patch(live, changed | removed, manager)
    keep = {p for p in owned_paths(live, manager) if p in leaves(migrated)}  # what an earlier apply set
    return transfer, intent(migrated, added | changed | keep)


# ------------------------------------------------------------------- rollback

def rollback_config(live: Mapping[str, Any]) -> dict[str, Any]:
    """The apply configuration restoring every pod template of ``live`` from its annotation."""
    config = intent(live, ())
    found = False
    for site in find_pod_sites(live):
        template = resolve(live, site.pointer)
        record_text = ((template.get("metadata") or {}).get("annotations") or {}).get(ORIGINAL_RESOURCES_ANNOTATION)
        if record_text is None:
            continue
        try:
            record = json.loads(record_text)
        except ValueError as err:
            raise RollbackError(f"{live['kind']}/{live['metadata']['name']}: the {ORIGINAL_RESOURCES_ANNOTATION} "
                                f"annotation at {site.pointer} is not JSON ({err}); restore it from Git") from err
        problem = _record_problem(record)
        if problem:
            raise RollbackError(f"{live['kind']}/{live['metadata']['name']}: the {ORIGINAL_RESOURCES_ANNOTATION} "
                                f"annotation at {site.pointer} is not the record kubectl-gpu writes ({problem}); "
                                "restore it from Git or roll the workload back by hand")
        found = True
        base = tuple(f"f:{t}" for t in split_pointer(site.pointer))
        spec = base + ("f:spec",) if not site.inline else base
        for field in ("containers", "initContainers"):
            for name, sections in (record.get(field) or {}).items():
                for section, values in (sections or {}).items():
                    for resource, amount in (values or {}).items():
                        path = spec + (f"f:{field}", "k:" + json.dumps({"name": name}, separators=(",", ":")),
                                       "f:resources", f"f:{section}", f"f:{resource}")
                        _set(config, path, amount)
        for key, value in (record.get("nodeSelector") or {}).items():
            _set(config, spec + ("f:nodeSelector", f"f:{key}"), value)
        if record.get("nodeAffinity"):
            _set(config, spec + ("f:affinity", "f:nodeAffinity", "f:requiredDuringSchedulingIgnoredDuringExecution"),
                 record["nodeAffinity"])
    if not found:
        raise RollbackError(f"{live['kind']}/{live['metadata']['name']} carries no {ORIGINAL_RESOURCES_ANNOTATION} "
                            f"annotation: it was not migrated by kubectl-gpu (nothing to roll back)")
    return config


def _record_problem(record: Any) -> str | None:
    """What makes ``record`` other than the one core/translate.py writes: {containers|initContainers:
    {NAME: {limits|requests: {RESOURCE: AMOUNT}}}, nodeSelector: {KEY: VALUE}, nodeAffinity: {...}}."""
    if not isinstance(record, dict):
        return f"a JSON {type(record).__name__}, not an object"
    for field in ("containers", "initContainers"):
        by_name = record.get(field) or {}
        if not isinstance(by_name, dict):
            return f"{field} must map container names to their requests"
        for name, sections in by_name.items():
            if not isinstance(sections, dict):
                return f"{field}.{name} must map limits/requests to resources"
            for section, values in sections.items():
                if not isinstance(values, dict) or not all(
                        isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in values.values()):
                    return f"{field}.{name}.{section} must map resource names to amounts"
    selector = record.get("nodeSelector") or {}
    if not isinstance(selector, dict) or not all(isinstance(v, str) for v in selector.values()):
        return "nodeSelector must map label keys to string values"
    if not isinstance(record.get("nodeAffinity") or {}, dict):
        return "nodeAffinity must be the node affinity object"
    return None


def clean_for_file(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A live object as a manifest for Git: no status, no server-set metadata."""
    out = copy.deepcopy(dict(obj))
    out.pop("status", None)
    meta = out.get("metadata") or {}
    for key in SERVER_METADATA:
        meta.pop(key, None)
    annotations = meta.get("annotations") or {}
    annotations.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    if "annotations" in meta and not annotations:
        del meta["annotations"]
    return out
