"""Container specs outside a pod template whose custom resource still carries the pod's other fields:
the rewrite goes where the operator reads each of them.

  Argo Workflows (Workflow, WorkflowTemplate, ClusterWorkflowTemplate, CronWorkflow): a template's
      `container` or `script` is a corev1.Container; the pod's metadata, nodeSelector, affinity and
      tolerations are template fields; resourceClaims, and the container's `resources.claims`, only
      through the template's `podSpecPatch`, a strategic merge patch Argo applies to the pod spec
      (argoproj/argo-workflows pkg/apis/workflow/v1alpha1/workflow_types.go; workflow/util/util.go
      ApplyPodSpecPatch), where Argo names the container `main`.
  KServe InferenceService: a predictor framework (`model`, `pytorch`, `triton`, ...) inlines a
      corev1.Container; the predictor inlines PodSpec (resourceClaims, nodeSelector, ...) and the
      component's pod `annotations` (kserve/kserve pkg/apis/serving/v1beta1/predictor.go).
  NVIDIA NIM operator (NIMService, and each service of a NIMPipeline): `spec.resources` goes on the
      container the operator makes; `nodeSelector`, `affinity`, `tolerations` and `annotations` (the
      pod's) are spec fields; claims only through `spec.draResources` (NVIDIA/k8s-nim-operator
      api/apps/v1alpha1/nimservice_types.go, dra_types.go @ f63f74d7; since v3.0.0): each entry names a
      ResourceClaimTemplate or ResourceClaim, which the operator adds to the pod under a name of its own and
      to every container with its `requests` (internal/shared/resourceclaims.go).  The field is immutable
      once the NIMService exists (its CEL rule), so a running one is recreated.

Other custom resources' container specs are reported, not rewritten (locate.find_unrewritable).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_gpu import input_text
from kubectl_gpu.core import ClaimObject, Note, PodTranslation, Severity

from .nodes import to_plain
from .tree_patch import PatchError, apply_patch, join_pointer, resolve

_ARGO_KINDS = frozenset({"Workflow", "WorkflowTemplate", "ClusterWorkflowTemplate", "CronWorkflow"})
ARGO_MAIN_CONTAINER = "main"
# PredictorSpec's framework fields (each a PredictorExtensionSpec inlining corev1.Container).
_KSERVE_FRAMEWORKS = ("sklearn", "xgboost", "tensorflow", "pytorch", "triton", "onnx", "huggingface", "pmml",
                      "lightgbm", "paddle", "model")
KSERVE_CONTAINER = "kserve-container"
_NIM_GROUP = "apps.nvidia.com/"
_NODE_FIELDS = ("nodeSelector", "affinity", "tolerations")


@dataclass(frozen=True)
class ContainerSite:
    """One container spec outside a pod template, and where its pod's fields live in the object."""

    crd: str  # what the report calls it
    container_pointer: str
    container_name: str  # the name the operator gives the container it makes of this spec
    pod_fields: tuple[tuple[str, str], ...]  # PodSpec field -> its place in the object
    metadata_pointer: str  # a mapping whose `annotations` become the pod's
    # Argo: the podSpecPatch string that carries resourceClaims and the container's claims (None: the
    # pod's resourceClaims is one of pod_fields, and the claims go on the container itself).
    patch_pointer: str | None = None
    # NIM: the `draResources` list that carries the claims instead (container_pointer then holds the
    # container's `resources` beside the service's other settings, not a container).
    dra_resources_pointer: str | None = None

    @property
    def claims_elsewhere(self) -> bool:
        """The pod's and the container's claims are written somewhere other than where the core puts them."""
        return self.patch_pointer is not None or self.dra_resources_pointer is not None


def find_container_sites(obj: Any) -> list[ContainerSite]:
    if not isinstance(obj, Mapping):
        return []
    api_version, kind = str(obj.get("apiVersion", "")), obj.get("kind")
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return []
    if api_version.startswith("argoproj.io/") and kind in _ARGO_KINDS:
        return _argo_sites(spec, kind)
    if api_version.startswith("serving.kserve.io/") and kind == "InferenceService":
        return _kserve_sites(spec)
    if api_version.startswith(_NIM_GROUP) and kind == "NIMService":
        return _nim_sites(["spec"], f"NIMService {(obj.get('metadata') or {}).get('name', '')}".strip())
    if api_version.startswith(_NIM_GROUP) and kind == "NIMPipeline":
        services = spec.get("services")
        return [site for index, service in enumerate(services if isinstance(services, list) else [])
                if isinstance(service, Mapping) and isinstance(service.get("spec"), Mapping)
                for site in _nim_sites(["spec", "services", index, "spec"],
                                       f"NIMPipeline service {service.get('name') or index}")]
    return []


def _nim_sites(at: list[str | int], crd: str) -> list[ContainerSite]:
    return [ContainerSite(crd, join_pointer(at), "nim", tuple((f, join_pointer([*at, f])) for f in _NODE_FIELDS),
                          join_pointer(at), dra_resources_pointer=join_pointer([*at, "draResources"]))]


def _argo_sites(spec: Mapping[str, Any], kind: str) -> list[ContainerSite]:
    path: list[str | int] = ["spec"]
    if kind == "CronWorkflow":
        spec = spec.get("workflowSpec") if isinstance(spec.get("workflowSpec"), Mapping) else {}
        path.append("workflowSpec")
    templates = spec.get("templates")
    sites = []
    for index, template in enumerate(templates if isinstance(templates, list) else []):
        if not isinstance(template, Mapping):
            continue
        for field in ("container", "script"):
            if isinstance(template.get(field), Mapping):
                at = [*path, "templates", index]
                sites.append(ContainerSite(
                    f"Argo template {template.get('name') or index} ({field})", join_pointer([*at, field]),
                    ARGO_MAIN_CONTAINER, tuple((f, join_pointer([*at, f])) for f in _NODE_FIELDS),
                    join_pointer([*at, "metadata"]), join_pointer([*at, "podSpecPatch"])))
    return sites


def _kserve_sites(spec: Mapping[str, Any]) -> list[ContainerSite]:
    predictor = spec.get("predictor")
    # With `containers` the predictor is an inline pod template of its own (locate.find_pod_sites), which
    # writes the same resourceClaims: a framework beside it is left to the report.
    if not isinstance(predictor, Mapping) or predictor.get("containers"):
        return []
    at = ["spec", "predictor"]
    return [ContainerSite(f"KServe predictor {framework}", join_pointer([*at, framework]), KSERVE_CONTAINER,
                          tuple((f, join_pointer([*at, f])) for f in (*_NODE_FIELDS, "resourceClaims")),
                          join_pointer(at))
            for framework in _KSERVE_FRAMEWORKS if isinstance(predictor.get(framework), Mapping)]


@dataclass(frozen=True)
class SitePlan:
    operations: tuple[dict[str, Any], ...]  # relative to the object
    notes: tuple[Note, ...]
    claims: tuple[ClaimObject, ...]


def plan_container_site(obj: Mapping[str, Any], site: ContainerSite,
                        translate: Callable[[Mapping[str, Any]], PodTranslation]) -> SitePlan:
    """The core's rewrite of the pod this site makes, each operation moved to where the CRD keeps it."""
    template = _pod_template(obj, site)
    translation = translate(template)
    notes = list(translation.notes)
    if translation.errors or not translation.patch:
        return SitePlan((), tuple(notes), ())
    operations: list[dict[str, Any]] = []
    pod_claims: list[Any] = []
    container_claims: list[Any] = []
    fields = dict(site.pod_fields)
    for op in translation.patch:
        path = str(op["path"])
        if site.claims_elsewhere and path.startswith("/spec/resourceClaims"):
            pod_claims.extend(op["value"] if path == "/spec/resourceClaims" else [op["value"]])
        elif site.claims_elsewhere and path.startswith("/spec/containers/0/resources/claims"):
            container_claims.extend(op["value"] if path.endswith("/claims") else [op["value"]])
        elif path.startswith("/spec/containers/0/") or path == "/spec/containers/0":
            operations.append({**op, "path": site.container_pointer + path[len("/spec/containers/0"):]})
        elif path.startswith("/metadata/"):
            operations.append(_metadata_operation(obj, site, op))
        else:
            field = path.split("/")[2]
            if field not in fields:
                notes.append(Note(Severity.ERROR, f"the rewrite needs the pod's {field}, which a {site.crd} has no "
                                                  "field for; left unchanged: migrate the pods it makes with the "
                                                  "admission webhook"))
                return SitePlan((), tuple(notes), ())
            operations.append({**op, "path": fields[field] + path[len("/spec/" + field):]})
    if (pod_claims or container_claims) and site.dra_resources_pointer is not None:
        entries = _dra_resources(pod_claims, container_claims)
        written = _get(obj, site.dra_resources_pointer)
        if written is not None and not isinstance(written, list):
            notes.append(Note(Severity.ERROR, "draResources is not a list; left unchanged"))
            return SitePlan((), tuple(notes), ())
        if written is None:
            operations.append({"op": "add", "path": site.dra_resources_pointer, "value": entries})
        else:
            operations.extend({"op": "add", "path": site.dra_resources_pointer + "/-", "value": e} for e in entries)
        notes.append(Note(Severity.INFO, "the claims are added as draResources, which the NIM operator puts on its "
                                         "pods and containers (NIM operator v3.0.0 or later; an older one ignores "
                                         "them: use the admission webhook there)"))
        notes.append(Note(Severity.WARNING, "draResources is immutable once the NIM service exists: apply this to "
                                            "a running one by deleting and recreating it"))
    elif pod_claims or container_claims:
        patched = _pod_spec_patch(obj, site, pod_claims, container_claims, notes)
        if patched is None:
            return SitePlan((), tuple(notes), ())
        operations.append({"op": "add", "path": site.patch_pointer, "value": patched})
        notes.append(Note(Severity.INFO, "the pod's resourceClaims and the container's claims are added through "
                                         "the template's podSpecPatch (the only place Argo takes them)"))
    try:
        apply_patch(to_plain(obj), operations)
    except PatchError as err:
        notes.append(Note(Severity.ERROR, f"the rewrite does not fit this {site.crd} ({err}); left unchanged; "
                                          "please report this as a kubectl-gpu bug"))
        return SitePlan((), tuple(notes), ())
    return SitePlan(tuple(operations), tuple(notes), translation.claims)


def _dra_resources(pod_claims: list[Any], container_claims: list[Any]) -> list[dict[str, Any]]:
    """NIM's draResources for the pod's claims: the claim object each names, and the requests of it
    the container uses (all of it when the container names no request)."""
    entries = []
    for claim in pod_claims:
        entry = ({"resourceClaimName": claim["resourceClaimName"]} if claim.get("resourceClaimName")
                 else {"resourceClaimTemplateName": claim["resourceClaimTemplateName"]})
        requests = [c["request"] for c in container_claims if c.get("name") == claim.get("name") and c.get("request")]
        if requests:
            entry["requests"] = requests
        entries.append(entry)
    return entries


def _pod_template(obj: Mapping[str, Any], site: ContainerSite) -> dict[str, Any]:
    container = dict(to_plain(resolve(obj, site.container_pointer)))
    if site.dra_resources_pointer is not None:  # a NIM service's settings: only its resources are the container's
        container = {k: v for k, v in container.items() if k == "resources"}
    container["name"] = site.container_name
    spec: dict[str, Any] = {"containers": [container]}
    for field, pointer in site.pod_fields:
        value = _get(obj, pointer)
        if value is not None:
            spec[field] = to_plain(value)
    metadata = _get(obj, site.metadata_pointer)
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    return {"metadata": {"annotations": to_plain(annotations)} if isinstance(annotations, Mapping) else {},
            "spec": spec}


def _metadata_operation(obj: Mapping[str, Any], site: ContainerSite, op: Mapping[str, Any]) -> dict[str, Any]:
    path = str(op["path"])
    if path == "/metadata/annotations" and not isinstance(_get(obj, site.metadata_pointer), Mapping):
        return {"op": "add", "path": site.metadata_pointer, "value": {"annotations": op["value"]}}
    return {**op, "path": site.metadata_pointer + path[len("/metadata"):]}


def _pod_spec_patch(obj: Mapping[str, Any], site: ContainerSite, pod_claims: list[Any], container_claims: list[Any],
                    notes: list[Note]) -> str | None:
    """The template's podSpecPatch with the claims merged in, as JSON (what Argo reads first), or None
    with an error when the patch as written cannot be merged."""
    assert site.patch_pointer is not None
    wanted = json.dumps({"resourceClaims": pod_claims,
                         "containers": [{"name": site.container_name, "resources": {"claims": container_claims}}]})
    written = _get(obj, site.patch_pointer)
    patch: Any = {}
    if written is not None:
        text = str(written)
        if "{{" in text:
            notes.append(Note(Severity.ERROR, f"podSpecPatch holds Argo parameters ({{{{...}}}}), so it cannot be "
                                              f"merged before Argo fills them in; left unchanged: add {wanted} to it "
                                              "yourself and remove the GPU limit"))
            return None
        try:
            patch = input_text.load(text) or {}
        except Exception as err:  # noqa: BLE001 - any YAML error: the text is the user's to fix
            notes.append(Note(Severity.ERROR, f"podSpecPatch does not parse as YAML or JSON ({err}); left unchanged"))
            return None
        if not isinstance(patch, Mapping) or not isinstance(patch.get("containers", []), list) \
                or not isinstance(patch.get("resourceClaims", []), list):
            notes.append(Note(Severity.ERROR, "podSpecPatch is not a PodSpec patch (a mapping whose containers and "
                                              "resourceClaims are lists); left unchanged"))
            return None
        patch = dict(patch)
    patch["resourceClaims"] = [*patch.get("resourceClaims", []), *pod_claims]
    containers = [dict(c) if isinstance(c, Mapping) else c for c in patch.get("containers", [])]
    main = next((c for c in containers if isinstance(c, dict) and c.get("name") == site.container_name), None)
    if main is None:
        main = {"name": site.container_name}
        containers.append(main)
    resources = dict(main.get("resources") or {})
    resources["claims"] = [*(resources.get("claims") or []), *container_claims]
    main["resources"] = resources
    patch["containers"] = containers
    return json.dumps(patch, separators=(",", ":"))


def _get(obj: Any, pointer: str) -> Any:
    try:
        return resolve(obj, pointer)
    except PatchError:
        return None
