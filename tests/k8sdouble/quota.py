"""ResourceQuota, as kube-apiserver's quota admission and the quota controller enforce it.

Usage is measured by the two evaluators that matter to GPUs, transcribed from kubernetes/kubernetes
``pkg/quota/v1/evaluator/core``:

- ``pods.go`` (commit d7ce957d8a8729e0e9c2e365288277d742491a5b): every pod is charged
  ``count/pods``; a pod that has not finished is also charged ``pods``, ``cpu``/``memory``/
  ``ephemeral-storage`` (bare and ``requests.``), their ``limits.``, and every extended resource it
  requests (a name outside the ``kubernetes.io`` domain, or the implicit
  ``deviceclass.resource.kubernetes.io/<class>``) as ``requests.<name>`` only: "only quota objects
  in format of "requests.resourceName" is allowed for extended resource".  A quota entry
  ``nvidia.com/gpu`` or ``limits.nvidia.com/gpu`` passes validation (a name with a ``/`` skips the
  standard-name check, ``ValidateResourceQuotaResourceName``) but no evaluator matches it: it caps
  nothing, and ``status.used`` does not list it.
- ``resource_claims.go`` (the resource.k8s.io/v1 version with ``V1ExtendedResourceByDeviceClass``,
  1.34+; commit 95f08499d652a6211121d8af35f470609217c730 is the v1beta1 one with the same device
  counting): every claim is charged ``count/resourceclaims.resource.k8s.io`` and, per request,
  ``<deviceClassName>.deviceclass.resource.k8s.io/devices``: ``count`` for ExactCount,
  ``AllocationResultsMaxSize`` (32) for ``All``; a ``firstAvailable`` list is charged per class
  the worst case of its subrequests, as ``setResourceQuantity`` adds it (a later, larger subrequest
  of a class already seen adds to it rather than replacing it).  With DRAExtendedResource on
  (``set_feature_gates``), each such charge also goes to
  ``requests.deviceclass.resource.kubernetes.io/<class>`` and, for a DeviceClass that names
  ``spec.extendedResourceName``, to ``requests.<extendedResourceName>`` (KEP-5004).  The
  scheduler-made claims of extended-resource pods (annotated
  ``resource.kubernetes.io/extended-resource-claim``) are not made by the double.

Admission (staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go,
``CheckRequest``, commit b1f2af04328936c2fa79db4af14f5c6ad9160748): for each quota of the
namespace that tracks a resource the object is charged, ``used + requested`` must stay within
``hard`` for every such resource, else ``403 Forbidden`` with ``<resource> "<name>" is forbidden:
exceeded quota: <quota>, requested: <r>=<n>, used: <r>=<n>, limited: <r>=<n>`` (keys sorted,
joined by commas, as ``prettyPrint``).  ``status.used`` is recounted from the stored objects after
every write, as a quota controller that never lags would, so a quota lowered below its use is
accepted and refuses the next object.  Scopes (``generic.Matches``: a quota counts only objects that
match every scope in ``spec.scopes`` and ``spec.scopeSelector``): pods as ``podMatchesScopeFunc``
(Terminating, NotTerminating, BestEffort, NotBestEffort by QoS, PriorityClass with In/NotIn/Exists/
DoesNotExist, CrossNamespacePodAffinity); ResourceClaims match no scope (``MatchesNoScopeFunc``), so a
scoped quota never counts them.  Not modelled: ``count/<other kinds>``.
"""
from __future__ import annotations

import re
from fractions import Fraction
from typing import Any, Callable

from .errors import ApiError
from .kinds import Registry, ResourceKind
from .store import Store

EXTENDED_RESOURCE_GATE = "DRAExtendedResource"
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
ALLOCATION_RESULTS_MAX_SIZE = 32  # resourceapi.AllocationResultsMaxSize
DEVICES_SUFFIX = ".deviceclass.resource.k8s.io/devices"  # corev1.ResourceClaimsPerClass
IMPLICIT_EXTENDED_PREFIX = "deviceclass.resource.kubernetes.io/"  # resourceapi.ResourceDeviceClassPrefix
REQUESTS = "requests."
LIMITS = "limits."
POD_COUNT = "count/pods"
CLAIM_COUNT = "count/resourceclaims.resource.k8s.io"
_POD_RESOURCES = {POD_COUNT, "pods", "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
                  "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage"}
_COMPUTE = ("cpu", "memory", "ephemeral-storage")

_QUANTITY = re.compile(r"^([+-]?[0-9.]+)([eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?$")
_SUFFIX = {None: 1, "m": Fraction(1, 1000), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15,
           "E": 10**18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


def quantity(text: Any) -> Fraction:
    """A Kubernetes quantity; a value the double cannot read counts as 0 (validation is elsewhere)."""
    match = _QUANTITY.match(str(text).strip())
    if not match:
        return Fraction(0)
    number, suffix = match.groups()
    if suffix and suffix[0] in "eE":
        return Fraction(number) * Fraction(10) ** int(suffix[1:])
    return Fraction(number) * _SUFFIX[suffix]


def format_quantity(value: Fraction) -> str:
    """Whole amounts plainly, else in milli-units, as ``Quantity.String`` writes these."""
    if value.denominator == 1:
        return str(value.numerator)
    milli = value * 1000
    return f"{int(milli)}m" if milli.denominator == 1 else str(float(value))


def _is_native(name: str) -> bool:
    """helper.IsNativeResource: no domain, or the kubernetes.io domain."""
    return "/" not in name or "kubernetes.io/" in name


def _is_extended(name: str) -> bool:
    """schedutil.IsDRAExtendedResourceName: an extended resource name, or the implicit one of a class."""
    return name.startswith(IMPLICIT_EXTENDED_PREFIX) or (not _is_native(name) and not name.startswith(REQUESTS))


def _is_extended_for_quota(name: str) -> bool:
    """isExtendedResourceNameForQuota: ``requests.`` + a non-native or implicit DRA name."""
    if not name.startswith(REQUESTS):
        return False
    return not _is_native(name) or name.startswith(REQUESTS + IMPLICIT_EXTENDED_PREFIX)


def pod_matches(name: str) -> bool:
    return name in _POD_RESOURCES or name.startswith(("hugepages-", "requests.hugepages-")) or \
        _is_extended_for_quota(name)


def claim_matches(name: str, extended_resource: bool) -> bool:
    if name == CLAIM_COUNT or name.endswith(DEVICES_SUFFIX):
        return True
    return extended_resource and (name.startswith(REQUESTS + IMPLICIT_EXTENDED_PREFIX) or _is_extended_for_quota(name))


def _add(total: dict[str, Fraction], name: str, amount: Fraction) -> None:
    total[name] = total.get(name, Fraction(0)) + amount


def _container_amounts(container: dict, field: str) -> dict[str, Fraction]:
    resources = container.get("resources") or {}
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or {}
    # The API server defaults a missing request to its limit.
    chosen = {**limits, **requests} if field == "requests" else dict(limits)
    return {name: quantity(value) for name, value in chosen.items()}


def _pod_amounts(spec: dict, field: str) -> dict[str, Fraction]:
    """resourcehelper.PodRequests/PodLimits: containers and sidecars summed, or the largest sequential
    init container's amount when more."""
    total: dict[str, Fraction] = {}
    for container in [*(spec.get("containers") or ()),
                      *(c for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always")]:
        for name, amount in _container_amounts(container, field).items():
            _add(total, name, amount)
    for container in spec.get("initContainers") or ():
        if container.get("restartPolicy") == "Always":
            continue
        for name, amount in _container_amounts(container, field).items():
            total[name] = max(total.get(name, Fraction(0)), amount)
    return total


def pod_usage(pod: dict) -> dict[str, Fraction]:
    """PodUsageFunc: what a pod is charged."""
    usage = {POD_COUNT: Fraction(1)}
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return usage
    spec = pod.get("spec") or {}
    usage["pods"] = Fraction(1)
    for name, amount in _pod_amounts(spec, "requests").items():
        if name in _COMPUTE:
            usage[name] = usage[REQUESTS + name] = amount
        elif name.startswith("hugepages-"):
            usage[name] = usage[REQUESTS + name] = amount
        elif _is_extended(name):
            usage[REQUESTS + name] = amount
    for name, amount in _pod_amounts(spec, "limits").items():
        if name in _COMPUTE:
            usage[LIMITS + name] = amount
    return usage


def _request_charges(request: dict) -> list[tuple[str, Fraction]]:
    """(deviceClassName, devices) that one request of a v1 claim is charged."""
    def devices(shape: dict) -> Fraction:
        mode = shape.get("allocationMode") or "ExactCount"
        if mode == "ExactCount":
            return Fraction(int(shape.get("count") or 1))
        if mode == "All":
            return Fraction(ALLOCATION_RESULTS_MAX_SIZE)
        return Fraction(0)  # an unknown mode is not charged

    if request.get("firstAvailable"):
        worst: dict[str, Fraction] = {}
        for sub in request["firstAvailable"]:
            name, count = str(sub.get("deviceClassName", "")), devices(sub)
            if count > worst.get(name, Fraction(0)):
                worst[name] = worst.get(name, Fraction(0)) + count  # setResourceQuantity adds
        return list(worst.items())
    if isinstance(request.get("exactly"), dict):
        return [(str(request["exactly"].get("deviceClassName", "")), devices(request["exactly"]))]
    return []  # a request shape this version does not know is not charged


def claim_usage(claim: dict, extended_resource: bool, class_resources: dict[str, str]) -> dict[str, Fraction]:
    """claimEvaluator.Usage for a claim stored as resource.k8s.io/v1.  ``class_resources``: DeviceClass
    name -> its spec.extendedResourceName."""
    usage = {CLAIM_COUNT: Fraction(1)}
    special = ((claim.get("metadata") or {}).get("annotations") or {}).get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) == "true"
    requests = (((claim.get("spec") or {}).get("devices") or {}).get("requests")) or []
    for request in requests:
        for device_class, count in _request_charges(request):
            _add(usage, device_class + DEVICES_SUFFIX, count)
            if extended_resource and not special:
                _add(usage, REQUESTS + IMPLICIT_EXTENDED_PREFIX + device_class, count)
                if device_class in class_resources:
                    _add(usage, REQUESTS + class_resources[device_class], count)
    return usage


def _scopes(quota: dict) -> list[dict]:
    """``getScopeSelectorsFromQuota``: spec.scopes as Exists requirements, then the scopeSelector's."""
    spec = quota.get("spec") or {}
    selectors = [{"scopeName": scope, "operator": "Exists"} for scope in spec.get("scopes") or ()]
    return selectors + list((spec.get("scopeSelector") or {}).get("matchExpressions") or ())


def _best_effort(spec: dict) -> bool:
    """qos.GetPodQOS == BestEffort: no container (init ones included) requests or limits cpu or memory."""
    for container in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
        resources = container.get("resources") or {}
        for field in ("requests", "limits"):
            if any(name in ("cpu", "memory") for name in resources.get(field) or {}):
                return False
    pod_level = spec.get("resources") or {}
    return not any(name in ("cpu", "memory") for field in ("requests", "limits") for name in pod_level.get(field) or {})


def _cross_namespace_affinity(spec: dict) -> bool:
    affinity = spec.get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        rules = affinity.get(kind) or {}
        terms = [*(rules.get("requiredDuringSchedulingIgnoredDuringExecution") or ()),
                 *((w.get("podAffinityTerm") or {}) for w in rules.get("preferredDuringSchedulingIgnoredDuringExecution") or ())]
        if any(t.get("namespaces") or t.get("namespaceSelector") is not None for t in terms):
            return True
    return False


def pod_matches_scope(selector: dict, pod: dict) -> bool:
    spec = pod.get("spec") or {}
    name = selector.get("scopeName")
    deadline = spec.get("activeDeadlineSeconds")
    terminating = isinstance(deadline, int) and deadline >= 0
    if name == "Terminating":
        return terminating
    if name == "NotTerminating":
        return not terminating
    if name == "BestEffort":
        return _best_effort(spec)
    if name == "NotBestEffort":
        return not _best_effort(spec)
    if name == "CrossNamespacePodAffinity":
        return _cross_namespace_affinity(spec)
    if name == "PriorityClass":
        priority = spec.get("priorityClassName") or ""
        operator, values = selector.get("operator"), selector.get("values") or ()
        if operator == "Exists":
            return bool(priority)
        if operator == "DoesNotExist":
            return not priority
        if operator == "In":
            return bool(priority) and priority in values
        if operator == "NotIn":
            return not priority or priority not in values
    return False


def quota_counts(quota: dict, kind: str, obj: dict) -> bool:
    """Whether ``quota``'s scopes let it count ``obj`` (a Pod or a ResourceClaim)."""
    scopes = _scopes(quota)
    if not scopes:
        return True
    if kind != "Pod":
        return False
    return all(pod_matches_scope(selector, obj) for selector in scopes)


class QuotaAdmission:
    """Charges pods and ResourceClaims against the ResourceQuotas of their namespace."""

    def __init__(self, registry: Registry, store: Store, gates: Callable[[], dict]):
        self.registry = registry
        self.store = store
        self._gates = gates  # (name, stage) -> on, as set_feature_gates keeps them
        self._refreshing = False

    @property
    def extended_resource(self) -> bool:
        return any(on for (name, _), on in self._gates().items() if name == EXTENDED_RESOURCE_GATE)

    def _kind(self, name: str) -> ResourceKind:
        return self.registry.resolve(name)

    def _class_resources(self) -> dict[str, str]:
        found = {}
        for entry in self.store.entries(self._kind("deviceclasses")):
            name = (entry.obj.get("spec") or {}).get("extendedResourceName")
            if isinstance(name, str):
                found[entry.obj["metadata"]["name"]] = name
        return found

    def _usage(self, kind: ResourceKind, obj: dict) -> tuple[dict[str, Fraction], Callable[[str], bool]]:
        if kind.kind == "Pod":
            return pod_usage(obj), pod_matches
        extended = self.extended_resource
        return (claim_usage(obj, extended, self._class_resources() if extended else {}),
                lambda name: claim_matches(name, extended))

    def _quotas(self, namespace: str) -> list[dict]:
        return [e.obj for e in self.store.entries(self._kind("resourcequotas"), namespace)]

    def used(self, namespace: str, quota: dict | None = None) -> dict[str, Fraction]:
        """What every pod and claim of the namespace that ``quota``'s scopes count (any quota: all of
        them) is charged, summed over the resources quotas track."""
        total: dict[str, Fraction] = {}
        for kind_name in ("pods", "resourceclaims"):
            kind = self._kind(kind_name)
            for entry in self.store.entries(kind, namespace):
                if quota is not None and not quota_counts(quota, kind.kind, entry.obj):
                    continue
                usage, matches = self._usage(kind, entry.obj)
                for name, amount in usage.items():
                    if matches(name):
                        _add(total, name, amount)
        return total

    def admit(self, kind: ResourceKind, obj: dict) -> None:
        """Raise 403 Forbidden when creating ``obj`` would exceed a quota of its namespace."""
        if kind.kind not in ("Pod", "ResourceClaim"):
            return
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace", "")
        quotas = self._quotas(namespace)
        if not quotas:
            return
        usage, matches = self._usage(kind, obj)
        for quota in sorted(quotas, key=lambda q: q["metadata"]["name"]):
            if not quota_counts(quota, kind.kind, obj):
                continue
            used = self.used(namespace, quota)
            hard = {k: quantity(v) for k, v in ((quota.get("spec") or {}).get("hard") or {}).items()}
            requested = {k: v for k, v in usage.items() if k in hard and matches(k)}
            exceeded = sorted(k for k, v in requested.items() if used.get(k, Fraction(0)) + v > hard[k])
            if exceeded:
                def pretty(values: dict[str, Fraction]) -> str:
                    return ",".join(f"{k}={format_quantity(values.get(k, Fraction(0)))}" for k in exceeded)
                message = (f'{kind.qualified_name} "{meta.get("name", "")}" is forbidden: exceeded quota: '
                           f'{quota["metadata"]["name"]}, requested: {pretty(requested)}, used: {pretty(used)}, '
                           f'limited: {pretty(hard)}')
                raise ApiError(403, message, "Forbidden",
                               {"name": meta.get("name", ""), "group": kind.group, "kind": kind.plural})

    def refresh(self, kind: ResourceKind, namespace: str) -> None:
        """Recount ``status`` of the namespace's quotas after a write to ``kind``."""
        if self._refreshing or kind.kind not in ("Pod", "ResourceClaim", "ResourceQuota", "DeviceClass"):
            return
        self._refreshing = True
        try:
            quotas_kind = self._kind("resourcequotas")
            entries = self.store.entries(quotas_kind, None if kind.kind == "DeviceClass" else namespace)
            for entry in entries:
                quota = entry.obj
                hard = dict((quota.get("spec") or {}).get("hard") or {})
                used = self.used(quota["metadata"]["namespace"], quota)
                tracked = [k for k in hard if pod_matches(k) or claim_matches(k, self.extended_resource)]
                status = {"hard": hard, "used": {k: format_quantity(used.get(k, Fraction(0))) for k in tracked}}
                if quota.get("status") != status:
                    updated = {**quota, "metadata": dict(quota["metadata"]), "status": status}
                    self.store.update(quotas_kind, updated, subresource="status", force=True)
        finally:
            self._refreshing = False
