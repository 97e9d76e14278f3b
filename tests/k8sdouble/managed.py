"""Field ownership (``metadata.managedFields``) and server-side apply.

Modelled on https://kubernetes.io/docs/reference/using-api/server-side-apply/ :
- every write records which manager set which fields: ``Update`` entries for create/update/patch
  (manager from ``?fieldManager=`` or the User-Agent's first part), ``Apply`` entries for
  ``application/apply-patch+yaml``;
- an apply that would change a field another manager owns fails with 409 Conflict listing every
  conflicting field, unless ``force=true``, which moves those fields to the applier;
- a field the applier owned before and leaves out of its new configuration is removed, unless
  another manager still owns it ("Field management": removing a field needs sole ownership);
- apply creates the object when it does not exist.

A field path is a tuple of FieldsV1 path elements: ``f:<key>`` for a map key, ``k:{"name":"c"}``
for an item of an associative list (the strategic merge keys of ``patching.MERGE_KEYS``),
``v:<json>`` for an item of a set list; any other list is atomic (owned as a whole).
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Iterable

from .conversion import clone
from .errors import ApiError
from .patching import MERGE_KEYS, MERGED_SETS

Path = tuple[str, ...]
# Fields the server owns: never in anyone's field set.
UNMANAGED_METADATA = {"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                      "managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"}
MAX_MANAGER_LENGTH = 128  # PatchOptions.fieldManager: "must be less than or 128 characters long"


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ------------------------------------------------------------------ field sets

def _list_key(field: str, items: list) -> str | None:
    key = MERGE_KEYS.get(field)
    if key and all(isinstance(i, dict) and key in i for i in items):
        return key
    return None


def _item_element(key: str, item: dict) -> str:
    return "k:" + json.dumps({key: item[key]}, separators=(",", ":"))


def field_set(obj: dict) -> set[Path]:
    """Every owned path of ``obj`` (spec-like fields and metadata labels/annotations; not status)."""
    paths: set[Path] = set()
    for key, value in obj.items():
        if key in ("apiVersion", "kind", "status"):
            continue
        if key == "metadata" and isinstance(value, dict):
            for mkey, mvalue in value.items():
                if mkey not in UNMANAGED_METADATA:
                    _walk(mvalue, ("f:metadata", f"f:{mkey}"), mkey, paths)
            continue
        _walk(value, (f"f:{key}",), key, paths)
    return paths


def _walk(value: Any, path: Path, field: str, out: set[Path]) -> None:
    if isinstance(value, dict) and value:
        for key, child in value.items():
            _walk(child, path + (f"f:{key}",), key, out)
        return
    if isinstance(value, list) and value:
        key = _list_key(field, value)
        if key is not None:
            for item in value:
                item_path = path + (_item_element(key, item),)
                out.add(item_path + (".",))
                for ikey, child in item.items():
                    _walk(child, item_path + (f"f:{ikey}",), ikey, out)
            return
        if field in MERGED_SETS:
            out.update(path + ("v:" + json.dumps(v, separators=(",", ":")),) for v in value)
            return
    out.add(path)  # a scalar, an empty map or list, or an atomic list


def _lookup(obj: Any, path: Path) -> tuple[bool, Any]:
    """(found, value) of ``path`` in ``obj``; an item path ending in '.' yields the item."""
    current = obj
    for element in path:
        if element == ".":
            continue
        if element.startswith("f:") and isinstance(current, dict):
            if element[2:] not in current:
                return False, None
            current = current[element[2:]]
        elif element.startswith("k:") and isinstance(current, list):
            wanted = json.loads(element[2:])
            current = next((i for i in current if isinstance(i, dict)
                            and all(i.get(k) == v for k, v in wanted.items())), _MISSING)
            if current is _MISSING:
                return False, None
        elif element.startswith("v:") and isinstance(current, list):
            value = json.loads(element[2:])
            return (value in current), value
        else:
            return False, None
    return True, current


_MISSING = object()


def _remove(obj: Any, path: Path) -> None:
    """Remove the field (or list item) at ``path``; no-op when absent."""
    path = tuple(e for e in path if e != ".")
    found, parent = _lookup(obj, path[:-1])
    if not found:
        return
    last = path[-1]
    if last.startswith("f:") and isinstance(parent, dict):
        parent.pop(last[2:], None)
    elif last.startswith("k:") and isinstance(parent, list):
        wanted = json.loads(last[2:])
        parent[:] = [i for i in parent if not (isinstance(i, dict) and all(i.get(k) == v for k, v in wanted.items()))]
    elif last.startswith("v:") and isinstance(parent, list):
        value = json.loads(last[2:])
        parent[:] = [i for i in parent if i != value]


def _prune_empty(obj: Any, path: Path, kept: set[Path]) -> None:
    """Drop maps and lists that a removal left empty, from the innermost up (unless owned as empty)."""
    path = tuple(e for e in path if e != ".")
    for depth in range(len(path) - 1, 0, -1):
        parent_path = path[:depth]
        found, value = _lookup(obj, parent_path)
        if not found or value or not isinstance(value, (dict, list)) or parent_path in kept:
            return
        if parent_path[-1].startswith("k:"):
            return  # an item that is left with only its key stays
        _remove(obj, parent_path)


def to_fields_v1(paths: Iterable[Path]) -> dict:
    tree: dict = {}
    for path in sorted(paths):
        node = tree
        for element in path:
            node = node.setdefault(element, {})
    return tree


def from_fields_v1(tree: Any, prefix: Path = ()) -> set[Path]:
    out: set[Path] = set()
    if not isinstance(tree, dict):
        return out
    if not tree and prefix:
        out.add(prefix)
    for element, child in tree.items():
        if element == ".":
            out.add(prefix + (".",))
        else:
            out |= from_fields_v1(child, prefix + (element,))
    return out


def path_text(path: Path) -> str:
    """``.spec.template.spec.containers[name="c"].resources`` as the API server prints conflicts."""
    text = ""
    for element in path:
        if element == ".":
            continue
        if element.startswith("f:"):
            text += "." + element[2:]
        elif element.startswith("k:"):
            text += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in json.loads(element[2:]).items()) + "]"
        else:
            text += "[" + element[2:] + "]"
    return text


# ---------------------------------------------------------------- managers

class Managers:
    """The managedFields of one object as {(manager, operation, apiVersion, subresource): paths}."""

    def __init__(self, managed_fields: Any):
        self.entries: dict[tuple[str, str, str, str], set[Path]] = {}
        self.original = managed_fields if isinstance(managed_fields, list) else []
        for entry in managed_fields if isinstance(managed_fields, list) else []:
            if not isinstance(entry, dict) or not entry.get("manager"):
                continue
            key = (entry["manager"], entry.get("operation", "Update"), entry.get("apiVersion", ""),
                   entry.get("subresource", ""))
            self.entries.setdefault(key, set()).update(from_fields_v1(entry.get("fieldsV1")))

    def owned_by_others(self, key: tuple[str, str, str, str]) -> dict[Path, list[tuple[str, str, str, str]]]:
        owners: dict[Path, list] = {}
        for other, paths in self.entries.items():
            if other[:2] != key[:2]:
                for path in paths:
                    owners.setdefault(path, []).append(other)
        return owners

    def release(self, paths: set[Path], except_key: tuple | None = None) -> None:
        for key in list(self.entries):
            if key != except_key:
                self.entries[key] -= paths

    def set(self, key: tuple[str, str, str, str], paths: set[Path]) -> None:
        # One entry per manager and operation: a new apiVersion replaces the old entry.
        for old in [k for k in self.entries if k[:2] == key[:2] and k[3] == key[3]]:
            del self.entries[old]
        self.entries[key] = set(paths)

    def encode(self) -> list[dict]:
        """managedFields; an entry whose fields did not change keeps its time, so a no-op write
        stays a no-op (same resourceVersion), as in the API server."""
        previous = {(e.get("manager"), e.get("operation"), e.get("apiVersion"), e.get("subresource", "")):
                    e for e in self.original if isinstance(e, dict)}
        out = []
        for (manager, operation, api_version, subresource), paths in self.entries.items():
            if not paths:
                continue
            old = previous.get((manager, operation, api_version, subresource))
            if old is not None and from_fields_v1(old.get("fieldsV1")) == paths:
                out.append(old)
                continue
            entry = {"manager": manager, "operation": operation, "apiVersion": api_version, "time": _now(),
                     "fieldsType": "FieldsV1", "fieldsV1": to_fields_v1(paths)}
            if subresource:
                entry["subresource"] = subresource
            out.append(entry)
        return out


def check_manager(manager: str | None, apply: bool) -> str | None:
    if apply and not manager:
        raise ApiError(422, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required '
                            'for apply patch', "Invalid")
    if manager and len(manager) > MAX_MANAGER_LENGTH:
        raise ApiError(422, f"fieldManager: Too long: may not be more than {MAX_MANAGER_LENGTH} bytes", "Invalid")
    return manager


def default_manager(user_agent: str) -> str:
    """The API server's default for non-apply writes: the User-Agent up to its first '/'."""
    return (user_agent.split("/")[0] or "unknown")[:MAX_MANAGER_LENGTH]


def record_update(old: dict | None, new: dict, manager: str, api_version: str, subresource: str = "") -> None:
    """A create/update/patch: the manager takes the fields it changed; removed fields leave every set.

    A write that changes ``metadata.managedFields`` itself sets the ownership it starts from (how
    kubectl's csaupgrade moves fields between managers, and how managedFields are reset)."""
    old_managed = (old or {}).get("metadata", {}).get("managedFields")
    sent = new.get("metadata", {}).get("managedFields")
    managers = Managers(sent if old is not None and sent is not None and sent != old_managed else old_managed)
    if subresource == "status":
        new.setdefault("metadata", {})["managedFields"] = managers.encode()
        return
    old_paths = field_set(old) if old else set()
    new_paths = field_set(new)
    changed = {p for p in new_paths if p not in old_paths or _lookup(old, p)[1] != _lookup(new, p)[1]}
    managers.release(old_paths - new_paths)
    managers.release(changed)
    key = (manager, "Update", api_version, subresource)
    existing = next((paths for k, paths in managers.entries.items() if k[:2] == key[:2]), set())
    managers.set(key, (existing & new_paths) | changed)
    new.setdefault("metadata", {})["managedFields"] = managers.encode()


def _merge(live: Any, config: Any, field: str = "") -> Any:
    """Merge an apply configuration into the live object (associative lists by key, sets as sets)."""
    if isinstance(config, dict) and isinstance(live, dict):
        out = dict(live)
        for key, value in config.items():
            out[key] = _merge(live.get(key), value, key) if key in live else clone(value)
        return out
    if isinstance(config, list) and isinstance(live, list):
        key = _list_key(field, config)
        if key is not None and _list_key(field, live) == key:
            out = list(live)
            for item in config:
                index = next((i for i, cur in enumerate(out) if cur.get(key) == item[key]), None)
                if index is None:
                    out.append(clone(item))
                else:
                    out[index] = _merge(out[index], item)
            return out
        if field in MERGED_SETS:
            return list(live) + [clone(v) for v in config if v not in live]
    return clone(config)


def server_side_apply(live: dict | None, config: dict, manager: str, force: bool, api_version: str) -> dict:
    """The object after ``manager`` applies ``config`` (raises 409 on conflicts unless ``force``)."""
    applied = field_set(config)
    key = (manager, "Apply", api_version, "")
    if live is None:
        result = clone(config)
        managers = Managers(None)
        managers.set(key, applied)
        result.setdefault("metadata", {})["managedFields"] = managers.encode()
        return result
    managers = Managers(live.get("metadata", {}).get("managedFields"))
    owners = managers.owned_by_others(key)
    conflicts = sorted((path, owner) for path in applied if path in owners
                       and _lookup(live, path)[0] and path[-1] != "." and _lookup(live, path)[1] != _lookup(config, path)[1]
                       for owner in owners[path])
    if conflicts and not force:
        raise _conflict_error(conflicts)
    managers.release({path for path, _ in conflicts})
    previous = next((paths for k, paths in managers.entries.items() if k[:2] == key[:2]), set())
    result = _merge(live, config)
    still_owned = {p for k, paths in managers.entries.items() if k[:2] != key[:2] for p in paths}
    kept = still_owned | applied
    gone = [path for path in previous - applied
            if not any(p[:len(_stem(path))] == _stem(path) for p in kept)]
    # A list item that goes takes its fields along: remove it whole, not field by field (its key
    # field first would leave an item that can no longer be found).
    items = {_stem(p) for p in gone if p[-1] == "."}
    for path in sorted(gone, key=len, reverse=True):
        if any(len(item) < len(path) and path[:len(item)] == item for item in items if item != _stem(path)):
            continue
        _remove(result, path)
        _prune_empty(result, path, kept)
    managers.set(key, applied)
    result.setdefault("metadata", {})["managedFields"] = managers.encode()
    return result


def _stem(path: Path) -> Path:
    return path[:-1] if path and path[-1] == "." else path


def _conflict_error(conflicts: list[tuple[Path, tuple[str, str, str, str]]]) -> ApiError:
    causes = [{"reason": "FieldManagerConflict", "field": path_text(path),
               "message": f'conflict with "{owner[0]}"' + (f" using {owner[2]}" if owner[2] else "")}
              for path, owner in conflicts]
    plural = "s" if len(causes) != 1 else ""
    lines = "\n".join(f"- {c['message']}: {c['field']}" for c in causes)
    return ApiError(409, f"Apply failed with {len(causes)} conflict{plural}: {lines}", "Conflict",
                    {"causes": causes})
