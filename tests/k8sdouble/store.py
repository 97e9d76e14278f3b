"""The object store: one global resourceVersion, an event log for watches, list snapshots for paging.

Stored objects are kept at the storage (hub) version and never mutated once stored; every write
stores a new ``Entry``. That makes a list snapshot a cheap list of references, so paginated lists
are consistent at the resourceVersion of their first page, as in Kubernetes.
"""
from __future__ import annotations

import base64
import binascii
import bisect
import json
import random
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable

from . import errors
from .conversion import clone, convert
from .errors import ApiError
from .kinds import ResourceKind

Key = tuple[str, str]  # (namespace or "", name)
NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # Kubernetes' utilrand alphabet
GENERATE_NAME_ATTEMPTS = 8  # the API server retries generateName collisions this often


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Entry:
    kind: ResourceKind
    obj: dict  # at kind.storage_version; never mutated once stored
    rv: int
    _encoded: dict[str, bytes] = field(default_factory=dict, repr=False)

    @property
    def key(self) -> Key:
        meta = self.obj["metadata"]
        return meta.get("namespace", ""), meta["name"]

    def at(self, version: str) -> dict:
        return convert(self.obj, self.kind, self.kind.storage_version, version)

    def encoded(self, version: str) -> bytes:
        cached = self._encoded.get(version)
        if cached is None:
            cached = json.dumps(self.at(version), separators=(",", ":")).encode()
            self._encoded[version] = cached
        return cached


@dataclass(frozen=True)
class Event:
    rv: int
    type: str  # ADDED | MODIFIED | DELETED
    entry: Entry
    # The object before this change (MODIFIED, DELETED): a watch with a selector needs it to turn
    # a change into or out of the selection into ADDED/DELETED, as the watch cache does.
    prev: Entry | None = None


@dataclass
class Page:
    entries: list[Entry]
    resource_version: int
    continue_token: str | None
    remaining: int | None


def _without_resource_version(obj: dict) -> dict:
    meta = {k: v for k, v in obj.get("metadata", {}).items() if k != "resourceVersion"}
    return {**obj, "metadata": meta}


def _spec_part(obj: dict) -> dict:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


class Store:
    def __init__(self, rng: random.Random, event_log_size: int = 100_000, snapshot_cache_size: int = 32):
        self.cond = threading.Condition(threading.RLock())
        self.rv = 0
        self._rng = rng
        self._objects: dict[str, dict[Key, Entry]] = {}
        self._events: list[Event] = []
        self._event_log_size = event_log_size
        self.compacted_rv = 0  # watches from before this resourceVersion get 410 Expired
        self._snapshots: OrderedDict[str, tuple[list[Key], list[Entry]]] = OrderedDict()
        self._snapshot_cache_size = snapshot_cache_size
        # Admission of a create (after its name is generated, before it is stored; seeding skips it) and
        # a listener told of every stored change: the ResourceQuota admission and controller (quota.py).
        self.admit: Callable[[ResourceKind, dict], None] | None = None
        self.changed: Callable[[ResourceKind, str], None] | None = None

    # ----------------------------------------------------------------- reads

    def bucket(self, kind: ResourceKind) -> dict[Key, Entry]:
        return self._objects.setdefault(kind.qualified_name, {})

    def get(self, kind: ResourceKind, namespace: str, name: str) -> Entry | None:
        with self.cond:
            return self.bucket(kind).get((namespace if kind.namespaced else "", name))

    def require(self, kind: ResourceKind, namespace: str, name: str) -> Entry:
        entry = self.get(kind, namespace, name)
        if entry is None:
            raise errors.not_found(kind, name)
        return entry

    def entries(self, kind: ResourceKind, namespace: str | None = None) -> list[Entry]:
        with self.cond:
            items = sorted(self.bucket(kind).items(), key=lambda kv: kv[0])
        return [e for k, e in items if namespace is None or k[0] == namespace]

    def list_page(self, kind: ResourceKind, namespace: str | None, matches: Callable[[dict], bool],
                  limit: int | None, continue_token: str | None, filtered: bool) -> Page:
        if continue_token:
            list_rv, start, snapshot_id = _decode_continue(continue_token)
            with self.cond:
                snapshot = self._snapshots.get(snapshot_id)
                if snapshot is not None:
                    self._snapshots.move_to_end(snapshot_id)
            if snapshot is None:  # evicted: carry on from the current state, after the last key sent
                snapshot = self._take_snapshot(kind, namespace)[1:]
            keys, entries = snapshot
            position = bisect.bisect_right(keys, start)
        else:
            list_rv, keys, entries = self._take_snapshot(kind, namespace)
            snapshot_id, position = "", 0
        selected: list[Entry] = []
        while position < len(entries) and (not limit or len(selected) < limit):
            if matches(entries[position].obj):
                selected.append(entries[position])
            position += 1
        if position >= len(entries):
            return Page(selected, list_rv, None, None)
        if not snapshot_id:
            snapshot_id = uuid.UUID(int=self._rng.getrandbits(128)).hex
            with self.cond:
                self._snapshots[snapshot_id] = (keys, entries)
                while len(self._snapshots) > self._snapshot_cache_size:
                    self._snapshots.popitem(last=False)
        token = _encode_continue(list_rv, keys[position - 1], snapshot_id)
        return Page(selected, list_rv, token, None if filtered else len(entries) - position)

    def _take_snapshot(self, kind: ResourceKind, namespace: str | None) -> tuple[int, list[Key], list[Entry]]:
        with self.cond:
            items = list(self.bucket(kind).items())
            rv = self.rv
        if namespace is not None:
            items = [kv for kv in items if kv[0][0] == namespace]
        items.sort(key=lambda kv: kv[0])
        return rv, [k for k, _ in items], [e for _, e in items]

    def events_after(self, rv: int) -> list[Event]:
        """Events newer than ``rv``; raises 410 when the log no longer reaches back that far."""
        with self.cond:
            if rv < self.compacted_rv:
                raise ApiError(410, f"too old resource version: {rv} ({self.compacted_rv})", "Expired")
            start = bisect.bisect_right(self._events, rv, key=lambda e: e.rv)
            return self._events[start:]

    # ---------------------------------------------------------------- writes

    def _next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def _record(self, event_type: str, entry: Entry, prev: Entry | None = None) -> None:
        self._events.append(Event(entry.rv, event_type, entry, prev))
        if len(self._events) > self._event_log_size:
            dropped = self._events[: len(self._events) // 2]
            del self._events[: len(dropped)]
            self.compacted_rv = dropped[-1].rv
        if self.changed is not None:
            self.changed(entry.kind, entry.obj["metadata"].get("namespace", ""))
        self.cond.notify_all()

    def _generated_name(self, prefix: str, kind: ResourceKind, namespace: str) -> str:
        bucket = self.bucket(kind)
        for _ in range(GENERATE_NAME_ATTEMPTS):
            name = prefix + "".join(self._rng.choice(NAME_SUFFIX_ALPHABET) for _ in range(5))
            if (namespace, name) not in bucket:
                return name
        raise errors.already_exists(kind, prefix + "xxxxx")

    def create(self, kind: ResourceKind, obj: dict, dry_run: bool = False, keep_identity: bool = False) -> Entry:
        """Store a new object (at storage version), taking ownership of ``obj``: pass a fresh copy.
        ``keep_identity`` keeps a seeded uid/creationTimestamp/generation."""
        meta = obj.setdefault("metadata", {})
        namespace = meta.get("namespace", "") if kind.namespaced else ""
        if not kind.namespaced:
            meta.pop("namespace", None)
        for key, default in kind.create_defaults.items():
            obj.setdefault(key, clone(default))
        with self.cond:
            if not meta.get("name"):
                meta["name"] = self._generated_name(meta.get("generateName", ""), kind, namespace)
            key = (namespace, meta["name"])
            if key in self.bucket(kind):
                raise errors.already_exists(kind, meta["name"])
            if self.admit is not None and not keep_identity:
                self.admit(kind, obj)
            if not (keep_identity and meta.get("uid")):
                meta["uid"] = str(uuid.UUID(int=self._rng.getrandbits(128), version=4))
            if not (keep_identity and meta.get("creationTimestamp")):
                meta["creationTimestamp"] = _now()
            meta["generation"] = meta.get("generation", 1) if keep_identity else 1
            if dry_run:
                meta.pop("resourceVersion", None)
                return Entry(kind, obj, self.rv)
            rv = self._next_rv()
            meta["resourceVersion"] = str(rv)
            entry = Entry(kind, obj, rv)
            self.bucket(kind)[key] = entry
            self._record("ADDED", entry)
            return entry

    def update(self, kind: ResourceKind, obj: dict, subresource: str = "", dry_run: bool = False,
               force: bool = False) -> Entry:
        """Replace an object (PUT semantics), taking ownership of ``obj``: pass a fresh copy.
        ``force`` skips the resourceVersion precondition (seeding)."""
        new = obj
        meta = new.setdefault("metadata", {})
        namespace = meta.get("namespace", "") if kind.namespaced else ""
        name = meta.get("name", "")
        with self.cond:
            old = self.bucket(kind).get((namespace, name))
            if old is None:
                raise errors.not_found(kind, name)
            wanted_rv = meta.get("resourceVersion")
            if wanted_rv and not force and wanted_rv != old.obj["metadata"]["resourceVersion"]:
                raise errors.conflict(kind, name)
            if "status" in kind.subresources:
                new = self._split_status_update(old.obj, new, subresource)
                meta = new["metadata"]
            old_meta = old.obj["metadata"]
            for preserved in ("uid", "creationTimestamp", "name", "namespace", "generation"):
                if preserved in old_meta:
                    meta[preserved] = old_meta[preserved]
            if _spec_part(new) != _spec_part(old.obj):
                meta["generation"] = old_meta.get("generation", 1) + 1
            meta["resourceVersion"] = old_meta["resourceVersion"]
            if _without_resource_version(new) == _without_resource_version(old.obj):
                return old  # a no-op write changes nothing, not even the resourceVersion
            if dry_run:
                return Entry(kind, new, old.rv)
            rv = self._next_rv()
            meta["resourceVersion"] = str(rv)
            entry = Entry(kind, new, rv)
            self.bucket(kind)[(namespace, name)] = entry
            self._record("MODIFIED", entry, old)
            return entry

    @staticmethod
    def _split_status_update(old: dict, new: dict, subresource: str) -> dict:
        """The main resource ignores status changes; /status changes only status."""
        if subresource == "status":
            merged = clone(old)
            if "status" in new:
                merged["status"] = new["status"]
            else:
                merged.pop("status", None)
            merged["metadata"]["resourceVersion"] = new["metadata"].get("resourceVersion")
            return merged
        if "status" in old:
            new["status"] = clone(old["status"])
        else:
            new.pop("status", None)
        return new

    def delete(self, kind: ResourceKind, namespace: str, name: str, dry_run: bool = False,
               precondition_rv: str | None = None, precondition_uid: str | None = None) -> Entry:
        namespace = namespace if kind.namespaced else ""
        with self.cond:
            old = self.bucket(kind).get((namespace, name))
            if old is None:
                raise errors.not_found(kind, name)
            meta = old.obj["metadata"]
            if precondition_rv and precondition_rv != meta["resourceVersion"]:
                raise errors.conflict(kind, name)
            if precondition_uid and precondition_uid != meta.get("uid"):
                raise errors.conflict(kind, name)
            if dry_run:
                return old
            del self.bucket(kind)[(namespace, name)]
            gone = clone(old.obj)
            rv = self._next_rv()
            gone["metadata"]["resourceVersion"] = str(rv)
            entry = Entry(kind, gone, rv)
            self._record("DELETED", entry, old)
            return entry

    def delete_namespace_contents(self, kinds: list[ResourceKind], namespace: str) -> None:
        """What the namespace controller does once a namespace is deleted."""
        with self.cond:
            for kind in kinds:
                for key in [k for k in self.bucket(kind) if k[0] == namespace]:
                    self.delete(kind, namespace, key[1])

    def compact(self) -> None:
        """Forget every event so far, as etcd's compaction does: watches from an older
        resourceVersion get 410 Expired and must list again."""
        with self.cond:
            self.compacted_rv = self.rv
            self._events.clear()
            self.cond.notify_all()

    def clear(self) -> None:
        with self.cond:
            self._objects.clear()
            self._snapshots.clear()
            # Old watches and continue tokens must not replay a wiped store: every open watch
            # gets 410 Gone and its client lists again (a wipe sends no DELETED events).
            self.rv += 1
            self.compacted_rv = self.rv
            self._events.clear()
            self.cond.notify_all()


def _encode_continue(rv: int, start: Key, snapshot_id: str) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": list(start), "snap": snapshot_id})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, Key, str]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        return int(data["rv"]), (str(data["start"][0]), str(data["start"][1])), str(data["snap"])
    except (ValueError, KeyError, IndexError, TypeError, binascii.Error):
        raise ApiError(400, f"invalid continue token {token!r}: pass the metadata.continue value of the "
                            f"previous page unchanged")

