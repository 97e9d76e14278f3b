"""Fetch, from a live cluster, what the pure models need.  The only module of this package that
does I/O (through kubectl_gpu.k8s); every list is paginated.

`explain_pod_live(api_client, namespace, pod_name)` is the entry point of `kubectl gpu explain POD`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, Sequence

from kubectl_gpu.collector import collector_paused
from kubectl_gpu.dra.facts import DEVICE_TAINT_RULE_VERSIONS, DRA_VERSIONS
from kubectl_gpu.inspect.dra_nodes import DEFAULT_DRA_NODE_LABELS, NodeLabel
from kubectl_gpu.inspect.legacy import LEGACY_TEXTS
from kubectl_gpu.k8s import (PLURALS, ApiError, Client, DRA_GROUP, NotFound, collection_path, get_object, list_objects,
                             object_path, preferred_dra_version, served_versions)

if TYPE_CHECKING:
    from kubectl_gpu.inspect.devices import DeviceKey, SliceDevice
    from kubectl_gpu.inspect.doctor import DoctorInputs  # loads every check: only doctor needs it
    from kubectl_gpu.inspect.holders import Holder
    from kubectl_gpu.k8s.lists import EachPage


Objects = list[dict[str, Any]]
# Pods that finished hold no GPU; the API server filters them so 10,000 completed Jobs cost nothing.
ACTIVE_PODS = "status.phase!=Succeeded,status.phase!=Failed"
_WORKERS = 4


class NothingToExplain(ValueError):
    """The pod has no DRA claims to explain; the message says what it uses instead."""


@dataclass(frozen=True)
class DraApi:
    """The resource.k8s.io version to read, chosen from what the cluster serves."""

    served: tuple[str, ...]
    version: str | None

    def path(self, plural: str, namespace: str | None = None) -> str:
        if self.version is None:
            raise ApiError(404, f"/apis/{DRA_GROUP}",
                           "the cluster serves no resource.k8s.io version this tool reads "
                           f"({', '.join(DRA_VERSIONS)}); DRA is not enabled on this cluster")
        return collection_path(DRA_GROUP, self.version, plural, namespace)


def discover_dra(api: Client) -> DraApi:
    served = served_versions(api, DRA_GROUP)
    return DraApi(served, preferred_dra_version(served))


@dataclass(frozen=True)
class Unreadable:
    """A list RBAC refused (HTTP 403): what was not seen, and which permission would show it.

    A user with only namespaced rights still gets the report of what they can read (as doctor
    skips the checks it cannot run), with one warning per refused list."""

    resource: str  # "resourceslices.resource.k8s.io", "pods"
    namespace: str | None  # None: the list was cluster-wide (cluster-scoped, or all namespaces)
    shows: str  # what the list would have added to the report
    fallback: str = ""  # what was read instead, e.g. the pods of one namespace

    def __str__(self) -> str:
        where = f'in namespace "{self.namespace}"' if self.namespace else "across the cluster"
        grant = (f"a Role granting list on {self.resource} in {self.namespace}" if self.namespace
                 else f"a ClusterRole granting list on {self.resource}")
        instead = f"; {self.fallback}" if self.fallback else ""
        return (f"forbidden to list {self.resource} {where} (HTTP 403), so this report lacks "
                f"{self.shows}{instead}; {grant} would show it")


# What each list adds to a report, for the warning when RBAC refuses it.
_SHOWS = {
    "nodes": "the GPU nodes and their device-plugin resources",
    "pods": "the pods holding GPUs",
    "resourceslices": "the DRA devices (GPUs, MIG devices) drivers publish",
    "resourceclaims": "which DRA devices are allocated, and to whom",
    "deviceclasses": "the cluster's DeviceClasses",
    "devicetaintrules": "the DeviceTaintRules that taint devices (KEP-5055)",
}


def _qualified(plural: str) -> str:
    return plural if plural in ("nodes", "pods") else f"{plural}.{DRA_GROUP}"


def _readable(plural: str, call: Callable[[], Objects], unreadable: list[Unreadable],
              namespace: str | None = None, fallback: Callable[[], Objects] | None = None,
              fallback_namespace: str | None = None) -> Callable[[], Objects]:
    """`call`, or on HTTP 403 what `fallback` (a narrower list) returns, or nothing; the refusal is
    recorded in `unreadable` either way."""
    def run() -> Objects:
        try:
            return call()
        except ApiError as exc:
            if exc.status != 403:
                raise
        got: Objects = []
        note = ""
        if fallback is not None:
            try:
                got = fallback()
                note = f'only namespace "{fallback_namespace}" was read'
            except ApiError as exc:
                if exc.status != 403:
                    raise
                unreadable.append(Unreadable(_qualified(plural), fallback_namespace, _SHOWS[plural]))
        unreadable.append(Unreadable(_qualified(plural), namespace, _SHOWS[plural], note))
        return got
    return run


def _parallel(calls: Mapping[str, Callable[[], Any]]) -> dict[str, Any]:
    return _Lists(calls).result()


class _Lists:
    """Independent lists read concurrently, their network waits overlapped; results keep their
    keys.  Started here, waited for in `result()`, so the caller can do other work (load the
    modules that draw the answer) while the server answers.  Their JSON is decoded with the cycle
    collector paused (see collector.py): 3x faster for 10,000 claims.

    At most _WORKERS threads take the calls in order, as a ThreadPoolExecutor would; plain threads
    because concurrent.futures loads logging (~5 ms of describe's start-up) for nothing used here.
    A call's exception is raised by `result()`, the first in key order, as a future's would be."""

    def __init__(self, calls: Mapping[str, Callable[[], Any]]) -> None:
        self._paused = collector_paused()
        self._paused.__enter__()
        self._keys = list(calls)
        self._waiting = iter(list(calls.items()))
        self._taking = threading.Lock()
        self._cancelled = False
        self._done = {key: threading.Event() for key in calls}
        self._results: dict[str, Any] = {}
        self._errors: dict[str, BaseException] = {}
        self._threads: list[threading.Thread] = []
        try:
            for _ in range(min(_WORKERS, len(calls))):
                thread = threading.Thread(target=self._work, name="kubectl-gpu-list")
                thread.start()
                self._threads.append(thread)
        except BaseException:
            self._abandon()
            raise

    def _work(self) -> None:
        while True:
            with self._taking:
                item = None if self._cancelled else next(self._waiting, None)
            if item is None:
                return
            key, call = item
            try:
                self._results[key] = call()
            except BaseException as exc:  # noqa: BLE001 - handed to result(), as a future holds it
                self._errors[key] = exc
            finally:
                self._done[key].set()

    def result(self) -> dict[str, Any]:
        try:
            for key in self._keys:
                self._done[key].wait()
                if key in self._errors:
                    raise self._errors[key]
        except BaseException:
            self._abandon()
            raise
        self._paused.__exit__(None, None, None)
        for thread in self._threads:  # every list is read: its threads end now, not at exit
            thread.join()
        return {key: self._results[key] for key in self._keys}

    def _abandon(self) -> None:
        # On an error or Ctrl-C, do not wait for the other lists (up to --request-timeout each);
        # those not started yet never start.
        with self._taking:
            self._cancelled = True
        self._paused.__exit__(None, None, None)


# ------------------------------------------------------------------ describe


@dataclass(frozen=True)
class ClusterObjects:
    nodes: Objects
    slices: Objects
    claims: Objects
    pods: Objects  # the running pods that may hold device-plugin GPUs (the others' pages are skipped)
    unreadable: tuple[Unreadable, ...]
    # Read from the slices and claims while the other lists went on (the claims page by page, each
    # while the server prepared the next): describe's model needs no second pass over them.
    devices: list[SliceDevice]  # the current devices of `slices` (inspect/devices.py)
    holders: dict[DeviceKey, list[Holder]]  # who holds each device, from `claims` (inspect/holders.py)


def fetch_cluster(api: Client, dra: DraApi, *, node_selector: str | None = None,
                  node_name: str | None = None, namespace: str | None = None) -> ClusterObjects:
    """Nodes (all, or those matching -l, or one), every ResourceSlice and ResourceClaim, and the
    pods still running (on `node_name` only, when given).  A list RBAC refuses is left empty and
    named in `unreadable`; pods and claims then fall back to `namespace` (the context's)."""
    return start_fetch_cluster(api, dra, node_selector=node_selector, node_name=node_name,
                               namespace=namespace)()


def start_fetch_cluster(api: Client, dra: DraApi, *, node_selector: str | None = None,
                        node_name: str | None = None, namespace: str | None = None
                        ) -> Callable[[], ClusterObjects]:
    """fetch_cluster's lists, started: the returned function waits for them."""
    node_fields = f"metadata.name={node_name}" if node_name else None
    pod_fields = ACTIVE_PODS + (f",spec.nodeName={node_name}" if node_name else "")
    slice_fields = f"spec.nodeName={node_name}" if node_name else None
    unreadable: list[Unreadable] = []

    def pods(where: str | None) -> Callable[[], Objects]:
        # Only pods holding device-plugin GPUs are read from them: a page naming no legacy
        # resource is not decoded (most pages of a large cluster).
        return lambda: list_objects(api, collection_path("", "v1", "pods", where), field_selector=pod_fields,
                                    mentioning=LEGACY_TEXTS)

    holders: dict[DeviceKey, list[Holder]] = {}

    # The modules that read devices and holders load on the lists' threads, after the requests left.
    def each_claims_page(claims: Objects, first: bool) -> None:
        from kubectl_gpu.inspect.holders import holders_by_device

        if first:  # the list (or its narrower fallback) began again
            holders.clear()
        holders_by_device(claims, holders)

    def slices_and_devices() -> tuple[Objects, list[SliceDevice]]:
        slices = _readable("resourceslices", lambda: _dra_list(api, dra, "resourceslices",
                                                               field_selector=slice_fields), unreadable)()
        from kubectl_gpu.inspect.devices import current_devices

        return slices, current_devices(slices)

    calls: dict[str, Callable[[], Any]] = {
        "nodes": _readable("nodes", lambda: list_objects(api, "/api/v1/nodes", label_selector=node_selector,
                                                         field_selector=node_fields), unreadable),
        "pods": _readable("pods", pods(None), unreadable, fallback=pods(namespace) if namespace else None,
                          fallback_namespace=namespace),
        "claims": _readable("resourceclaims", lambda: _dra_list(api, dra, "resourceclaims",
                                                                each_page=each_claims_page), unreadable,
                            fallback=(lambda: _dra_list(api, dra, "resourceclaims", namespace,
                                                        each_page=each_claims_page)) if namespace
                            else None, fallback_namespace=namespace),
        "slices": slices_and_devices,
    }
    lists = _Lists(calls)

    def finish() -> ClusterObjects:
        got = lists.result()
        if node_name and not got["nodes"] and not any(u.resource == "nodes" for u in unreadable):
            raise NotFound.named("/api/v1/nodes", f'node "{node_name}" not found')
        slices, devices = got["slices"]
        if not got["claims"]:
            holders.clear()  # refused, or no DRA: what a refused first reading left counts for nothing
        return ClusterObjects(got["nodes"], slices, got["claims"], got["pods"], tuple(unreadable), devices,
                              holders)
    return finish


def _dra_list(api: Client, dra: DraApi, plural: str, namespace: str | None = None,
              field_selector: str | None = None, each_page: EachPage | None = None) -> Objects:
    if dra.version is None:
        return []  # no DRA on this cluster: nothing published, nothing claimed
    return list_objects(api, dra.path(plural, namespace), field_selector=field_selector, each_page=each_page)


def fetch_pod(api: Client, namespace: str, name: str) -> dict[str, Any]:
    path = object_path("", "v1", "pods", name, namespace)
    pod = get_object(api, path)
    if pod is None:
        raise NotFound.named(path, f'pod "{name}" not found in namespace "{namespace}"')
    return pod


def scheduling_events(api: Client, pod: Mapping[str, Any]) -> Objects:
    """The pod's FailedScheduling events, selected as `kubectl describe pod` selects a pod's events
    (involvedObject kind, name, namespace and uid); none where RBAC refuses reading events."""
    meta = pod.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    fields = {"involvedObject.kind": "Pod", "involvedObject.name": meta.get("name"),
              "involvedObject.namespace": namespace, "involvedObject.uid": meta.get("uid"),
              "reason": "FailedScheduling"}
    try:
        return list_objects(api, collection_path("", "v1", "events", namespace),
                            field_selector=",".join(f"{k}={v}" for k, v in fields.items() if v))
    except ApiError as exc:
        if exc.forbidden:
            return []
        raise


def list_pods(api: Client, namespace: str | None, label_selector: str | None) -> Objects:
    return list_objects(api, collection_path("", "v1", "pods", namespace), label_selector=label_selector)


def fetch_claim(api: Client, dra: DraApi, namespace: str, name: str) -> dict[str, Any]:
    path = f"{dra.path('resourceclaims', namespace)}/{name}"
    claim = get_object(api, path)
    if claim is None:
        raise NotFound.named(path, f'resourceclaim "{name}" not found in namespace "{namespace}"')
    claim.setdefault("apiVersion", f"{DRA_GROUP}/{dra.version}")
    claim.setdefault("kind", "ResourceClaim")
    return claim


@dataclass(frozen=True)
class DraObjects:
    slices: Objects
    classes: Objects
    claims: Objects  # every ResourceClaim in the cluster: allocations decide which devices are free
    unreadable: tuple[Unreadable, ...] = ()
    nodes: Objects = ()  # to tell which nodes count GPUs twice (never suggested by explain)
    taint_rules: Objects = ()  # DeviceTaintRules (KEP-5055)

    def double_counted_nodes(self, dra_labels: tuple[NodeLabel, ...] = DEFAULT_DRA_NODE_LABELS) -> frozenset[str]:
        """Nodes doctor flags for double counting (DRA driver and device plugin both offering GPUs)."""
        from kubectl_gpu.inspect.devices import current_devices
        from kubectl_gpu.inspect.double_counting import double_counting_finding
        from kubectl_gpu.inspect.dra_nodes import matching_label
        from kubectl_gpu.inspect.hami_device_plugin import registered_gpus
        from kubectl_gpu.inspect.legacy import node_legacy_resources

        by_node: dict[str | None, list[Any]] = {}
        for device in current_devices(self.slices):
            by_node.setdefault(device.node, []).append(device)
        flagged = set()
        for node in self.nodes:
            metadata = node.get("metadata") or {}
            name = str(metadata.get("name") or "")
            label = matching_label(dict(metadata.get("labels") or {}), dra_labels)
            if double_counting_finding(name, label, node_legacy_resources(node), (), by_node.get(name, ()),
                                       registered_gpus(node)):
                flagged.add(name)
        return frozenset(flagged)


def fetch_dra(api: Client, dra: DraApi, namespace: str | None = None) -> DraObjects:
    """Every ResourceSlice, DeviceClass, ResourceClaim, DeviceTaintRule and Node.  A list RBAC
    refuses is left empty and named in `unreadable`; claims then fall back to `namespace`."""
    unreadable: list[Unreadable] = []
    got = _parallel({
        "slices": _readable("resourceslices", lambda: _dra_list(api, dra, "resourceslices"), unreadable),
        "classes": _readable("deviceclasses", lambda: _dra_list(api, dra, "deviceclasses"), unreadable),
        "claims": _readable("resourceclaims", lambda: _dra_list(api, dra, "resourceclaims"), unreadable,
                            fallback=(lambda: _dra_list(api, dra, "resourceclaims", namespace)) if namespace
                            else None, fallback_namespace=namespace),
        "nodes": _readable("nodes", lambda: list_objects(api, "/api/v1/nodes"), unreadable),
        "rules": _readable("devicetaintrules", lambda: list_taint_rules(api, dra.served), unreadable),
    })
    return DraObjects(got["slices"], got["classes"], got["claims"], tuple(unreadable), got["nodes"], got["rules"])


def list_taint_rules(api: Client, served: Sequence[str]) -> Objects:
    """DeviceTaintRules at the newest version that serves them (not always the preferred one:
    1.36 serves them at v1beta2 beside v1's other kinds); none where no version does."""
    for version, _ in DEVICE_TAINT_RULE_VERSIONS:
        if version not in served:
            continue
        try:
            rules = list_objects(api, collection_path(DRA_GROUP, version, "devicetaintrules"))
        except ApiError as exc:
            if exc.status == 404:
                continue  # this version serves no DeviceTaintRule (or the alpha API is off)
            raise
        for rule in rules:
            rule.setdefault("apiVersion", f"{DRA_GROUP}/{version}")
            rule.setdefault("kind", "DeviceTaintRule")
        return rules
    return []


# ------------------------------------------------------------------- explain


def pod_claim_objects(api: Client, dra: DraApi, pod: Mapping[str, Any],
                      cluster_claims: Objects) -> Objects:
    """What the scheduler allocates for a pod: its ResourceClaims when they exist, else the
    templates they will be generated from."""
    metadata = pod.get("metadata") or {}
    namespace = str(metadata.get("namespace") or "")
    by_name = {(c.get("metadata") or {}).get("name"): c for c in cluster_claims
               if (c.get("metadata") or {}).get("namespace") == namespace}
    generated = {s.get("name"): s.get("resourceClaimName")
                 for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()}
    objects: Objects = []
    for entry in (pod.get("spec") or {}).get("resourceClaims") or ():
        claim_name = entry.get("resourceClaimName") or generated.get(entry.get("name"))
        if claim_name and claim_name in by_name:
            objects.append(by_name[claim_name])
            continue
        if claim_name:
            raise NotFound.named(f"{dra.path('resourceclaims', namespace)}/{claim_name}",
                                 f'pod {namespace}/{metadata.get("name")} uses resourceclaim '
                                 f'"{claim_name}", which does not exist; create it, or fix '
                                 f"spec.resourceClaims[{entry.get('name')}]")
        template_name = entry.get("resourceClaimTemplateName")
        template_path = f"{dra.path('resourceclaimtemplates', namespace)}/{template_name}"
        template = get_object(api, template_path)
        if template is None:
            raise NotFound.named(template_path,
                                 f'pod {namespace}/{metadata.get("name")} uses resourceclaimtemplate '
                                 f'"{template_name}", which does not exist in namespace "{namespace}"')
        template.setdefault("apiVersion", f"{DRA_GROUP}/{dra.version}")
        template.setdefault("kind", "ResourceClaimTemplate")
        objects.append(template)
    extended = ((pod.get("status") or {}).get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
    if extended and extended in by_name:
        objects.append(by_name[extended])
    return objects


def explain_pod_objects(pod: Mapping[str, Any], claim_objects: Objects, dra_objects: DraObjects,
                        gates: GatesFor | None = None, node: str | None = None) -> Any:
    """Run the explain engine over the pod's claims (pure; the objects are already fetched)."""
    if not claim_objects:
        metadata = pod.get("metadata") or {}
        raise NothingToExplain(
            f"pod {metadata.get('namespace')}/{metadata.get('name')} has no DRA resource claims to "
            "explain (describe it to see its legacy GPU requests; `kubectl gpu migrate` converts them)")
    return explain_claims(claim_objects, dra_objects, gates, one_pod=True, node=node)


class CompileProfile(Protocol):
    """What explain takes from the cluster profile (kubectl_gpu.cluster.ClusterProfile): the DRA
    feature gates to compile claims under, and the devices of the fetched slices' current
    generations, which the profile built to prove gates (explain reuses them, not builds them again)."""

    @property
    def feature_gates(self) -> frozenset[str]: ...

    @property
    def devices(self) -> Sequence[Any]: ...


# The cluster profile of what was fetched (the caller reads it); None: the CEL package's default gates.
GatesFor = Callable[[DraObjects], "CompileProfile | None"]


def explain_claims(claim_objects: Objects, dra_objects: DraObjects, gates: GatesFor | None = None,
                   one_pod: bool = False, node: str | None = None, pods: Sequence[Sequence[int]] = ()) -> Any:
    """Explain these claims against the cluster's slices and classes, every other claim's
    allocation telling free devices from taken (pure; the objects are already fetched);
    ``one_pod``: they are one pod's, allocated together; ``pods``: the positions of each pod's
    claims, each pod's allocated together; ``node``: only on that node (its labels from the
    cluster's Node; unknown when it cannot be read: every node selector is then taken to match it)."""
    from kubectl_gpu.explain import allocator_nodes, explain_objects

    own = {(c.get("metadata") or {}).get("uid") for c in claim_objects}
    others = [c for c in dra_objects.claims if (c.get("metadata") or {}).get("uid") not in own]
    profile = gates(dra_objects) if gates is not None else None
    return explain_objects(claims=claim_objects, slices=dra_objects.slices,
                           classes=dra_objects.classes, allocated_claims=others,
                           avoid_nodes=dra_objects.double_counted_nodes(),
                           gates=profile.feature_gates if profile is not None else None,
                           slice_facts=profile.slice_facts if profile is not None else None, one_pod=one_pod,
                           pods=pods, nodes=allocator_nodes(dra_objects.nodes, node) if node else None,
                           taint_rules=dra_objects.taint_rules)


def explain_pod_live(api_client: Client, namespace: str, pod_name: str, gates: GatesFor | None = None,
                     node: str | None = None) -> Any:
    """Explain, as the scheduler sees it, how each device request of a pod's claims matches the
    cluster's devices.  Returns kubectl_gpu.explain.Explanation.

    Raises NotFound (kubectl_gpu.k8s: pod, claim or template missing), NothingToExplain (no DRA
    claims), ApiError.
    """
    dra = discover_dra(api_client)
    got = _parallel({"pod": lambda: fetch_pod(api_client, namespace, pod_name),
                     "dra": lambda: fetch_dra(api_client, dra)})
    pod, dra_objects = got["pod"], got["dra"]
    claims = pod_claim_objects(api_client, dra, pod, dra_objects.claims)
    return explain_pod_objects(pod, claims, dra_objects, gates, node)


def explain_claim_live(api_client: Client, namespace: str, name: str, gates: GatesFor | None = None,
                       node: str | None = None) -> Any:
    """`explain claim/NAME`: one ResourceClaim against the cluster's devices."""
    dra = discover_dra(api_client)
    got = _parallel({"claim": lambda: fetch_claim(api_client, dra, namespace, name),
                     "dra": lambda: fetch_dra(api_client, dra)})
    return explain_claims([got["claim"]], got["dra"], gates, node=node)


def explain_pods_live(api_client: Client, namespace: str | None, label_selector: str | None,
                      gates: GatesFor | None = None, node: str | None = None) -> Any:
    """`explain -A` / `explain -l SELECTOR`: the claims of every pod that has DRA claims, each
    claim once (pods sharing a ResourceClaim share its answer), each pod's claims allocated
    together on one node as the scheduler allocates them."""
    dra = discover_dra(api_client)
    got = _parallel({"pods": lambda: list_pods(api_client, namespace, label_selector),
                     "dra": lambda: fetch_dra(api_client, dra)})
    objects: Objects = []
    position: dict[tuple[str, str, str], int] = {}
    pods: list[list[int]] = []  # each pod's claims, by position in objects: allocated together
    for pod in got["pods"]:
        if not (pod.get("spec") or {}).get("resourceClaims"):
            continue
        members = []
        for obj in pod_claim_objects(api_client, dra, pod, got["dra"].claims):
            meta = obj.get("metadata") or {}
            key = (str(obj.get("kind")), str(meta.get("namespace")), str(meta.get("name")))
            if key not in position:
                position[key] = len(objects)
                objects.append(obj)
            members.append(position[key])
        pods.append(members)
    if not objects:
        where = f'namespace "{namespace}"' if namespace else "any namespace"
        raise NothingToExplain(f"no pod in {where}" + (f" matching -l {label_selector}" if label_selector else "")
                               + " has DRA resource claims to explain")
    return explain_claims(objects, got["dra"], gates, node=node, pods=pods)


# -------------------------------------------------------------------- doctor

WORKLOADS = (("apps", "deployments"), ("apps", "statefulsets"), ("apps", "daemonsets"),
             ("apps", "replicasets"), ("batch", "jobs"), ("batch", "cronjobs"))


def fetch_doctor_inputs(api: Client, namespace: str | None = None,
                        dra_node_labels: tuple[NodeLabel, ...] = DEFAULT_DRA_NODE_LABELS,
                        node_selector: str | None = None) -> DoctorInputs:
    """Everything doctor checks.  A list the user may not read (RBAC) is recorded as unavailable
    so its checks are reported as skipped instead of passing silently."""
    unavailable: dict[str, str] = {}
    try:
        dra = discover_dra(api)
    except ApiError as exc:
        if not exc.forbidden:
            raise
        dra = DraApi((), None)
        unavailable["discovery"] = str(exc)

    def guarded(resource: str, call: Callable[[], Objects]) -> Callable[[], Objects | None]:
        def run() -> Objects | None:
            try:
                return call()
            except ApiError as exc:
                if exc.forbidden:
                    unavailable[resource] = f"HTTP {exc.status}: {exc.message}"
                    return None
                if exc.not_found:
                    return None  # the cluster does not serve that API at all
                raise
        return run

    def core(plural: str, namespaced: bool = True, field_selector: str | None = None,
             label_selector: str | None = None) -> Callable[[], Objects]:
        path = collection_path("", "v1", plural, namespace if namespaced else None)
        return lambda: list_objects(api, path, field_selector=field_selector, label_selector=label_selector)

    def group(name: str, version: str, plural: str, namespaced: bool = True) -> Callable[[], Objects]:
        path = collection_path(name, version, plural, namespace if namespaced else None)
        return lambda: list_objects(api, path)

    def workloads() -> Objects:
        found: Objects = []
        for api_group, plural in WORKLOADS:
            try:
                found.extend(group(api_group, "v1", plural)())
            except ApiError as exc:
                if not exc.not_found:
                    raise
        return found

    calls = {
        "nodes": guarded("nodes", core("nodes", namespaced=False, label_selector=node_selector)),
        "pods": guarded("pods", core("pods", field_selector=ACTIVE_PODS)),
        "services": guarded("services", core("services", namespaced=False)),
        "endpoints": guarded("endpoints", core("endpoints", namespaced=False)),
        "endpointslices": guarded("endpointslices", group("discovery.k8s.io", "v1", "endpointslices",
                                                          namespaced=False)),
        "workloads": guarded("workloads", workloads),
        "resourcequotas": guarded("resourcequotas", core(PLURALS["ResourceQuota"])),
        "mutatingwebhookconfigurations": guarded("mutatingwebhookconfigurations", group(
            "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", namespaced=False)),
        "validatingwebhookconfigurations": guarded("validatingwebhookconfigurations", group(
            "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", namespaced=False)),
        "resourceslices": guarded("resourceslices", lambda: _dra_list(api, dra, "resourceslices")),
        "deviceclasses": guarded("deviceclasses", lambda: _dra_list(api, dra, "deviceclasses")),
        "resourceclaims": guarded("resourceclaims", lambda: _dra_list(api, dra, "resourceclaims", namespace)),
        "resourceclaimtemplates": guarded("resourceclaimtemplates",
                                          lambda: _dra_list(api, dra, "resourceclaimtemplates", namespace)),
    }
    got = _parallel(calls)

    def objects(key: str) -> tuple[dict[str, Any], ...]:
        return tuple(got[key] or ())

    from kubectl_gpu.inspect.doctor import DoctorInputs

    return DoctorInputs(
        served_dra_versions=dra.served,
        nodes=objects("nodes"),
        resource_slices=objects("resourceslices"),
        device_classes=objects("deviceclasses"),
        resource_claims=objects("resourceclaims"),
        resource_claim_templates=objects("resourceclaimtemplates"),
        pods=objects("pods"),
        workloads=objects("workloads"),
        resource_quotas=objects("resourcequotas"),
        mutating_webhooks=objects("mutatingwebhookconfigurations"),
        validating_webhooks=objects("validatingwebhookconfigurations"),
        services=objects("services"),
        endpoint_slices=None if got["endpointslices"] is None else tuple(got["endpointslices"]),
        endpoints=objects("endpoints"),
        dra_node_labels=dra_node_labels,
        unavailable=dict(unavailable),
    )


__all__ = ["ClusterObjects", "DraApi", "DraObjects", "NothingToExplain", "Unreadable", "discover_dra",
           "explain_claim_live", "explain_claims", "explain_pod_live", "explain_pods_live", "fetch_claim", "fetch_cluster", "start_fetch_cluster", "fetch_doctor_inputs", "fetch_dra",
           "fetch_pod", "list_pods", "pod_claim_objects"]
