"""Container specs outside a pod template whose custom resource still carries the pod's other fields:
the rewrite goes where the operator reads each of them.

  Argo Workflows (Workflow, WorkflowTemplate, ClusterWorkflowTemplate, CronWorkflow): a template's
      `container` or `script` is a corev1.Container; the pod's metadata, nodeSelector, affinity and
      tolerations are template fields; resourceClaims, and the container's `resources.claims`, only
      through the template's `podSpecPatch`, a strategic merge patch Argo applies to the pod spec
      (argoproj/argo-workflows pkg/apis/workflow/v1alpha1/workflow_types.go; workflow/util/util.go
      ApplyPodSpecPatch), where Argo names the container `main`.  A `containerSet`'s containers
      (ContainerNode inlines corev1.Container, container_set_template_types.go) are the pod's containers
      under their own names, with the same template fields and podSpecPatch.  `templateDefaults` is a
      Template the controller merges under every template of its type (operator.go
      mergedTemplateDefaultsInto: the template's own fields win), so its container/script/containerSet is
      rewritten with its own podSpecPatch, unless a template of that type writes a podSpecPatch of its
      own (it would replace the default's, claims and all) or a pod-making template of another type
      writes none (only the other types' fields are dropped from the defaults before the merge, so the
      default's podSpecPatch would reach that template's pod too), or a step or task runs another
      WorkflowTemplate's template (templateRef: the defaults are merged into it too, type unknown here).  The workflow's `podSpecPatch` (and a
      template's where its containers ask for no GPU) is a PodSpec fragment applied to every pod
      (workflowpod.go processPodSpecPatch: the workflow's, then the template's): its containers'
      GPUs are rewritten inside it, claims and all.
      All at argoproj/argo-workflows @ f016ad89eb269d282aec06dc491c29f396a38df4.
  KServe InferenceService: a predictor framework (`model`, `pytorch`, `triton`, ...) inlines a
      corev1.Container; the predictor inlines PodSpec (resourceClaims, nodeSelector, ...) and the
      component's pod `annotations` (kserve/kserve pkg/apis/serving/v1beta1/predictor.go).  Its PodSpec
      (podspec.go) has had resourceClaims since v0.11.0, but in Kubernetes 1.26-1.30's shape (a `source`
      holding the claim's name) until v0.15.0 (k8s.io/api v0.32): the CRD before it prunes the fields
      written here, so the report names the release needed.
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
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from kubectl_gpu import input_text
from kubectl_gpu.core import ClaimObject, Note, PodTranslation, Severity, family_of

from .nodes import to_plain
from .tree_patch import PatchError, apply_patch, join_pointer, resolve

_ARGO_KINDS = frozenset({"Workflow", "WorkflowTemplate", "ClusterWorkflowTemplate", "CronWorkflow"})
ARGO_MAIN_CONTAINER = "main"
# PredictorSpec's framework fields (each a PredictorExtensionSpec inlining corev1.Container).
_KSERVE_FRAMEWORKS = ("sklearn", "xgboost", "tensorflow", "pytorch", "triton", "onnx", "huggingface", "pmml",
                      "lightgbm", "paddle", "model")
KSERVE_CONTAINER = "kserve-container"
_NIM_GROUP = "apps.nvidia.com/"
# kserve/kserve config/crd/full/serving.kserve.io_inferenceservices.yaml at v0.14.0 (7e436424) and v0.15.0 (d20d4228).
KSERVE_REQUIREMENT = ("needs KServe v0.15.0 or later: earlier InferenceService CRDs take resourceClaims in Kubernetes "
                      "1.26-1.30's shape (`source: {resourceClaimTemplateName}`) and drop the fields written here, "
                      "leaving the pods a claim without a source; upgrade KServe first, or use the admission webhook")
_NODE_FIELDS = ("nodeSelector", "affinity", "tolerations")
_RESOURCE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]*\.[A-Za-z]+/[A-Za-z0-9][A-Za-z0-9._-]*")


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
    # Argo containerSet: container_pointer is the list of containers, each named by its own `name`.
    container_set: bool = False
    # Argo podSpecPatch: container_pointer is a string holding a PodSpec fragment, rewritten in place.
    spec_in_patch: bool = False
    refused: str | None = None  # why this site cannot be rewritten (an error note), or None
    requirement: str | None = None  # what the operator must be to take the rewrite (a warning with it)

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
    listed = spec.get("templates") if isinstance(spec.get("templates"), list) else []
    templates = [(index, t) for index, t in enumerate(listed) if isinstance(t, Mapping)]
    sites = []
    for index, template in templates:
        sites.extend(site for _, site in _argo_template_sites(template, [*path, "templates", index],
                                                              f"Argo template {template.get('name') or index}"))
        if not _containers_ask_for_gpus(template) and _gpu_in_patch(template.get("podSpecPatch")):
            sites.append(_argo_patch_site([*path, "templates", index, "podSpecPatch"],
                                          f"Argo template {template.get('name') or index} podSpecPatch"))
    defaults = spec.get("templateDefaults")
    if isinstance(defaults, Mapping):
        referenced = _argo_template_refs(t for _, t in templates)  # the same for every field of the defaults
        for field, site in _argo_template_sites(defaults, [*path, "templateDefaults"], "Argo templateDefaults"):
            own = [str(t.get("name") or i) for i, t in templates if field in t and t.get("podSpecPatch")]
            # Only the other types' fields are dropped from the defaults before the merge: the default's
            # podSpecPatch reaches every pod a template of another type makes (whose container is `main` too).
            others = [str(t.get("name") or i) for i, t in templates
                      if _argo_template_type(t) in _ARGO_POD_TYPES and _argo_template_type(t) != field
                      and not t.get("podSpecPatch")]
            if own:
                site = replace(site, refused=(
                    f"templates of this type write their own podSpecPatch ({', '.join(own)}), which replaces the "
                    "default's, so claims put there would not reach their pods; left unchanged: move the GPU into "
                    "each template, or use the admission webhook"))
            elif others:
                site = replace(site, refused=(
                    f"the default's podSpecPatch would reach the pods of templates of other types too "
                    f"({', '.join(others)}), giving them these claims (Argo merges every templateDefaults field but "
                    "the other types' into each template); left unchanged: move the GPU into each template, "
                    "or use the admission webhook"))
            elif referenced:
                site = replace(site, refused=(
                    f"steps or tasks run other WorkflowTemplates' templates (templateRef {', '.join(referenced)}), "
                    "which get these defaults and their podSpecPatch too, whatever their type; left unchanged: move "
                    "the GPU into each template, or use the admission webhook"))
            sites.append(site)
    if _gpu_in_patch(spec.get("podSpecPatch")):
        site = _argo_patch_site([*path, "podSpecPatch"], "Argo workflow podSpecPatch")
        if any(_containers_ask_for_gpus(t) or _gpu_in_patch(t.get("podSpecPatch"))
               for t in [*(t for _, t in templates), *([defaults] if isinstance(defaults, Mapping) else [])]):
            # Argo applies the workflow's patch before a template's: its limits beat the container's, but its
            # claims would lose to a template's claims of the same name.
            site = replace(site, refused=(
                "the workflow's podSpecPatch asks for GPUs and so do its templates; which one a pod gets depends on "
                "the order Argo applies them in, which claims cannot keep; left unchanged: ask for the GPUs in one "
                "place, or use the admission webhook"))
        sites.append(site)
    return sites


# Template.GetType's order, and the types whose templates make a pod (IsPodType), in
# pkg/apis/workflow/v1alpha1/workflow_types.go @ f016ad89.
_ARGO_TEMPLATE_TYPES = ("container", "containerSet", "steps", "dag", "script", "resource", "data", "suspend", "http",
                        "plugin")
_ARGO_POD_TYPES = frozenset({"container", "containerSet", "script", "resource", "data"})


def _argo_template_type(template: Mapping[str, Any]) -> str | None:
    return next((t for t in _ARGO_TEMPLATE_TYPES if template.get(t) is not None), None)


def _argo_template_refs(templates: Iterable[Mapping[str, Any]]) -> list[str]:
    """`name/template` of each templateRef a template's steps or DAG tasks run (WorkflowStep.TemplateRef,
    DAGTask.TemplateRef): operator.go executeTemplate merges the workflow's templateDefaults into those too."""
    calls: list[Any] = []
    for template in templates:
        steps = template.get("steps")
        for group in steps if isinstance(steps, list) else ():
            calls.extend(group if isinstance(group, list) else ())
        dag = template.get("dag")
        tasks = dag.get("tasks") if isinstance(dag, Mapping) else None
        calls.extend(tasks if isinstance(tasks, list) else ())
    refs = [call.get("templateRef") for call in calls if isinstance(call, Mapping)]
    return sorted({f"{r.get('name')}/{r.get('template')}" for r in refs if isinstance(r, Mapping)})


def _argo_template_sites(template: Mapping[str, Any], at: list[str | int],
                         name: str) -> list[tuple[str, ContainerSite]]:
    """(the template's field, its site): a container, a script or a containerSet."""
    fields = tuple((f, join_pointer([*at, f])) for f in _NODE_FIELDS)
    sites = [(field, ContainerSite(f"{name} ({field})", join_pointer([*at, field]), ARGO_MAIN_CONTAINER, fields,
                                   join_pointer([*at, "metadata"]), join_pointer([*at, "podSpecPatch"])))
             for field in ("container", "script") if isinstance(template.get(field), Mapping)]
    container_set = template.get("containerSet")
    if isinstance(container_set, Mapping) and isinstance(container_set.get("containers"), list):
        sites.append(("containerSet", ContainerSite(
            f"{name} (containerSet)", join_pointer([*at, "containerSet", "containers"]), "", fields,
            join_pointer([*at, "metadata"]), join_pointer([*at, "podSpecPatch"]), container_set=True)))
    return sites


def _argo_patch_site(at: list[str | int], name: str) -> ContainerSite:
    return ContainerSite(name, join_pointer(at), "", (), "", spec_in_patch=True)


def _containers_ask_for_gpus(template: Mapping[str, Any]) -> bool:
    """A template's container, script or containerSet asks for a legacy GPU resource."""
    container_set = template.get("containerSet")
    containers = [template.get("container"), template.get("script"),
                  *(container_set.get("containers") or [] if isinstance(container_set, Mapping) else [])]
    for container in containers:
        resources = container.get("resources") if isinstance(container, Mapping) else None
        for section in ("limits", "requests"):
            values = resources.get(section) if isinstance(resources, Mapping) else None
            if isinstance(values, Mapping) and any(family_of(str(name)) for name in values):
                return True
    return False


def _gpu_in_patch(text: Any) -> bool:
    """A podSpecPatch string that names a legacy GPU resource (read closely only then)."""
    return isinstance(text, str) and any(family_of(name) for name in _RESOURCE_NAME.findall(text))


def _kserve_sites(spec: Mapping[str, Any]) -> list[ContainerSite]:
    predictor = spec.get("predictor")
    # With `containers` the predictor is an inline pod template of its own (locate.find_pod_sites), which
    # writes the same resourceClaims: a framework beside it is left to the report.
    if not isinstance(predictor, Mapping) or predictor.get("containers"):
        return []
    at = ["spec", "predictor"]
    return [ContainerSite(f"KServe predictor {framework}", join_pointer([*at, framework]), KSERVE_CONTAINER,
                          tuple((f, join_pointer([*at, f])) for f in (*_NODE_FIELDS, "resourceClaims")),
                          join_pointer(at), requirement=KSERVE_REQUIREMENT)
            for framework in _KSERVE_FRAMEWORKS if isinstance(predictor.get(framework), Mapping)]


_CONTAINER_PATH = re.compile(r"^/spec/containers/(?P<index>\d+)(?P<rest>(/.*)?)$")


@dataclass(frozen=True)
class SitePlan:
    operations: tuple[dict[str, Any], ...]  # relative to the object
    notes: tuple[Note, ...]
    claims: tuple[ClaimObject, ...]


def plan_container_site(obj: Mapping[str, Any], site: ContainerSite,
                        translate: Callable[[Mapping[str, Any]], PodTranslation]) -> SitePlan:
    """The core's rewrite of the pod this site makes, each operation moved to where the CRD keeps it."""
    if site.refused is not None:
        return SitePlan((), (Note(Severity.ERROR, site.refused),), ())
    if site.spec_in_patch:
        return _plan_spec_patch(obj, site, translate)
    template = _pod_template(obj, site)
    translation = translate(template)
    notes = list(translation.notes)
    if translation.errors or not translation.patch:
        return SitePlan((), tuple(notes), ())
    operations: list[dict[str, Any]] = []
    pod_claims: list[Any] = []
    container_claims: dict[str, list[Any]] = {}  # container name -> its claims
    names = [str(c.get("name", "")) for c in template["spec"]["containers"]]
    fields = dict(site.pod_fields)
    for op in translation.patch:
        path = str(op["path"])
        container = _CONTAINER_PATH.match(path)
        if site.claims_elsewhere and path.startswith("/spec/resourceClaims"):
            pod_claims.extend(op["value"] if path == "/spec/resourceClaims" else [op["value"]])
        elif container is not None and site.claims_elsewhere and container["rest"].startswith("/resources/claims"):
            container_claims.setdefault(names[int(container["index"])], []).extend(
                op["value"] if container["rest"] == "/resources/claims" else [op["value"]])
        elif container is not None:
            index = int(container["index"])
            at = f"{site.container_pointer}/{index}" if site.container_set else site.container_pointer
            operations.append({**op, "path": at + container["rest"]})
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
        entries = _dra_resources(pod_claims, [c for claims in container_claims.values() for c in claims])
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
    if site.requirement is not None:
        notes.append(Note(Severity.WARNING, site.requirement))
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
    if site.container_set:  # ContainerNodes: a Container and its dependencies
        containers = [{k: v for k, v in to_plain(c).items() if k != "dependencies"} if isinstance(c, Mapping) else c
                      for c in resolve(obj, site.container_pointer)]
    else:
        container = dict(to_plain(resolve(obj, site.container_pointer)))
        if site.dra_resources_pointer is not None:  # a NIM service's settings: only its resources are the container's
            container = {k: v for k, v in container.items() if k == "resources"}
        container["name"] = site.container_name
        containers = [container]
    spec: dict[str, Any] = {"containers": containers}
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


def _pod_spec_patch(obj: Mapping[str, Any], site: ContainerSite, pod_claims: list[Any],
                    container_claims: Mapping[str, list[Any]], notes: list[Note]) -> str | None:
    """The template's podSpecPatch with the claims merged in, as JSON (what Argo reads first), or None
    with an error when the patch as written cannot be merged."""
    assert site.patch_pointer is not None
    wanted = json.dumps({"resourceClaims": pod_claims,
                         "containers": [{"name": name, "resources": {"claims": claims}}
                                        for name, claims in container_claims.items()]})
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
    for name, claims in container_claims.items():
        found = next((c for c in containers if isinstance(c, dict) and c.get("name") == name), None)
        if found is None:
            found = {"name": name}
            containers.append(found)
        resources = dict(found.get("resources") or {})
        resources["claims"] = [*(resources.get("claims") or []), *claims]
        found["resources"] = resources
    patch["containers"] = containers
    return json.dumps(patch, separators=(",", ":"))


def _plan_spec_patch(obj: Mapping[str, Any], site: ContainerSite,
                     translate: Callable[[Mapping[str, Any]], PodTranslation]) -> SitePlan:
    """A podSpecPatch that asks for GPUs itself: a PodSpec fragment, translated as an inline pod spec and
    written back as JSON with its claims in it (Argo applies it to every pod it patches)."""
    text = str(resolve(obj, site.container_pointer))
    if "{{" in text:
        return SitePlan((), (Note(Severity.ERROR, "podSpecPatch asks for GPUs through Argo parameters ({{...}}), "
                                                  "which are filled in at run time; left unchanged: use the "
                                                  "admission webhook for these pods"),), ())
    try:
        patch = input_text.load(text)
    except Exception as err:  # noqa: BLE001 - any YAML error: the text is the user's to fix
        return SitePlan((), (Note(Severity.ERROR, f"podSpecPatch does not parse as YAML or JSON ({err}); left "
                                                  "unchanged"),), ())
    if not isinstance(patch, Mapping) or not isinstance(patch.get("containers"), list):
        return SitePlan((), (Note(Severity.ERROR, "podSpecPatch asks for GPUs outside a containers list; left "
                                                  "unchanged"),), ())
    spec = to_plain(patch)
    translation = translate({"metadata": {}, "spec": spec})
    notes = list(translation.notes)
    if translation.errors or not translation.patch:
        return SitePlan((), tuple(notes), ())
    inside = [{**op, "path": str(op["path"])[len("/spec"):]} for op in translation.patch
              if str(op["path"]).startswith("/spec/")]
    try:
        apply_patch(spec, inside)
    except PatchError as err:
        notes.append(Note(Severity.ERROR, f"the rewrite does not fit this podSpecPatch ({err}); left unchanged; "
                                          "please report this as a kubectl-gpu bug"))
        return SitePlan((), tuple(notes), ())
    if len(inside) < len(translation.patch):
        notes.append(Note(Severity.INFO, "a podSpecPatch has no pod metadata, so the record of the original "
                                         "requests (annotation) was not added"))
    notes.append(Note(Severity.INFO, "rewritten inside the podSpecPatch, claims included"))
    return SitePlan(({"op": "replace", "path": site.container_pointer,
                      "value": json.dumps(spec, separators=(",", ":"))},), tuple(notes), translation.claims)


def _get(obj: Any, pointer: str) -> Any:
    try:
        return resolve(obj, pointer)
    except PatchError:
        return None
