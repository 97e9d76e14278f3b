"""``K8sDouble``: start the fake API server and drive it from tests."""
from __future__ import annotations

import os
import random
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from .api import Api, ApiOptions
from .controllers import Controllers
from .conversion import clone, convert
from .faults import TIMEOUT, Fault, FaultPlan, RecordedRequest
from .kinds import KINDS, Registry, ResourceKind, UnknownResource
from .quota import QuotaAdmission
from .server import DoubleHTTPServer, serve_in_thread, wait_until_gone
from .store import Store

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class K8sDouble:
    """An HTTP Kubernetes API server for tests, on 127.0.0.1 and an ephemeral port.

    >>> with K8sDouble() as api:
    ...     api.seed({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    ...     CoreV1Api(api.api_client()).list_node()
    """

    def __init__(self, *, kubernetes_version: str = "1.34", validate: bool = True,
                 disabled_group_versions: Iterable[str] = (), default_namespaces: Iterable[str] = DEFAULT_NAMESPACES,
                 max_watch_seconds: float = 30.0, token: str | None = None, random_seed: int | None = None,
                 event_log_size: int = 100_000, controllers: bool = False, bookmark_seconds: float = 60.0,
                 extra_kinds: Iterable[ResourceKind] = ()):
        self.registry = Registry((*KINDS, *extra_kinds), disabled_group_versions)
        self.store = Store(random.Random(random_seed), event_log_size=event_log_size)
        self.controllers = Controllers(self.registry, self.store) if controllers else None
        self.token = token
        self._stopping = threading.Event()
        self._options = ApiOptions(kubernetes_version, validate, max_watch_seconds, bookmark_seconds)
        self.quota = QuotaAdmission(self.registry, self.store, lambda: self._options.feature_gates)
        self.store.admit = self.quota.admit
        self.store.changed = self.quota.refresh
        self._plan = FaultPlan()
        self._server: DoubleHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._clients: list[Any] = []
        self._tmpdir: str | None = None
        self._default_namespaces = tuple(default_namespaces)

    # ------------------------------------------------------------- lifecycle

    def start(self) -> K8sDouble:
        if self._server is not None:
            return self
        api = Api(self.registry, self.store, self._options, self._stopping,
                  self.controllers.reconcile if self.controllers else None)
        self._server = DoubleHTTPServer(api, self._plan, self._stopping, lambda: self.token)
        self._options.address = f"127.0.0.1:{self.port}"
        for name in self._default_namespaces:
            self.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        self._thread = serve_in_thread(self._server)
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._stopping.set()
        with self.store.cond:
            self.store.cond.notify_all()
        for client in self._clients:
            client.close()
        self._clients.clear()
        self._server.shutdown()
        self._server.drop_connections()
        self._server.server_close()
        if self._thread is not None:
            wait_until_gone(self._thread)
        self._server = None
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def __enter__(self) -> K8sDouble:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the double is not started: call start() or use it as a context manager")
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # --------------------------------------------------------------- clients

    def api_client(self, **configuration: Any):
        """A ``kubernetes.client.ApiClient`` talking to the double; closed when the double stops.

        Keyword arguments set attributes of the ``kubernetes.client.Configuration`` (e.g. ``retries``).
        """
        from kubernetes import client

        config = client.Configuration()
        config.host = self.url
        if self.token:
            config.api_key = {"authorization": self.token}
            config.api_key_prefix = {"authorization": "Bearer"}
        for key, value in configuration.items():
            if not hasattr(config, key):
                raise AttributeError(f"kubernetes.client.Configuration has no attribute {key!r}")
            setattr(config, key, value)
        api_client = client.ApiClient(config)
        self._clients.append(api_client)
        return api_client

    def dynamic_client(self, **configuration: Any):
        """A ``kubernetes.dynamic.DynamicClient`` whose discovery cache lives with this double.

        Its default cache file is keyed by host:port in the system temp dir, so a later double on a
        reused port would read another run's discovery; this one is removed when the double stops.
        """
        from kubernetes.dynamic import DynamicClient

        return DynamicClient(self.api_client(**configuration),
                             cache_file=str(self._workdir() / f"dynamic-discovery-{len(self._clients)}.json"))

    def _workdir(self) -> Path:
        if self._tmpdir is None:
            self._tmpdir = tempfile.mkdtemp(prefix="k8s-double-")
        return Path(self._tmpdir)

    def kubeconfig_path(self, namespace: str = "default", context: str = "k8s-double") -> str:
        """Write a kubeconfig for this double (removed when it stops) and return its path."""
        config = {
            "apiVersion": "v1", "kind": "Config", "preferences": {},
            "clusters": [{"name": "k8s-double", "cluster": {"server": self.url}}],
            "users": [{"name": "k8s-double", "user": {"token": self.token or "k8s-double"}}],
            "contexts": [{"name": context, "context": {"cluster": "k8s-double", "user": "k8s-double",
                                                       "namespace": namespace}}],
            "current-context": context,
        }
        path = self._workdir() / f"kubeconfig-{context}-{namespace}.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return str(path)

    def kubectl_env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """Environment for a kubectl subprocess: KUBECONFIG, plus a private discovery cache dir."""
        env = dict(os.environ if base is None else base)
        env["KUBECONFIG"] = self.kubeconfig_path()
        env["KUBECACHEDIR"] = str(self._workdir() / "kube-cache")
        return env

    def kubectl(self, *args: str, input: str | None = None, check: bool = True,
                timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run the real kubectl against the double (``--validate=false`` is yours to pass)."""
        kubectl = shutil.which("kubectl")
        if kubectl is None:
            raise FileNotFoundError("kubectl is not on PATH")
        return subprocess.run([kubectl, *args], input=input, capture_output=True, text=True, check=check,
                              env=self.kubectl_env(), timeout=timeout)

    # ------------------------------------------------------------- the store

    def serves(self, doc: Mapping[str, Any]) -> bool:
        """True when ``doc``'s apiVersion and kind are served (``kind: List`` when all items are)."""
        if doc.get("kind") == "List" and doc.get("apiVersion") == "v1":
            return all(self.serves(item) for item in doc.get("items") or [])
        try:
            self.registry.by_type(str(doc.get("apiVersion")), str(doc.get("kind")))
            return True
        except UnknownResource:
            return False

    def seed(self, *docs: Any, replace: bool = False) -> list[dict]:
        """Store objects directly (no validation, no request log, no faults); returns them as stored
        (read-only views of the store: copy before changing them).

        Accepts dicts, iterables of dicts (e.g. ``yaml.safe_load_all``) and ``kind: List``. ``None``
        documents are skipped. Seeded objects keep a given uid/creationTimestamp/generation; namespaced
        objects without a namespace go to ``default``. Existing names raise unless ``replace``.
        """
        stored = []
        for doc in _flatten(docs):
            kind = self.registry.by_type(str(doc.get("apiVersion")), str(doc.get("kind")))
            version = doc["apiVersion"].rpartition("/")[2]
            obj = convert(doc, kind, version, kind.storage_version)
            meta = obj.setdefault("metadata", {})
            if not meta.get("name") and not meta.get("generateName"):
                raise ValueError(f"cannot seed a {kind.kind} without metadata.name or generateName")
            if kind.namespaced:
                meta.setdefault("namespace", "default")
            meta.pop("resourceVersion", None)
            existing = self.store.get(kind, meta.get("namespace", ""), meta.get("name", ""))
            if existing is not None and replace:
                entry = self.store.update(kind, clone(obj), subresource="", force=True)
                if "status" in kind.subresources and "status" in obj:
                    entry = self.store.update(kind, obj, subresource="status", force=True)
            else:
                entry = self.store.create(kind, obj, keep_identity=True)
            stored.append(entry.obj)
        if self.controllers is not None:
            self.controllers.reconcile()
        return stored

    def set_pod_log(self, name: str, text: str, namespace: str = "default") -> None:
        """What GET pods/NAME/log answers (the double runs no containers: a test plays the kubelet)."""
        self._options.pod_logs[(namespace, name)] = text

    def set_feature_gates(self, gates: dict[str, bool], stage: str = "BETA") -> None:
        """The gates GET /metrics reports as kube-apiserver's (kubernetes_feature_enabled)."""
        self._options.feature_gates.update({(name, stage): on for name, on in gates.items()})

    def forbid_path(self, path: str) -> None:
        """GET ``path`` (a non-resource URL such as /metrics) answers 403, as RBAC does without a
        nonResourceURLs rule for it."""
        self._options.forbidden_paths.add(path)

    def seed_yaml(self, text: str, replace: bool = False) -> list[dict]:
        return self.seed(list(yaml.safe_load_all(text)), replace=replace)

    def get(self, kind: str, name: str, namespace: str = "default", version: str | None = None) -> dict | None:
        """The stored object (a copy) at ``version`` (default: storage version), or None."""
        resource = self.registry.resolve(kind)
        entry = self.store.get(resource, namespace, name)
        return None if entry is None else entry.at(version or resource.storage_version)

    def list(self, kind: str, namespace: str | None = None, version: str | None = None) -> list[dict]:
        """Stored objects (copies) sorted by namespace and name; ``namespace=None`` means all."""
        resource = self.registry.resolve(kind)
        return [e.at(version or resource.storage_version) for e in self.store.entries(resource, namespace)]

    def delete(self, kind: str, name: str, namespace: str = "default") -> None:
        """Delete like the API would (a DELETED watch event; a namespace takes its contents along)."""
        resource = self.registry.resolve(kind)
        self.store.delete(resource, namespace, name)
        if resource.kind == "Namespace":
            self.store.delete_namespace_contents([k for k in self.registry.kinds if k.namespaced], name)

    def compact(self) -> None:
        """Compact the event history now, as etcd does every five minutes: a watch (or a
        reflector re-watching) from any earlier resourceVersion gets 410 Gone and must list again."""
        self.store.compact()

    def clear(self) -> None:
        """Forget every object (default namespaces come back), fault and logged request."""
        self.store.clear()
        self._plan.clear()
        self._plan.reset_requests()
        for name in self._default_namespaces:
            self.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    def reconcile(self) -> None:
        """Run the simulated disruption and rollout controllers now (needs ``controllers=True``)."""
        if self.controllers is None:
            raise RuntimeError("start the double with K8sDouble(controllers=True) to simulate controllers")
        self.controllers.reconcile()

    def stall(self, kind: str, name: str, namespace: str = "default", stalled: bool = True) -> None:
        """Hold (or release) a workload's rollout: its status stays unready, as when pods crash-loop."""
        if self.controllers is None:
            raise RuntimeError("start the double with K8sDouble(controllers=True) to simulate rollouts")
        key = (self.registry.resolve(kind).kind, namespace, name)
        (self.controllers.stalled.add if stalled else self.controllers.stalled.discard)(key)
        self.controllers.reconcile()

    @property
    def resource_version(self) -> int:
        return self.store.rv

    def resource(self, kind: str) -> ResourceKind:
        return self.registry.resolve(kind)

    # ------------------------------------------------- requests and faults

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every API request (discovery excluded) in arrival order."""
        return self._plan.requests()

    def count(self, verb: str | None = None, resource: str | None = None, namespace: str | None = None,
              name: str | None = None) -> int:
        """Requests so far matching all given criteria; ``resource`` is ``pods`` or ``nodes/status``."""
        return self._plan.count(verb=verb, resource=resource, namespace=namespace, name=name)

    def reset_requests(self) -> None:
        self._plan.reset_requests()

    def fail(self, verb: str | None = None, resource: str | None = None, *, status: int | str = 500,
             times: int | None = 1, seconds: float | None = None, message: str | None = None,
             reason: str | None = None, namespace: str | None = None, name: str | None = None,
             continuing: bool | None = None) -> Fault:
        """Make matching requests fail: ``status`` is an HTTP error code answered as a Status, or
        ``"timeout"`` (hold the request ``seconds``, default 10, then drop the connection unanswered).
        ``times=None`` fails every matching request; ``continuing=True`` only a list's later pages
        (requests with a continue token). Returns the fault; its ``hits`` counts uses."""
        if seconds is None:
            seconds = 10.0 if status == TIMEOUT else 0.0
        self._check_resource(resource)
        return self._plan.add(Fault(verb, resource, namespace, name, status, seconds, times, message, reason,
                                    continuing))

    def delay(self, seconds: float, verb: str | None = None, resource: str | None = None, *,
              times: int | None = None, namespace: str | None = None, name: str | None = None) -> Fault:
        """Add latency to matching requests (every one unless ``times``)."""
        self._check_resource(resource)
        return self._plan.add(Fault(verb, resource, namespace, name, None, seconds, times))

    def clear_faults(self) -> None:
        self._plan.clear()

    def _check_resource(self, resource: str | None) -> None:
        if resource is None:
            return
        plural, _, sub = resource.partition("/")
        known = {k.plural: k for k in self.registry.kinds}
        if plural not in known or (sub and sub not in known[plural].subresources):
            raise ValueError(f"unknown resource {resource!r}: use a plural such as 'pods' or 'nodes/status'")


def _flatten(docs: Iterable[Any]) -> Iterable[dict]:
    for doc in docs:
        if doc is None:
            continue
        if isinstance(doc, Mapping):
            if doc.get("kind") == "List" and doc.get("apiVersion") == "v1":
                yield from _flatten(doc.get("items") or [])
            else:
                yield dict(doc)
        elif isinstance(doc, Iterable) and not isinstance(doc, (str, bytes)):
            yield from _flatten(doc)
        else:
            raise TypeError(f"cannot seed {type(doc).__name__}: pass dicts, lists of dicts or YAML documents")
