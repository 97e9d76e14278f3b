"""What /mutate does to one admitted object (pure: the decision, not the API calls).

The webhook never decides anything about GPUs itself: the translation core rewrites the pod
template (the same call `kubectl gpu migrate` makes), and fencing.py decides the fence.
This module finds the pod template inside the admitted object, calls them, and puts the
patches together under the right prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable, Mapping

from kubectl_gpu.core import (ClaimObject, IntegerGpuMode, LegacyRequest, PodTranslation, TranslateOptions,
                              claims_beside_legacy_gpus,
                              is_plain_integer_gpu, legacy_requests, prefix_patch, translate_pod_template)
from kubectl_gpu.core.constants import TPU
from kubectl_gpu.k8s.paths import POD, WORKLOADS

from . import fencing, patched_copy
from .config import WebhookConfig
from .review import AdmissionRequest, Verdict, encode_patch

Translate = Callable[[Mapping[str, Any], TranslateOptions], PodTranslation]

# (API group, kind) -> path of the pod template inside the object.
POD_TEMPLATE_PATHS: dict[tuple[str, str], tuple[str, ...]] = {
    (POD.group, POD.kind): (),
    **{(w.resource.group, w.resource.kind): w.template for w in WORKLOADS},
}
# ... and that path as the JSON pointer its patches go under.
POD_TEMPLATE_PREFIXES: dict[tuple[str, str], str] = {
    key: "".join("/" + patched_copy.escape(part) for part in path) for key, path in POD_TEMPLATE_PATHS.items()
}
MESSAGE_PREFIX = "kubectl-gpu: "
AUDIT_PREFIX = "kubectl-gpu audit (not applied): "


@dataclass(frozen=True)
class TemplateSite:
    """The pod template of an admitted object and where it sits in it."""

    kind: str
    prefix: str  # JSON pointer: "" for a Pod, "/spec/template" for a Deployment
    template: Mapping[str, Any]
    owner_labels: Mapping[str, str]  # labels of the workload object itself (== template's for a Pod)
    sharing_group: str | None


def find_site(request: AdmissionRequest) -> TemplateSite | None:
    """The pod template to translate, or None when the object has none this webhook handles."""
    path = POD_TEMPLATE_PATHS.get((request.group, request.kind))
    obj = request.obj
    if path is None or obj is None or request.sub_resource:
        return None
    node: Any = obj
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    if not isinstance(node, dict) or not isinstance(node.get("spec"), dict):
        return None
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    labels = metadata.get("labels") if isinstance(metadata.get("labels"), dict) else {}
    if request.kind == "Pod":
        group = _controller_of(metadata)
    else:
        name = metadata.get("name") or request.name
        group = f"{request.kind}/{name}" if name else None
    return TemplateSite(request.kind, POD_TEMPLATE_PREFIXES[(request.group, request.kind)], node, labels, group)


def controller_reference(metadata: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ownerReference with ``controller: true`` (at most one exists: the API server rejects
    a second), as controllers set it: apiVersion, kind, name, uid, controller, blockOwnerDeletion."""
    owners = metadata.get("ownerReferences")
    for ref in owners if isinstance(owners, list) else []:
        if isinstance(ref, dict) and ref.get("controller") is True and ref.get("kind") and ref.get("name"):
            return ref
    return None


def _controller_of(metadata: Mapping[str, Any]) -> str | None:
    # Pods of one controller share a workload-wide claim (timeslicing/mps sharing).
    ref = controller_reference(metadata)
    return f"{ref['kind']}/{ref['name']}" if ref is not None else None


def opted_out(labels: Mapping[str, Any], config: WebhookConfig) -> bool:
    return str(labels.get(config.opt_out_label, "")).lower() == "true"


def site_opted_out(site: TemplateSite, config: WebhookConfig) -> bool:
    template_meta = site.template.get("metadata") if isinstance(site.template.get("metadata"), dict) else {}
    template_labels = template_meta.get("labels") if isinstance(template_meta.get("labels"), dict) else {}
    return opted_out(site.owner_labels, config) or opted_out(template_labels, config)


@dataclass(frozen=True)
class MutationPlan:
    patch: tuple[dict[str, Any], ...]  # relative to the admitted object
    claims: tuple[ClaimObject, ...]  # must exist before the object is admitted
    warnings: tuple[str, ...]
    rewritten_families: tuple[str, ...]
    fenced: bool
    has_legacy: bool  # the template asks for a legacy GPU resource at all
    encoded_patch: str = ""
    # What the core refused to translate (vcuda-core 150, two plugins in one container...): the
    # same input makes `kubectl gpu migrate` exit 3, so admission denies it with the whole reason.
    errors: tuple[str, ...] = ()  # encode_patch(patch): a cached plan is answered without encoding again
    # The template asks for a legacy GPU and a claim in one container (the core's
    # claims_beside_legacy_gpus): whether those claims allocate GPUs is then asked of the API.  A
    # pure function of the template, so a cached plan carries it and a controller's pods skip the scan.
    maybe_same_gpus_twice: bool = False

    @cached_property
    def verdict(self) -> Verdict:
        """The answer that applies this plan (once its claim objects exist); made once per plan,
        so a cached plan's answer is too."""
        return Verdict(allowed=True, patch=self.patch, warnings=self.warnings, encoded_patch=self.encoded_patch)


NOTHING = MutationPlan((), (), (), (), False, False)


def plan(
    site: TemplateSite, config: WebhookConfig, *, skip_translation: bool, translate: Translate = translate_pod_template
) -> MutationPlan:
    """Translate (unless opted out) and, for a Pod that keeps device-plugin requests, fence it
    off DRA nodes."""
    if skip_translation:
        translation = None
        before = after = tuple(legacy_requests(site.template))
    else:
        # The core reports what it read and what it left: no second pass over the containers.
        translation = translate(site.template, config.options_for(site.sharing_group))
        before, after = translation.legacy, translation.remaining
    notes = translation.notes if translation else ()
    extra = fencing.extra_requests(site.template, config.extra_legacy_resources) if site.kind == "Pod" else []
    if not before and not notes and not extra:
        return NOTHING
    warnings = [MESSAGE_PREFIX + n.render() for n in notes]
    # One copy is changed (the core's rewrite, then the fence on the pod as it will be admitted),
    # and the answer is the diff of the original and that copy.
    changed = patched_copy.apply(site.template, translation.patch) if translation and translation.patch \
        else site.template
    fenced = False
    if site.kind == "Pod" and (_needs_device_plugin(after, config) or extra):
        for fence in (fencing.fence_legacy_pod(changed, config.dra_node_selectors, config.extra_legacy_resources),
                      fencing.fence_driver_nodes(changed, config.driver_node_names)):
            if fence:
                fenced = True
                changed = patched_copy.apply(changed, fence)
        if fenced:
            warnings.append(MESSAGE_PREFIX + "keeps device-plugin GPU requests; added node affinity that avoids DRA nodes")
    rewritten = sorted({r.family for r in before} - {r.family for r in after})
    ops = patched_copy.diff(site.template, changed) if changed is not site.template else []
    patch = prefix_patch(ops, site.prefix)
    claims = translation.claims if translation is not None and translation.patch else ()
    return MutationPlan(
        patch=patch,
        claims=claims,
        warnings=tuple(warnings),
        rewritten_families=tuple(rewritten),
        fenced=fenced,
        has_legacy=bool(before),
        encoded_patch=encode_patch(patch) if patch else "",
        errors=tuple(n.render() for n in translation.errors) if translation is not None else (),
        maybe_same_gpus_twice=bool(claims) and bool(claims_beside_legacy_gpus(site.template, config.translate_options)),
    )


def _served_by_dra_extended_resource(request: LegacyRequest, config: WebhookConfig) -> bool:
    # With integerGpus: extended-resource a DeviceClass's extendedResourceName (KEP-5004) lets the
    # scheduler give a whole-GPU nvidia.com/gpu request a DRA device; such a pod belongs on DRA nodes.
    options = config.translate_options
    if request.name in options.dra_extended_resources:  # MIG classes with extendedResourceName
        return True
    return options.integer_gpus is IntegerGpuMode.EXTENDED_RESOURCE and is_plain_integer_gpu(request)


def _needs_device_plugin(requests: list[LegacyRequest], config: WebhookConfig) -> bool:
    return any(
        r.family != TPU and r.amount > 0 and not _served_by_dra_extended_resource(r, config) for r in requests
    )


def device_plugin_view(pod: Mapping[str, Any], config: WebhookConfig) -> Mapping[str, Any]:
    """The pod as the double-counting checks must see it: without the whole-GPU requests that
    KEP-5004 serves from DRA (integerGpus: extended-resource), which are meant for DRA nodes."""
    served = [r for r in legacy_requests(pod) if _served_by_dra_extended_resource(r, config)]
    if not served:
        return pod
    ops = []
    for r in served:
        container = f"{r.container.path}/resources"
        resources = pod["spec"][r.container.field][r.container.index]["resources"]
        for part in ("limits", "requests"):
            if isinstance(resources.get(part), dict) and r.resource in resources[part]:
                ops.append({"op": "remove", "path": f"{container}/{part}/{patched_copy.escape(r.resource)}"})
    return patched_copy.apply(pod, ops)


def audit_warnings(mutation: MutationPlan) -> tuple[str, ...]:
    """In audit mode nothing is changed: say what would have been."""
    out = [w.replace(MESSAGE_PREFIX, AUDIT_PREFIX, 1) for w in mutation.warnings]
    if mutation.claims:
        names = ", ".join(c.name for c in mutation.claims)
        out.append(f"{AUDIT_PREFIX}would create {names}")
    return tuple(out)
