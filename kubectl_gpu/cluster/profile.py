"""The target cluster, as translation needs to know it: one ``ClusterProfile``.

What a claim may look like depends on the cluster it is for: which ``resource.k8s.io`` version the
API server serves (1.32 v1beta1, 1.33 v1beta2, 1.34+ v1), which DRA feature gates are on
(consumable capacity, prioritized lists, extended resources), and which devices the drivers
publish (ResourceSlices) under which DeviceClasses.  migrate, the webhook and explain all read the
same profile, from the live cluster or from files (``kubectl get resourceslices,deviceclasses
-o yaml``).

A profile's gates start from upstream's defaults for its Kubernetes version (kubectl_gpu.dra.gates).
Read live, kube-apiserver's own ``/metrics`` replaces them where it is allowed (RBAC: ``get`` on the
nonResourceURL ``/metrics``): component-base records every gate as the gauge
``kubernetes_feature_enabled{name="...",stage="..."} 1|0`` (staging/src/k8s.io/component-base/metrics/
prometheus/feature/metrics.go, RecordFeatureInfo; since 1.26, kubernetes#112690).  Those are the API
server's gates; a gate the scheduler also reads is assumed set alike.  Then what the served objects
prove: the API server drops ``allowMultipleAllocations`` from a ResourceSlice while
DRAConsumableCapacity is off, so a slice that carries it proves the gate on.  Explicit overrides
(``--feature-gates``) win over all.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubectl_gpu.dra import hami
from kubectl_gpu.dra.devices import Device, SliceFacts, current_slices, is_resource_slice, read_slice
from kubectl_gpu.dra.facts import DRA_VERSION_SINCE, DRA_VERSIONS, served_dra_versions
from kubectl_gpu.dra.gates import CONSUMABLE_CAPACITY, DRA_GATES, SUPPORTED_MINORS, default_gates, kubernetes_minor
from kubectl_gpu.core.constants import DRA_GROUP, NVIDIA_DRIVER

if TYPE_CHECKING:
    # Imported where used: ApiVersion's module is the translation's data model (kubectl_gpu.core.model,
    # its enums and dataclasses: 24M instructions), which explain with a profile read from files never needs.
    from kubectl_gpu.core import ApiVersion



class ProfileError(ValueError):
    """The profile cannot be read; the message says what to change."""


@dataclass(frozen=True, eq=False)  # compared and cached by identity: one profile, one answer
class ClusterProfile:
    source: str  # where it was read: "cluster https://...", "files a.yaml, slices/"
    kubernetes_minor: int | None  # 34 for 1.34; None when unknown
    served_versions: tuple[str, ...]  # resource.k8s.io versions the API server serves, newest first
    feature_gates: frozenset[str]  # DRA gates taken as on
    gates_source: str  # how the gates were decided, for reports
    device_classes: tuple[Mapping[str, Any], ...] = ()
    resource_slices: tuple[Mapping[str, Any], ...] = ()
    # Nodes, when the profile was given them: their GFD labels say where the device plugin shares GPUs
    # (cluster/shared_gpus.py), so where nvidia.com/gpu was a slot: part of `revision` through what
    # that reading depends on (shared_gpus.sharing_identity), not their resourceVersions (heartbeats).
    nodes: tuple[Mapping[str, Any], ...] = ()

    @functools.cached_property
    def revision(self) -> str:
        """A short content identity: caches keyed by it never mix answers for two different
        clusters.  Computed when asked (the webhook's caches): without resourceVersions it hashes
        every object, a fifth of `explain -f --slices`, which never asks."""
        from .shared_gpus import sharing_identity  # on first use: only the webhook's caches ask

        return _revision(self.kubernetes_minor, self.served_versions, self.feature_gates, self.device_classes,
                         self.resource_slices, sharing_identity(self.nodes))

    @property
    def api_version(self) -> ApiVersion | None:
        """The newest resource.k8s.io version the cluster serves and kubectl-gpu writes."""
        from kubectl_gpu.core import ApiVersion  # on first use: see the imports at the top

        for version in DRA_VERSIONS:
            if version in self.served_versions:
                return ApiVersion.parse(version)
        return None

    def gate(self, name: str) -> bool:
        return name in self.feature_gates

    @functools.cached_property
    def slice_facts(self) -> tuple[SliceFacts, ...]:
        """The newest generation of each pool's slices, read for the allocator."""
        return tuple(read_slice(slice_obj) for slice_obj in current_slices(self.resource_slices))

    @functools.cached_property
    def devices(self) -> tuple[Device, ...]:
        """Every device of the newest generation of each pool (what the scheduler considers)."""
        return tuple(device for facts in self.slice_facts for device in facts.devices)

    def mig_profiles(self) -> tuple[str, ...]:
        """The MIG profiles NVIDIA's driver publishes here (its `profile` attribute)."""
        found = {d.attribute("profile") for d in self.devices
                 if d.driver == NVIDIA_DRIVER and d.attribute("type") == "mig"}
        return tuple(sorted(p for p in found if isinstance(p, str)))

    def shareable_devices(self, driver: str) -> tuple[Device, ...]:
        """Devices of ``driver`` that accept several claims at once (consumable capacity)."""
        return tuple(d for d in self.devices if d.driver == driver and d.allow_multiple_allocations)

    @functools.cached_property
    def slot_nodes(self) -> tuple[Mapping[str, Any], ...]:
        """The GPU nodes, where some node's device plugin shares its GPUs (a pod's nvidia.com/gpu may
        have been a slot: cluster/shared_gpus.py); none on a cluster that shares nothing, so reading
        slots per pod (migrate, and the webhook's request path) costs nothing there."""
        from .shared_gpus import is_gpu_node, shared_pools

        gpu_nodes = tuple(node for node in self.nodes if is_gpu_node(node))
        return gpu_nodes if shared_pools(gpu_nodes) else ()

    @functools.cached_property
    def publishes_hami(self) -> bool:
        """HAMi's DRA driver runs here: a slice of its driver, or its DeviceClass (kubectl_gpu.dra.hami)."""
        return (any(d.driver == hami.HAMI_DRIVER for d in self.devices)
                or any(hami.is_hami_device_class(c) for c in self.device_classes))

    def describe(self) -> str:
        version = f"Kubernetes 1.{self.kubernetes_minor}" if self.kubernetes_minor else "Kubernetes version unknown"
        served = ", ".join(self.served_versions) or "no resource.k8s.io version"
        gates = ", ".join(sorted(self.feature_gates)) or "none"
        return (f"cluster profile from {self.source}: {version}; serves {served}; DRA gates on ({self.gates_source}): "
                f"{gates}; {len(self.device_classes)} DeviceClass(es), {len(self.devices)} device(s) in "
                f"{len(self.resource_slices)} ResourceSlice(s)")


def build_profile(
    source: str,
    *,
    objects: Iterable[Any] = (),
    kubernetes_minor: int | None = None,
    served_versions: Sequence[str] | None = None,
    gate_overrides: Mapping[str, bool] | None = None,
    server_gates: ServerGates | None = None,
) -> ClusterProfile:
    """A profile from API objects (DeviceClasses, ResourceSlices; `kind: List` is expanded).

    Without ``served_versions`` (files), the versions are those the objects were written in: what
    `kubectl get` printed is what the server served.  Without ``kubernetes_minor``, the oldest
    Kubernetes that serves the newest of those versions is assumed (its gate defaults are the
    most conservative)."""
    classes: list[Mapping[str, Any]] = []
    slices: list[Mapping[str, Any]] = []
    nodes: list[Mapping[str, Any]] = []
    seen_versions: set[str] = set()
    for obj in _flatten(objects):
        api_version = str(obj.get("apiVersion", ""))
        if api_version == "v1" and obj.get("kind") == "Node":
            nodes.append(obj)
            continue
        group, _, version = api_version.partition("/")
        if group != DRA_GROUP:
            continue
        if obj.get("kind") == "DeviceClass":
            classes.append(obj)
        elif is_resource_slice(obj):
            slices.append(obj)
        else:
            continue
        seen_versions.add(version)
    if served_versions is None:
        served = tuple(v for v in DRA_VERSIONS if v in seen_versions)
    else:
        served = tuple(v for v in DRA_VERSIONS if v in served_versions)
    minor = kubernetes_minor
    assumed_minor = minor is None
    if minor is None and served:
        minor = DRA_VERSION_SINCE[served[0]][1]
    removed = ()
    if minor is not None and minor >= SUPPORTED_MINORS[0]:
        # A release serves no version it removed (v1beta1 from 1.38), whatever the files were written in:
        # claims for it are never written in one.
        known_versions = served_dra_versions(min(minor, SUPPORTED_MINORS[-1]))
        removed = tuple(v for v in served if v not in known_versions)
        served = tuple(v for v in served if v in known_versions) or (known_versions[:1] if removed else ())
    if minor is None or minor < SUPPORTED_MINORS[0]:
        gates: frozenset[str] = frozenset()
        how = ["no supported Kubernetes version: every DRA gate off"]
    else:
        # A release newer than kubectl-gpu knows keeps at least the newest known defaults.
        known = min(minor, SUPPORTED_MINORS[-1])
        gates = default_gates(known)
        how = [f"defaults of Kubernetes 1.{known}" + (" (assumed from the served API version)" if assumed_minor else "")]
    if removed:
        how.append(f"{', '.join(removed)} not served by Kubernetes 1.{minor}")
    if server_gates is not None and server_gates.gates is not None:
        reported = {k: v for k, v in server_gates.gates.items() if k in DRA_GATES}
        gates = apply_overrides(gates, reported)
        how = [f"the API server's /metrics for {len(reported)} DRA gate(s)"
               + (f", {how[0]} for the rest" if len(reported) < len(DRA_GATES) else "")]
    elif server_gates is not None and server_gates.note:
        how[0] += f" ({server_gates.note})"
    try:
        first = ClusterProfile(source, minor, served, gates, "", tuple(classes), tuple(slices))
        facts, devices = first.slice_facts, first.devices
    except ValueError as err:  # InvalidResourceSlice
        raise ProfileError(f"{source}: {err}") from err
    proven = any(d.allow_multiple_allocations for d in devices)
    if proven and CONSUMABLE_CAPACITY not in gates:
        gates = gates | {CONSUMABLE_CAPACITY}
        how.append(f"{CONSUMABLE_CAPACITY} seen on (devices carry allowMultipleAllocations)")
    if gate_overrides:
        gates = apply_overrides(gates, gate_overrides)
        how.append("--feature-gates: " + ", ".join(f"{k}={str(v).lower()}" for k, v in sorted(gate_overrides.items())))
    profile = ClusterProfile(source, minor, served, frozenset(gates), "; ".join(how), tuple(classes), tuple(slices),
                             tuple(nodes))
    # The same slices give the same devices: hand them to the profile's cached_properties (which
    # keep their values in the instance's __dict__) rather than build 8,000 devices a second time.
    vars(profile)["slice_facts"] = facts
    vars(profile)["devices"] = devices
    return profile


def parse_kubernetes_version(text: str) -> int:
    """"1.34", "v1.34.2" -> 34; ProfileError unless it is a supported 1.x."""
    try:
        return kubernetes_minor(text)
    except ValueError as err:
        raise ProfileError(str(err)) from err


PRIORITIZED_LIST = "DRAPrioritizedList"


def parse_feature_gates(text: str) -> dict[str, bool]:
    """``"DRAConsumableCapacity=true,DRAPrioritizedList=false"`` -> mapping; the syntax of
    kube-apiserver's ``--feature-gates``.  ProfileError names the bad entry."""
    out: dict[str, bool] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, value = part.partition("=")
        name, value = name.strip(), value.strip().lower()
        if not sep or value not in ("true", "false") or not name:
            raise ProfileError(f"feature gate {part!r}: write NAME=true or NAME=false, e.g. DRAConsumableCapacity=true")
        if name not in DRA_GATES:
            raise ProfileError(f"feature gate {name!r} is not a DRA gate kubectl-gpu knows; known: "
                               f"{', '.join(sorted(DRA_GATES))}")
        out[name] = value == "true"
    return out


def apply_overrides(gates: Iterable[str], overrides: Mapping[str, bool]) -> frozenset[str]:
    result = set(gates)
    for gate, on in overrides.items():
        (result.add if on else result.discard)(gate)
    return frozenset(result)


# GET path (+ query) -> decoded JSON; raises the caller's ApiError (with .not_found) on failure.
Fetch = Callable[[str, Sequence[tuple[str, str]]], Mapping[str, Any]]
FetchText = Callable[[str], str]  # GET path -> the body as text (for /metrics)
PAGE_SIZE = "500"
METRICS_PATH = "/metrics"
FEATURE_METRIC = "kubernetes_feature_enabled"
_SAMPLE = re.compile(r"^" + FEATURE_METRIC + r"\{(?P<labels>[^}]*)\}\s+(?P<value>\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class ServerGates:
    """kube-apiserver's feature gates as its /metrics reports them, or why they could not be read."""

    gates: Mapping[str, bool] | None
    note: str = ""


def parse_feature_metrics(text: str) -> dict[str, bool]:
    """Every ``kubernetes_feature_enabled{name="X",stage="..."} 1|0`` sample of a Prometheus text
    scrape -> {X: enabled}.  Other series, comments and malformed lines are skipped."""
    gates: dict[str, bool] = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line.strip())
        if match is None:
            continue
        labels = dict(_LABEL.findall(match["labels"]))
        try:
            value = float(match["value"])
        except ValueError:
            continue
        if labels.get("name"):
            gates[labels["name"]] = value == 1
    return gates


def read_server_gates(fetch_text: FetchText) -> ServerGates:
    """The API server's gates from GET /metrics; when that is refused or unreadable, no gates and a
    note saying why (the profile then keeps the version's defaults)."""
    try:
        text = fetch_text(METRICS_PATH)
    except Exception as exc:  # noqa: BLE001 - every client's ApiError carries .status
        status = getattr(exc, "status", None)
        if status is None:
            raise
        if status in (401, 403):
            return ServerGates(None, f"{METRICS_PATH} is forbidden: grant get on nonResourceURL {METRICS_PATH} "
                                     "to read the API server's own gates")
        # The other reads worked: a big scrape that times out must not cost the profile.
        return ServerGates(None, f"{METRICS_PATH} could not be read: {exc}")
    gates = parse_feature_metrics(text)
    if not gates:
        return ServerGates(None, f"{METRICS_PATH} reports no {FEATURE_METRIC} series")
    return ServerGates(gates)


def read_live_profile(fetch: Fetch, source: str, gate_overrides: Mapping[str, bool] | None = None,
                      fetch_text: FetchText | None = None) -> ClusterProfile:
    """Read the profile from an API server: /version, the served resource.k8s.io versions, every
    DeviceClass and ResourceSlice at the newest of them, and (given ``fetch_text``) the API server's
    gates from /metrics.  (The webhook does the same GETs but /metrics on its async client: it
    shares dra_list_paths and profile_from_discovery.)"""
    version = fetch("/version", ())
    try:
        group = fetch(f"/apis/{DRA_GROUP}", ())
    except Exception as exc:  # noqa: BLE001 - every client's ApiError says not_found
        if not getattr(exc, "not_found", False):
            raise
        group = {}
    objects: list[Mapping[str, Any]] = []
    for path, api_version, kind in dra_list_paths(group):
        objects.extend(stamped(_list_all(fetch, path), api_version, kind))
    objects.extend(_nodes(fetch))
    server_gates = read_server_gates(fetch_text) if fetch_text is not None else None
    return profile_from_discovery(source, version, group, objects, gate_overrides, server_gates)


def _nodes(fetch: Fetch) -> list[Mapping[str, Any]]:
    """The cluster's Nodes (for their GFD labels), or none where RBAC does not let this user list them:
    they only add advice, so a refusal costs the advice, not the run."""
    try:
        return stamped(_list_all(fetch, "/api/v1/nodes"), "v1", "Node")
    except Exception as exc:  # noqa: BLE001 - every client's ApiError says forbidden / not_found
        if getattr(exc, "forbidden", False) or getattr(exc, "not_found", False):
            return []
        raise


def dra_list_paths(group: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(collection path, apiVersion, kind) of the DeviceClasses and ResourceSlices to list, at the
    newest served version kubectl-gpu reads; [] when the group is not served."""
    served = _served(group)
    newest = next((v for v in DRA_VERSIONS if v in served), None)
    if newest is None:
        return []
    return [(f"/apis/{DRA_GROUP}/{newest}/{plural}", f"{DRA_GROUP}/{newest}", kind)
            for plural, kind in (("deviceclasses", "DeviceClass"), ("resourceslices", "ResourceSlice"))]


def profile_from_discovery(source: str, version: Mapping[str, Any], group: Mapping[str, Any],
                           objects: Iterable[Mapping[str, Any]],
                           gate_overrides: Mapping[str, bool] | None = None,
                           server_gates: ServerGates | None = None) -> ClusterProfile:
    """The profile from /version, /apis/resource.k8s.io, the listed objects and /metrics' gates."""
    minor_match = re.match(r"\d+", str(version.get("minor") or ""))
    minor = int(minor_match.group()) if minor_match else None
    return build_profile(source, objects=objects, kubernetes_minor=minor, served_versions=_served(group),
                         gate_overrides=gate_overrides, server_gates=server_gates)


def stamped(items: Iterable[Any], api_version: str, kind: str) -> list[Mapping[str, Any]]:
    # List items come without apiVersion/kind; put them back, as kubectl does.
    return [{"apiVersion": api_version, "kind": kind, **item} for item in items if isinstance(item, dict)]


def _served(group: Mapping[str, Any]) -> list[str]:
    return [str(v.get("version")) for v in group.get("versions") or () if isinstance(v, Mapping)]


def _list_all(fetch: Fetch, path: str) -> list[Any]:
    items: list[Any] = []
    token = ""
    for _ in range(10_000):
        query = [("limit", PAGE_SIZE)] + ([("continue", token)] if token else [])
        page = fetch(path, query)
        items.extend(page.get("items") or ())
        token = str((page.get("metadata") or {}).get("continue") or "")
        if not token:
            break
    return items


def _flatten(objects: Iterable[Any]) -> Iterable[Mapping[str, Any]]:
    for obj in objects:
        if not isinstance(obj, Mapping):
            continue
        if str(obj.get("kind", "")).endswith("List") and isinstance(obj.get("items"), list):
            yield from _flatten(obj["items"])
        else:
            yield obj


def _revision(minor: int | None, served: Sequence[str], gates: Iterable[str],
              classes: Sequence[Mapping[str, Any]], slices: Sequence[Mapping[str, Any]], nodes: Any = ()) -> str:
    import hashlib
    import json

    def key(obj: Mapping[str, Any]) -> tuple[str, str]:
        meta = obj.get("metadata") or {}
        return str(meta.get("name", "")), str(meta.get("resourceVersion", ""))

    parts = [minor, list(served), sorted(gates), sorted(map(key, classes)), sorted(map(key, slices)), nodes]
    if not any(key(o)[1] for o in [*classes, *slices]):
        parts.append([json.dumps(o, sort_keys=True, default=str) for o in [*classes, *slices]])
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:16]


def prioritized_list_on(profile: ClusterProfile | None) -> bool:
    """firstAvailable is served (beta, on by default from 1.34) and the API version has it (v1beta2+)."""
    from kubectl_gpu.core import ApiVersion  # on first use: see the imports at the top

    return (profile is not None and profile.gate(PRIORITIZED_LIST)
            and profile.api_version in (ApiVersion.V1, ApiVersion.V1BETA2))
