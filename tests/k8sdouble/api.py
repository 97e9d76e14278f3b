"""Kubernetes REST semantics over the store: routing, verbs, selectors, paging, watch, dry-run.

Transport-free: ``server.py`` feeds it parsed requests and writes what it returns.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

import yaml

from . import discovery, errors
from .conversion import clone, convert
from .defaulting import apply_defaults
from .errors import ApiError
from .eviction import evict
from .faults import RecordedRequest
from .managed import check_manager, default_manager, record_update, server_side_apply
from .kinds import Registry, ResourceKind
from .patching import APPLY, apply_patch
from .selectors import SelectorError, make_matcher
from .store import Entry, Event, Store
from .validation import metadata_causes, schema_causes

MAX_BODY_BYTES = 3 * 1024 * 1024  # the API server's request size limit


@dataclass
class Response:
    code: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Stream:
    """A watch: ``chunks`` yields newline-terminated JSON events until the watch ends."""
    chunks: Iterator[bytes]


@dataclass(frozen=True)
class ResourceRequest:
    verb: str
    kind: ResourceKind
    version: str
    namespace: str  # "" for cluster-scoped or all namespaces
    name: str
    subresource: str
    query: dict[str, str]

    def record(self, method: str, path: str) -> RecordedRequest:
        return RecordedRequest(method, path, self.verb, self.kind.group, self.version, self.kind.plural,
                               self.subresource, self.namespace, self.name, dict(self.query),
                               self.query.get("dryRun") == "All")


@dataclass
class ApiOptions:
    kubernetes_version: str = "1.34"
    validate: bool = True
    max_watch_seconds: float = 30.0
    # How often a watch with allowWatchBookmarks=true gets a BOOKMARK (the watch cache's
    # bookmarkFrequency is one minute; tests pass less).
    bookmark_seconds: float = 60.0
    address: str = "127.0.0.1:0"
    # GET pods/NAME/log answers these (namespace, name) -> text, set by K8sDouble.set_pod_log: the
    # double runs no containers, so a test plays the kubelet.
    pod_logs: dict = field(default_factory=dict)
    # kube-apiserver's own feature gates, (name, stage) -> enabled, as GET /metrics reports them
    # (K8sDouble.set_feature_gates); and the non-resource paths the caller may not get (RBAC).
    feature_gates: dict = field(default_factory=dict)
    forbidden_paths: set = field(default_factory=set)


def _json(obj: Any, code: int = 200) -> Response:
    return Response(code, json.dumps(obj, separators=(",", ":")).encode())


def _metrics_text(gates: dict) -> bytes:
    """kube-apiserver's /metrics in the Prometheus text format, with the gauge component-base
    registers for every feature gate (staging/src/k8s.io/component-base/metrics/prometheus/feature/
    metrics.go: namespace "kubernetes", name "feature_enabled", labels name and stage, 1 or 0)
    beside an unrelated series, as a real scrape has hundreds."""
    lines = ["# HELP apiserver_storage_objects [STABLE] Number of stored objects at the time of last check split by kind.",
             "# TYPE apiserver_storage_objects gauge", 'apiserver_storage_objects{resource="pods"} 12',
             "# HELP kubernetes_feature_enabled [BETA] This metric records the data about the stage and enablement "
             "of a k8s feature.", "# TYPE kubernetes_feature_enabled gauge"]
    lines += [f'kubernetes_feature_enabled{{name="{name}",stage="{stage}"}} {1 if on else 0}'
              for (name, stage), on in sorted(gates.items())]
    return ("\n".join(lines) + "\n").encode()


def status_response(error: ApiError) -> Response:
    return _json(error.status(), error.code)


def _success_status(kind: ResourceKind, entry: Entry) -> dict[str, Any]:
    meta = entry.obj["metadata"]
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": {"name": meta["name"], "group": kind.group, "kind": kind.plural, "uid": meta.get("uid")}}


class Api:
    def __init__(self, registry: Registry, store: Store, options: ApiOptions, stopping: threading.Event,
                 after_write=None):
        self.registry = registry
        self.store = store
        self.options = options
        self.stopping = stopping
        self.after_write = after_write  # the simulated controllers, when on

    def execute(self, req: ResourceRequest, headers: dict[str, str], body: bytes) -> Response | Stream:
        result = self._execute(req, headers, body)
        if self.after_write is not None and req.verb not in ("get", "list", "watch"):
            self.after_write()
        return result

    # -------------------------------------------------------------- routing

    def discovery(self, path: str) -> Response | None:
        """Discovery and version documents; None when ``path`` is not one."""
        parts = [p for p in path.split("/") if p]
        if parts == ["version"]:
            return _json(discovery.version_info(self.options.kubernetes_version))
        if path in self.options.forbidden_paths:
            # What RBAC answers without a nonResourceURLs rule granting get on the path.
            raise ApiError(403, f'forbidden: User "system:serviceaccount:default:default" cannot get path "{path}"')
        if parts in (["healthz"], ["readyz"], ["livez"]):
            return Response(200, b"ok", "text/plain")
        if parts == ["metrics"]:
            return Response(200, _metrics_text(self.options.feature_gates), "text/plain; version=0.0.4; charset=utf-8")
        if parts == ["api"]:
            return _json(discovery.api_versions(self.options.address))
        if parts == ["apis"]:
            return _json(discovery.api_group_list(self.registry))
        if parts == ["api", "v1"]:
            return _json(discovery.api_resource_list(self.registry, "", "v1"))
        if len(parts) == 2 and parts[0] == "apis":
            group = discovery.api_group(self.registry, parts[1])
            if group is None:
                raise ApiError(404, "the server could not find the requested resource")
            return _json(group)
        if len(parts) == 3 and parts[0] == "apis":
            if not self.registry.served(parts[1], parts[2]):
                raise ApiError(404, "the server could not find the requested resource")
            return _json(discovery.api_resource_list(self.registry, parts[1], parts[2]))
        return None

    def parse(self, method: str, path: str, query: dict[str, str]) -> ResourceRequest:
        parts = [p for p in path.split("/") if p]
        if len(parts) >= 3 and parts[0] == "api" and parts[1] == "v1":
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 4 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, "the server could not find the requested resource")
        namespace = ""
        if len(rest) >= 3 and rest[0] == "namespaces" and self.registry.by_url(group, version, rest[2]):
            namespace, rest = rest[1], rest[2:]
        kind = self.registry.by_url(group, version, rest[0])
        if kind is None or len(rest) > 3 or (namespace and not kind.namespaced):
            raise ApiError(404, "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else ""
        subresource = rest[2] if len(rest) > 2 else ""
        if subresource and subresource not in kind.subresources:
            raise ApiError(404, f"the server could not find the requested resource ({kind.plural}/{subresource})")
        if kind.namespaced and not namespace and name:
            raise ApiError(404, "the server could not find the requested resource")
        verb = "create" if (method, subresource) == ("POST", "eviction") else self._verb(method, name, query)
        if subresource == "log" and verb != "get":
            raise ApiError(405, f"{verb} is not supported on {kind.plural}/log", "MethodNotAllowed")
        if subresource == "eviction":
            if verb != "create":
                raise ApiError(405, f"{verb} is not supported on {kind.plural}/eviction: POST an Eviction",
                               "MethodNotAllowed")
        elif subresource and verb not in ("get", "update", "patch"):
            raise ApiError(405, f"{verb} is not supported on {kind.plural}/{subresource}", "MethodNotAllowed")
        return ResourceRequest(verb, kind, version, namespace, name, subresource, query)

    @staticmethod
    def _verb(method: str, name: str, query: dict[str, str]) -> str:
        if method == "GET":
            if name:
                return "get"
            return "watch" if query.get("watch") in ("true", "1") else "list"
        verbs = {("POST", False): "create", ("PUT", True): "update", ("PATCH", True): "patch",
                 ("DELETE", True): "delete", ("DELETE", False): "deletecollection"}
        verb = verbs.get((method, bool(name)))
        if verb is None:
            raise ApiError(405, f"method {method} is not allowed on this path", "MethodNotAllowed")
        return verb

    # ---------------------------------------------------------------- verbs

    def _execute(self, req: ResourceRequest, headers: dict[str, str], body: bytes) -> Response | Stream:
        dry_run = self._dry_run(req.query)
        as_table = "as=Table" in headers.get("accept", "")
        if req.verb == "get" and req.subresource == "log":
            self.store.require(req.kind, req.namespace, req.name)
            text = self.options.pod_logs.get((req.namespace, req.name), "")
            return Response(200, text.encode(), "text/plain")
        if req.verb == "get":
            entry = self.store.require(req.kind, req.namespace, req.name)
            if as_table:
                return _json(discovery.table([entry], req.version, req.query.get("includeObject", "Metadata"),
                                             {"resourceVersion": str(entry.rv)}))
            return Response(200, entry.encoded(req.version))
        if req.verb == "list":
            return self._list(req, as_table)
        if req.verb == "watch":
            return self._watch(req, as_table)
        content_type = headers.get("content-type", "").split(";")[0].strip().lower()
        apply = req.verb == "patch" and content_type == APPLY
        manager = check_manager(req.query.get("fieldManager"), apply) or default_manager(headers.get("user-agent", ""))
        force = req.query.get("force")
        if force not in (None, "", "false") and not apply:
            raise ApiError(422, "force: Forbidden: may not be specified for non-apply patch", "Invalid")
        if req.subresource == "eviction":
            status = evict(self.registry, self.store, req.namespace, req.name, self._body(headers, body), dry_run)
            return _json(status, 201)
        if req.verb == "create":
            return self._create(req, self._body(headers, body), dry_run, manager)
        if req.verb == "update":
            return self._update(req, self._body(headers, body), dry_run, manager)
        if apply:
            return self._apply(req, body, dry_run, manager, force in ("true", "1"))
        if req.verb == "patch":
            return self._patch(req, content_type, self._decode(body), dry_run, manager)
        if req.verb == "delete":
            return self._delete(req, self._decode(body) if body.strip() else {}, dry_run)
        return self._delete_collection(req, dry_run)

    @staticmethod
    def _dry_run(query: dict[str, str]) -> bool:
        value = query.get("dryRun")
        if value not in (None, "", "All"):
            raise ApiError(400, f'unsupported dryRun value {value!r}: the only supported value is "All"')
        return value == "All"

    @staticmethod
    def _decode(body: bytes) -> Any:
        try:
            return json.loads(body)
        except (ValueError, UnicodeDecodeError) as e:
            raise ApiError(400, f"the request body is not valid JSON: {e}")

    def _body(self, headers: dict[str, str], body: bytes) -> dict:
        content_type = headers.get("content-type", "application/json").split(";")[0].strip()
        if content_type not in ("application/json", "*/*", ""):
            raise ApiError(415, f"the body of the request was in an unsupported format {content_type!r}: "
                                f"the test double accepts application/json only")
        obj = self._decode(body)
        if not isinstance(obj, dict):
            raise ApiError(400, "the request body must be a JSON object")
        return obj

    def _matcher(self, req: ResourceRequest):
        try:
            return make_matcher(req.query.get("labelSelector"), req.query.get("fieldSelector"),
                                req.kind.allowed_field_labels())
        except SelectorError as e:
            raise ApiError(400, str(e))

    def _list(self, req: ResourceRequest, as_table: bool) -> Response:
        matches = self._matcher(req)
        try:
            limit = int(req.query.get("limit") or 0)
        except ValueError:
            raise ApiError(400, f"limit must be an integer, not {req.query.get('limit')!r}")
        filtered = bool(req.query.get("labelSelector") or req.query.get("fieldSelector"))
        page = self.store.list_page(req.kind, req.namespace or None, matches, limit if limit > 0 else None,
                                    req.query.get("continue") or None, filtered)
        meta: dict[str, Any] = {"resourceVersion": str(page.resource_version)}
        if page.continue_token:
            meta["continue"] = page.continue_token
        if page.remaining is not None:
            meta["remainingItemCount"] = page.remaining
        if as_table:
            return _json(discovery.table(page.entries, req.version, req.query.get("includeObject", "Metadata"), meta))
        head = json.dumps({"apiVersion": req.kind.api_version(req.version), "kind": f"{req.kind.kind}List",
                           "metadata": meta}, separators=(",", ":")).encode()
        items = b",".join(e.encoded(req.version) for e in page.entries)
        return Response(200, head[:-1] + b',"items":[' + items + b"]}")

    # --- writes

    def _check_type(self, req: ResourceRequest, obj: dict) -> None:
        expected = req.kind.api_version(req.version)
        api_version, kind = obj.setdefault("apiVersion", expected), obj.setdefault("kind", req.kind.kind)
        if api_version != expected or kind != req.kind.kind:
            raise ApiError(400, f"the body is {api_version} {kind} but the URL is for {expected} {req.kind.kind}: "
                                f"send it to the matching endpoint")

    def _check_namespace(self, req: ResourceRequest, obj: dict) -> None:
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiError(400, "metadata must be an object")
        if not req.kind.namespaced:
            meta.pop("namespace", None)
            return
        body_ns = meta.get("namespace")
        if body_ns and body_ns != req.namespace:
            raise ApiError(400, "the namespace of the provided object does not match the namespace sent on "
                                "the request")
        meta["namespace"] = req.namespace

    def _validate(self, req: ResourceRequest, obj: dict) -> None:
        causes = metadata_causes(req.kind, obj)
        if not causes and self.options.validate:
            causes = schema_causes(obj, self.options.kubernetes_version)
        if causes:
            meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
            raise errors.invalid(req.kind, str(meta.get("name") or meta.get("generateName") or ""), causes)

    def _to_hub(self, req: ResourceRequest, obj: dict) -> dict:
        hub = convert(obj, req.kind, req.version, req.kind.storage_version)
        apply_defaults(req.kind, hub)
        return hub

    def _create(self, req: ResourceRequest, obj: dict, dry_run: bool, manager: str) -> Response:
        if req.name:
            raise ApiError(405, "POST is not allowed on a named object", "MethodNotAllowed")
        self._check_type(req, obj)
        self._check_namespace(req, obj)
        if obj["metadata"].get("resourceVersion"):
            raise ApiError(400, "resourceVersion should not be set on objects to be created")
        self._validate(req, obj)
        hub = self._to_hub(req, obj)
        hub["metadata"].pop("managedFields", None)
        record_update(None, hub, manager, req.kind.api_version(req.version))
        entry = self.store.create(req.kind, hub, dry_run=dry_run)
        return Response(201, entry.encoded(req.version))

    def _update(self, req: ResourceRequest, obj: dict, dry_run: bool, manager: str) -> Response:
        self._check_type(req, obj)
        self._check_namespace(req, obj)
        if obj["metadata"].get("name") != req.name:
            raise ApiError(400, f"the name of the object ({obj['metadata'].get('name')!r}) does not match the name "
                                f"on the URL ({req.name!r})")
        self._validate(req, obj)
        with self.store.cond:
            hub = self._to_hub(req, obj)
            current = self.store.get(req.kind, req.namespace, req.name)
            record_update(current.obj if current else None, hub, manager, req.kind.api_version(req.version),
                          req.subresource)
            entry = self.store.update(req.kind, hub, req.subresource, dry_run=dry_run)
        return Response(200, entry.encoded(req.version))

    def _patch(self, req: ResourceRequest, content_type: str, patch: Any, dry_run: bool, manager: str) -> Response:
        with self.store.cond:  # read-patch-write is atomic, as in the API server's guaranteed update
            current = self.store.require(req.kind, req.namespace, req.name)
            patched = apply_patch(current.at(req.version), content_type, patch)
            if not isinstance(patched, dict):
                raise ApiError(422, "the patch turned the object into something that is not a JSON object")
            self._check_type(req, patched)
            self._check_namespace(req, patched)
            if patched["metadata"].get("name") != req.name:
                raise ApiError(422, "metadata.name cannot be changed by a patch", "Invalid")
            self._validate(req, patched)
            hub = self._to_hub(req, patched)
            record_update(current.obj, hub, manager, req.kind.api_version(req.version), req.subresource)
            entry = self.store.update(req.kind, hub, req.subresource, dry_run=dry_run)
        return Response(200, entry.encoded(req.version))

    def _apply(self, req: ResourceRequest, body: bytes, dry_run: bool, manager: str, force: bool) -> Response:
        """Server-side apply (managed.py): creates the object when absent (201), else merges (200)."""
        if req.subresource:
            raise ApiError(415, "the double serves server-side apply on main resources only")
        try:
            config = yaml.safe_load(body.decode())
        except (yaml.YAMLError, UnicodeDecodeError) as e:
            raise ApiError(400, f"the apply configuration is not valid YAML or JSON: {e}")
        if not isinstance(config, dict):
            raise ApiError(400, "the apply configuration must be an object")
        if not config.get("apiVersion") or not config.get("kind"):
            raise ApiError(400, "apiVersion and kind must be set in an apply configuration")
        self._check_type(req, config)
        self._check_namespace(req, config)
        meta = config["metadata"]
        if meta.get("name") != req.name:
            raise ApiError(400, "the name of the object does not match the name on the URL")
        if meta.get("managedFields"):
            raise ApiError(400, "metadata.managedFields must be nil in an apply configuration")
        with self.store.cond:
            current = self.store.get(req.kind, req.namespace, req.name)
            live = current.at(req.version) if current else None
            wanted_rv = meta.pop("resourceVersion", None)
            if current and wanted_rv and wanted_rv != current.obj["metadata"]["resourceVersion"]:
                raise errors.conflict(req.kind, req.name)
            result = server_side_apply(live, config, manager, force, req.kind.api_version(req.version))
            self._validate(req, result)
            hub = self._to_hub(req, result)
            if current is None:
                entry = self.store.create(req.kind, hub, dry_run=dry_run)
                return Response(201, entry.encoded(req.version))
            hub["metadata"]["resourceVersion"] = current.obj["metadata"]["resourceVersion"]
            entry = self.store.update(req.kind, hub, dry_run=dry_run)
        return Response(200, entry.encoded(req.version))

    def _delete(self, req: ResourceRequest, options: Any, dry_run: bool) -> Response:
        options = options if isinstance(options, dict) else {}
        dry_run = dry_run or "All" in (options.get("dryRun") or [])
        preconditions = options.get("preconditions") or {}
        entry = self.store.delete(req.kind, req.namespace, req.name, dry_run=dry_run,
                                  precondition_rv=preconditions.get("resourceVersion"),
                                  precondition_uid=preconditions.get("uid"))
        if req.kind.kind == "Namespace" and not dry_run:
            self.store.delete_namespace_contents([k for k in self.registry.kinds if k.namespaced], req.name)
        if req.kind.delete_returns_object:
            return Response(200, entry.encoded(req.version))
        return _json(_success_status(req.kind, entry))

    def _delete_collection(self, req: ResourceRequest, dry_run: bool) -> Response:
        matches = self._matcher(req)
        deleted = []
        with self.store.cond:
            for entry in self.store.entries(req.kind, req.namespace or None):
                if matches(entry.obj):
                    ns, name = entry.key
                    deleted.append(self.store.delete(req.kind, ns, name, dry_run=dry_run))
        head = json.dumps({"apiVersion": req.kind.api_version(req.version), "kind": f"{req.kind.kind}List",
                           "metadata": {"resourceVersion": str(self.store.rv)}}, separators=(",", ":")).encode()
        return Response(200, head[:-1] + b',"items":[' + b",".join(e.encoded(req.version) for e in deleted) + b"]}")

    # --- watch

    def _watch(self, req: ResourceRequest, as_table: bool) -> Stream:
        matches = self._matcher(req)
        try:
            timeout = float(req.query.get("timeoutSeconds") or self.options.max_watch_seconds)
        except ValueError:
            raise ApiError(400, "timeoutSeconds must be a number")
        timeout = min(max(timeout, 0.0), self.options.max_watch_seconds)
        since = req.query.get("resourceVersion") or "0"
        if not since.isdigit():
            raise ApiError(400, f"resourceVersion must be a number, not {since!r}")
        return Stream(self._watch_events(req, matches, as_table, int(since), time.monotonic() + timeout))

    def _bookmark(self, req: ResourceRequest, rv: int, annotations: dict[str, str] | None = None) -> bytes:
        metadata: dict[str, Any] = {"resourceVersion": str(rv)}
        if annotations:
            metadata["annotations"] = annotations
        marker = {"kind": req.kind.kind, "apiVersion": req.kind.api_version(req.version), "metadata": metadata}
        return b'{"type":"BOOKMARK","object":' + json.dumps(marker, separators=(",", ":")).encode() + b"}\n"

    @staticmethod
    def _as_seen_through_selector(event: Event, matches) -> tuple[str, Entry] | None:
        """What a watch with a label/field selector reports for one change, as the API server's
        watch cache does (staging/src/k8s.io/apiserver/pkg/storage/cacher/cache_watcher.go,
        convertToWatchEvent): an object that starts matching is ADDED, one that stops matching is
        DELETED (its last matching state at the event's resourceVersion), others as they happened."""
        entry, prev = event.entry, event.prev
        if event.type == "ADDED":
            return ("ADDED", entry) if matches(entry.obj) else None
        if event.type == "DELETED":
            return ("DELETED", entry) if matches(prev.obj if prev is not None else entry.obj) else None
        now, before = matches(entry.obj), prev is not None and matches(prev.obj)
        if now:
            return ("MODIFIED" if before else "ADDED"), entry
        if before:
            gone = clone(prev.obj)
            gone["metadata"]["resourceVersion"] = str(event.rv)
            return "DELETED", Entry(entry.kind, gone, event.rv)
        return None

    def _encode_event(self, req: ResourceRequest, event_type: str, entry: Entry, as_table: bool) -> bytes:
        if as_table:
            obj = json.dumps(discovery.table([entry], req.version, req.query.get("includeObject", "Metadata"),
                                             {"resourceVersion": str(entry.rv)}), separators=(",", ":")).encode()
        else:
            obj = entry.encoded(req.version)
        return b'{"type":"' + event_type.encode() + b'","object":' + obj + b"}\n"

    def _watch_events(self, req: ResourceRequest, matches, as_table: bool, since: int,
                      deadline: float) -> Iterator[bytes]:
        namespace = req.namespace or None
        bookmarks = req.query.get("allowWatchBookmarks") == "true"
        if since == 0:  # "start at most recent": the current state as ADDED events, then changes
            with self.store.cond:
                since = self.store.rv
                current = self.store.entries(req.kind, namespace)
            for entry in current:
                if matches(entry.obj):
                    yield self._encode_event(req, "ADDED", entry, as_table)
            if req.query.get("sendInitialEvents") == "true":
                # Streaming lists (KEP-3157, kubectl >= 1.35's WatchListClient) wait for this
                # bookmark to know the initial state is complete.
                yield self._bookmark(req, since, {"k8s.io/initial-events-end": "true"})
        next_bookmark = time.monotonic() + self.options.bookmark_seconds
        while not self.stopping.is_set():
            try:
                events = self.store.events_after(since)
            except ApiError as e:
                yield b'{"type":"ERROR","object":' + json.dumps(e.status()).encode() + b"}\n"
                return
            for event in events:
                since = event.rv
                if event.entry.kind is req.kind and (namespace is None or event.entry.key[0] == namespace):
                    seen = self._as_seen_through_selector(event, matches)
                    if seen is not None:
                        yield self._encode_event(req, seen[0], seen[1], as_table)
            now = time.monotonic()
            remaining = deadline - now
            if bookmarks and (now >= next_bookmark or remaining <= 0):
                # "Watch bookmarks" (api-concepts): only the resourceVersion the watch has reached,
                # sent periodically and, as the watch cache does, before the watch's deadline; a
                # client re-watching from it does not replay or miss anything.
                yield self._bookmark(req, since)
                next_bookmark = now + self.options.bookmark_seconds
            if remaining <= 0:
                return
            with self.store.cond:
                if self.store.rv == since and not self.stopping.is_set():
                    wait = min(remaining, 1.0, max(next_bookmark - now, 0.0) if bookmarks else 1.0)
                    self.store.cond.wait(wait)
