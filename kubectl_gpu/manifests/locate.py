"""Find pod templates in any Kubernetes object, and GPU specs that cannot safely be rewritten.

Pod templates are found by shape, not by kind: Deployments, Jobs and CronJobs, but also
Kubeflow jobs, Ray clusters, Volcano tasks, JobSets, LeaderWorkerSets and any custom
resource that embeds a PodSpec, without a list of kinds to keep up to date.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_gpu.core import constants
from kubectl_gpu.core import family_of
from kubectl_gpu.dra.quantity import parse_quantity, QuantityError

from .tree_patch import join_pointer


@dataclass(frozen=True)
class PodSite:
    """Where a pod template sits inside one object."""

    pointer: str  # the mapping handed to the core: {metadata, spec} (or the PodSpec itself if inline)
    spec_pointer: str  # the PodSpec
    # A PodSpec with no pod metadata beside it (KServe's `template`/`worker`, a predictor's
    # inline spec): the core sees it with empty metadata, and annotation changes have no home.
    inline: bool
    label: str = "pod template"  # what the report calls it (a container spec of a custom resource: its name)


# Places named up front in a finding seen in many; the rest follow after "and N more:".
_PLACES_FIRST = 3


@dataclass(frozen=True)
class Unrewritable:
    """A GPU spec migrate sees but must not rewrite; the message says what to do instead.  A long
    pipeline repeats the same spec: one finding per message, naming every place it was seen."""

    pointer: str
    message: str
    others: tuple[str, ...] = ()  # further places with the same message, in document order
    # A GPU request left behind (the pods will still ask a device plugin), not a setting that merely
    # names a legacy resource: `migrate --check` fails on these (exits.LEGACY_LEFT).
    request_left: bool = True

    @property
    def pointers(self) -> tuple[str, ...]:
        return (self.pointer, *self.others)

    @property
    def where(self) -> str:
        places = [p or "/" for p in self.pointers]
        first, rest = places[:_PLACES_FIRST], places[_PLACES_FIRST:]
        return ", ".join(first) + (f" and {len(rest)} more: {', '.join(rest)}" if rest else "")


# Argo's containerSet holds containers but is no PodSpec: adding resourceClaims there breaks it.
_NOT_POD_SPECS = frozenset({"containerSet"})


def is_pod_spec(node: Any) -> bool:
    containers = node.get("containers") if isinstance(node, Mapping) else None
    return (
        isinstance(containers, list)
        and bool(containers)
        and all(isinstance(c, Mapping) and ("name" in c or "image" in c) for c in containers)
    )


def find_pod_sites(obj: Any) -> list[PodSite]:
    sites: list[PodSite] = []
    _walk_sites(obj, [], None, sites)
    return sites


def _walk_sites(node: Any, path: list[str | int], parent_key: str | int | None, out: list[PodSite]) -> None:
    if isinstance(node, Mapping):
        spec = node.get("spec")
        if is_pod_spec(spec):
            out.append(PodSite(join_pointer(path), join_pointer([*path, "spec"]), inline=False))
            for key, value in node.items():
                if key != "spec":
                    _walk_sites(value, [*path, key], key, out)
            return
        if is_pod_spec(node) and parent_key not in _NOT_POD_SPECS:
            out.append(PodSite(join_pointer(path), join_pointer(path), inline=True))
            return
        for key, value in node.items():
            if isinstance(value, (Mapping, list)):
                _walk_sites(value, [*path, key], key, out)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            if isinstance(value, (Mapping, list)):
                _walk_sites(value, [*path, index], parent_key, out)


# Annotations whose text legitimately repeats legacy requests: kubectl apply's own copy of
# the last applied object, and migrate's record of what it replaced.
_QUIET_ANNOTATIONS = frozenset({
    "kubectl.kubernetes.io/last-applied-configuration",
    constants.ORIGINAL_RESOURCES_ANNOTATION,
    constants.SUMMARY_ANNOTATION,
})
_RESOURCE_IN_TEXT = re.compile(
    r"""(?P<name>[A-Za-z0-9][A-Za-z0-9.-]*\.[A-Za-z]+/[A-Za-z0-9][A-Za-z0-9._-]*)["']?[ \t]*:[ \t]*"""
    r"""["']?(?P<value>[^\s,"'}\]]*)"""
)


def find_unrewritable(obj: Any, sites: list[PodSite], rewritten_containers: tuple[str, ...] = ()) -> list[Unrewritable]:
    """GPU specs outside the pod templates and the container specs (`rewritten_containers`, see
    container_sites.py) migrate rewrites: inside strings (embedded manifests, pipeline IR), other
    container specs outside a PodSpec, operators' GPU count fields."""
    spec_prefixes = tuple(site.spec_pointer + "/" for site in sites) + tuple(p + "/" for p in rewritten_containers)
    rewritten = frozenset(rewritten_containers)  # an Argo podSpecPatch string is rewritten in place
    places: dict[str, list[str]] = {}  # message -> where it was seen
    settings: set[str] = set()  # the messages about settings, not requests

    def add(pointer: str, message: str) -> None:
        places.setdefault(message, []).append(pointer)

    serves_legacy_name = _is_device_class(obj)
    for path, key, value in _iter_nodes(obj, []):
        pointer = join_pointer(path)
        if isinstance(value, str):
            # Every extended resource name has a `/`: strings without one need no closer look.
            if key in _QUIET_ANNOTATIONS or "/" not in value or pointer in rewritten:
                continue
            if serves_legacy_name and path == ["spec", "extendedResourceName"]:
                continue  # KEP-5004: the scheduler serves pods requesting that name from this class
            names = _requests_in_text(value)
            if names:
                add(pointer, f"{', '.join(names)} requested inside a string value: embedded manifests and "
                             "pipeline specs are not rewritten; migrate them where they are generated")
            elif family_of(value) and key not in ("key", "operator") and "tolerations" not in path:
                message = (f"refers to the legacy resource {value.strip()} (a quota, accelerator type or "
                           "setting): migrated pods no longer request it, so point it at the DRA device class instead")
                add(pointer, message)
                settings.add(message)
        elif key == "resources" and isinstance(value, Mapping) and not pointer.startswith(spec_prefixes):
            names = _legacy_resource_keys(value)
            if names:
                add(pointer, f"{', '.join(names)} {_outside_template_advice(obj)}")
    findings = [Unrewritable(pointers[0], message, tuple(pointers[1:]), request_left=message not in settings)
                for message, pointers in places.items()]
    findings.extend(_count_fields(obj))
    return findings


# NVIDIA's NIM operator (apps.nvidia.com): `resources` is put on the container the operator creates; its
# API takes claims in `draResources` beside it (NVIDIA/k8s-nim-operator api/apps/v1alpha1/dra_types.go).
_NIM_KINDS = frozenset({"NIMService", "NIMPipeline"})


def _outside_template_advice(obj: Any) -> str:
    kind = obj.get("kind") if isinstance(obj, Mapping) else None
    if kind in _NIM_KINDS and str(obj.get("apiVersion", "")).startswith("apps.nvidia.com/"):
        return ("in a NIM service's resources, which the NIM operator puts on the container it creates: not "
                "rewritten; with a NIM operator whose API has draResources, remove the GPU limit and add "
                "draResources beside it ([{resourceClaimTemplateName: <a ResourceClaimTemplate>}] or a claimSpec "
                "with the devices); with an older operator, the admission webhook rewrites the pods it creates")
    return ("in a container spec outside any pod template, in a custom resource migrate has no mapping for: "
            "not rewritten; use a pod template, or the admission webhook for the pods its operator creates")


def _is_device_class(obj: Any) -> bool:
    api_version = obj.get("apiVersion") if isinstance(obj, Mapping) else None
    return (obj.get("kind") == "DeviceClass" and isinstance(api_version, str)
            and api_version.startswith(constants.DRA_GROUP + "/"))


def _iter_nodes(node: Any, path: list[str | int]) -> Iterator[tuple[list[str | int], Any, Any]]:
    if isinstance(node, Mapping):
        for key, value in node.items():
            child = [*path, str(key)]
            yield child, key, value
            if isinstance(value, (Mapping, list)):
                yield from _iter_nodes(value, child)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            child = [*path, index]
            yield child, index, value
            if isinstance(value, (Mapping, list)):
                yield from _iter_nodes(value, child)


def _requests_in_text(text: str) -> list[str]:
    names: dict[str, None] = {}
    for match in _RESOURCE_IN_TEXT.finditer(text):
        if family_of(match.group("name")) and not _is_zero(match.group("value")):
            names[match.group("name")] = None
    return list(names)


def _legacy_resource_keys(resources: Mapping[str, Any]) -> list[str]:
    names: dict[str, None] = {}
    for section in ("limits", "requests"):
        values = resources.get(section)
        if isinstance(values, Mapping):
            for key, amount in values.items():
                if family_of(str(key)) and not _is_zero(amount):
                    names[str(key).strip()] = None
    return list(names)


def _is_zero(amount: Any) -> bool:
    """An amount the API server reads as zero ("0", "0.0", "0Gi"): asks for nothing.  A value
    that is no quantity (a template placeholder) may be anything, so it counts."""
    try:
        return parse_quantity(amount) == 0
    except QuantityError:
        return False


# Operators' own GPU count fields, by kind: (pointer, what the operator does with it).  production-stack
# VLLMRuntime (vllm-project/production-stack operator/api/v1alpha1/common.go ResourceRequirements.GPU, a
# count string) for the vLLM container and for its sidecar.
_COUNT_FIELDS = {
    "VLLMRuntime": (("spec", "deploymentConfig", "resources", "gpu"),
                    ("spec", "deploymentConfig", "sidecarConfig", "resources", "gpu")),
}


# MPIJob v1alpha1's `spec.gpus`, which the operator turns into limits itself.
_OBSOLETE_COUNT_KIND = "MPIJob"
# The kinds whose GPU counts are read by kind, not by a resource name (passthrough.py reads every
# document that names one).
COUNT_FIELD_KINDS = (*_COUNT_FIELDS, _OBSOLETE_COUNT_KIND)


def _count_fields(obj: Any) -> list[Unrewritable]:
    if not isinstance(obj, Mapping):
        return []
    found = []
    for path in _COUNT_FIELDS.get(str(obj.get("kind")), ()):
        node: Any = obj
        for key in path:
            node = node.get(key) if isinstance(node, Mapping) else None
        if node is not None and not _is_zero(node):
            found.append(Unrewritable(
                join_pointer(path),
                f"{obj.get('kind')} {'.'.join(path[1:])}: {node!r} is a GPU count the operator turns into an "
                "nvidia.com/gpu limit on the pods it creates: not rewritten; the admission webhook rewrites those "
                "pods (or deploy them from a pod template of your own and migrate that)"))
    return found + _obsolete_count_fields(obj)


def _obsolete_count_fields(obj: Any) -> list[Unrewritable]:
    spec = obj.get("spec")
    if (
        obj.get("kind") == _OBSOLETE_COUNT_KIND
        and str(obj.get("apiVersion", "")).endswith("/v1alpha1")
        and isinstance(spec, Mapping)
        and "gpus" in spec
    ):
        return [Unrewritable("/spec/gpus",
                        f"MPIJob v1alpha1 spec.gpus: {spec['gpus']} makes the operator add nvidia.com/gpu "
                        "limits itself; not rewritten: move to kubeflow.org/v2beta1 with explicit worker "
                        "resources, then migrate")]
    return []
