"""Decide what migrate changes, without changing anything, one document at a time.

For every pod template of every object the core is asked what to do; its patch is rebased
onto the document and tried on a plain copy first, so a patch that does not fit is an
error for that template rather than a half-rewritten manifest.  Each DRA object the
patched pods need is placed once per (kind, namespace, name), before the first object
that needs it, unless the input already holds it.

Documents are planned in stream order and dropped once written (manifests/migration.py), so
the only facts that cross documents are kept here, small: the DRA objects and claims the input
already holds (found by a cheap pre-scan, `scan_inputs`) and the objects already emitted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kubectl_gpu.core import (ClaimObject, KnownClaim, Note, PodTranslation, QuotaTarget, Severity, TranslateOptions,
                              is_cluster_queue, is_resource_quota, known_claims, mig_profile_of, plan_quota,
                              queue_change, volcano_queue_change, is_volcano_queue)
from kubectl_gpu.dra.conversion import CONVERTED_KINDS, Conversion, conversion_patch, dra_version_of
from kubectl_gpu.dra.facts import COMPUTE_DOMAIN_KIND, gpu_device_class_names

from .loader import Format, ParsedDocument, Source, open_source
from .read_back import is_live, live_pod_warning, server_set_pointers
from .container_sites import KSERVE_REQUIREMENT, ContainerSite, find_container_sites, plan_container_site
from .locate import Unrewritable, PodSite, find_pod_sites, find_unrewritable
from .nodes import to_plain
from .objects import ObjectRef, iter_objects
from .stream import Chunk
from .ray import KeptCount, keep_gpu_count, ray_groups
from .tree_patch import PatchError, apply_patch, resolve

Translator = Callable[[Mapping[str, Any], TranslateOptions], PodTranslation]

DRA_KINDS = frozenset({"ResourceClaimTemplate", "ResourceClaim"})
KNOWN_CLAIM_KINDS = DRA_KINDS | {COMPUTE_DOMAIN_KIND}
DEVICE_CLASS_KIND = "DeviceClass"


@dataclass(frozen=True)
class DraTarget:
    """The resource.k8s.io versions the target cluster serves (its Kubernetes release, from a cluster
    profile): the input's ResourceClaims, ResourceClaimTemplates and DeviceClasses written in one it
    does not serve are rewritten to ``version``, the newest it serves (dra/conversion.py)."""

    version: str  # "v1"
    served: tuple[str, ...]
    kubernetes_minor: int


@dataclass(frozen=True)
class MigrateOptions:
    translate: TranslateOptions = TranslateOptions()
    namespace: str | None = None  # for objects that name none (like kubectl's --namespace)
    # Files written back one by one are applied one by one (GitOps, `kubectl apply -f file`), so
    # each carries the DRA objects its own pods need: a duplicate object is applied idempotently,
    # a missing one leaves pods Pending forever.  A single output stream gets each object once.
    self_contained_files: bool = False
    # The claims the cluster holds, by namespace (migrate --from-cluster); migrate_files adds the input's.
    known_claims: Mapping[str | None, tuple[KnownClaim, ...]] = field(default_factory=dict)
    # What the target cluster's ResourceQuota counts (cluster.quota.quota_target), and whether MIG
    # requests stay in the pods (--device-classes on a cluster serving extended resources).
    quota_target: QuotaTarget = QuotaTarget()
    mig_stays_legacy: bool = False
    # migrate --kueue: Kueue ClusterQueues get the MIG device count their quotas need (fleet/kueue.py).
    kueue: bool = False
    # With a cluster profile: DRA objects of the input in a version it no longer serves are rewritten.
    dra_target: DraTarget | None = None


class _Rewrite:
    """A planned rewrite of part of a document: its operations and notes (set by the dataclasses below)."""

    operations: tuple[dict[str, Any], ...]  # paths relative to the document tree
    notes: tuple[Note, ...]

    @property
    def changed(self) -> bool:
        return bool(self.operations)

    @property
    def failed(self) -> bool:
        return any(n.severity is Severity.ERROR for n in self.notes)


@dataclass(frozen=True)
class TemplatePlan(_Rewrite):
    obj: ObjectRef
    site: PodSite
    operations: tuple[dict[str, Any], ...]
    notes: tuple[Note, ...]


@dataclass(frozen=True)
class QuotaChange(_Rewrite):
    """A ResourceQuota (kubectl_gpu.core.quota), a Kueue ClusterQueue (kubectl_gpu.core.kueue) or a
    Volcano Queue (kubectl_gpu.core.volcano) whose GPU caps follow the migration."""

    obj: ObjectRef
    operations: tuple[dict[str, Any], ...]
    notes: tuple[Note, ...]
    added: tuple[str, ...]  # "key: value" of each entry added
    # Kueue's deviceClassMappings the ClusterQueue relies on (none for a ResourceQuota).
    mappings: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class VersionChange(_Rewrite):
    """A DRA object of the input rewritten to a resource.k8s.io version the target cluster serves."""

    obj: ObjectRef
    operations: tuple[dict[str, Any], ...]
    notes: tuple[Note, ...]
    source: str  # "resource.k8s.io/v1beta1"
    target: str


@dataclass(frozen=True)
class Emission:
    """A DRA object to add to the output, just before the first object that needs it."""

    kind: str
    name: str
    namespace: str | None
    manifest: dict[str, Any]
    before: ObjectRef


@dataclass(frozen=True)
class ObjectNote:
    """A note about an object as a whole (unrewritable GPU specs, existing DRA objects)."""

    obj: ObjectRef
    severity: Severity
    message: str
    legacy_left: bool = False  # a GPU request migrate cannot rewrite stays in this object


@dataclass(frozen=True)
class DocumentIssue:
    document: int
    line: int
    severity: Severity
    message: str


@dataclass
class FilePlan:
    source: Source
    format: Format
    templates: list[TemplatePlan] = field(default_factory=list)
    emissions: list[Emission] = field(default_factory=list)
    object_notes: list[ObjectNote] = field(default_factory=list)
    issues: list[DocumentIssue] = field(default_factory=list)
    objects: list[ObjectRef] = field(default_factory=list)
    # Objects written back as read, never parsed: their text names nothing migrate reacts to
    # (passthrough.py).
    objects_passed: int = 0
    quotas: list[QuotaChange] = field(default_factory=list)
    conversions: list[VersionChange] = field(default_factory=list)

    @property
    def not_migrated(self) -> bool:
        """Something in this file could not be migrated (exit code 3)."""
        return (any(i.severity is Severity.ERROR for i in self.issues) or any(t.failed for t in self.templates)
                or any(q.failed for q in self.quotas))

    @property
    def legacy_left(self) -> bool:
        """GPU requests are left that migrate cannot rewrite (`--check` fails: exits.LEGACY_LEFT)."""
        return any(n.legacy_left for n in self.object_notes)


ObjectKey = tuple[str, str | None, str]

# Text that can only belong to a document holding one of KNOWN_CLAIM_KINDS or a DeviceClass
# (`kind: ResourceClaim...`, `kind: ComputeDomain`, `kind: DeviceClass`; a pod's
# `resourceClaimTemplateName` and a request's `deviceClassName` start in lower case).
_KIND_TEXTS = ("ResourceClaim", COMPUTE_DOMAIN_KIND, DEVICE_CLASS_KIND)


@dataclass(frozen=True)
class InputFacts:
    """What the planning of one document needs to know about all the others."""

    # The ResourceClaimTemplates and ResourceClaims the inputs already hold, by (kind, namespace,
    # name), with their plain specs: not emitted again.
    present: dict[ObjectKey, Any]
    # Claims the inputs hold (and the channel templates their ComputeDomains make), by namespace:
    # the core refuses a legacy GPU beside one that allocates GPUs, whichever file it is in.
    known_claims: dict[str | None, tuple[KnownClaim, ...]]
    # DeviceClasses of the input that select NVIDIA GPUs under names of their own: their claims are
    # GPU claims (TranslateOptions.gpu_device_classes).
    gpu_device_classes: frozenset[str] = frozenset()


def scan_inputs(sources: Iterable[Source], namespace: str | None, dra_target: DraTarget | None = None) -> InputFacts:
    """The facts that cross documents, found before the first document is planned.  Cheap: only
    the documents whose text names one of the kinds are parsed (and dropped at once); a stream
    without one costs a substring search per kind.  Claims the run rewrites to ``dra_target``'s
    version are known by their rewritten specs."""
    present: dict[ObjectKey, Any] = {}
    found: dict[str | None, list[KnownClaim]] = {}
    device_classes: list[Any] = []
    for source in sources:
        needles = [text for text in _KIND_TEXTS if text in source.text]
        if not needles:
            continue
        for index, document in enumerate(open_source(source).documents_naming(needles)):
            for ref, obj in iter_objects(index, document.tree):
                if ref.kind == DEVICE_CLASS_KIND:
                    device_classes.append(to_plain(obj))
                if ref.kind not in KNOWN_CLAIM_KINDS:
                    continue
                plain = _as_target(to_plain(obj), dra_target)
                found.setdefault(ref.namespace or namespace, []).extend(known_claims(plain))
                if ref.kind in DRA_KINDS and ref.name:
                    present[(ref.kind, ref.namespace or namespace, ref.name)] = plain.get("spec")
    return InputFacts(present, {ns: tuple(claims) for ns, claims in found.items()},
                      gpu_device_class_names(device_classes))


class Planner:
    """Plans the documents of a run in stream order.  `present` (the DRA objects the input
    already holds) and `emitted` (the ones already placed) are what crosses documents."""

    def __init__(self, options: MigrateOptions, translate: Translator,
                 present: dict[ObjectKey, Any], emitted: set[ObjectKey] | None = None,
                 unread: Callable[[Chunk], bool] | None = None) -> None:
        self.options = options
        self.translate = translate
        # Which YAML documents need no planning, so that they are written back unparsed (None: all
        # are planned); see manifests/__init__.py Unread.
        self.unread = unread
        self.present = present
        self.emitted: set[ObjectKey] = set() if emitted is None else emitted

    def plan_document(self, plan: FilePlan, index: int, document: ParsedDocument) -> None:
        """Add what document `index` needs to `plan` (its templates, notes, emissions)."""
        if document.error is not None:
            plan.issues.append(DocumentIssue(
                index, document.line, Severity.ERROR,
                f"could not parse this document ({document.error}); it is passed through unchanged: "
                "fix the YAML and run migrate again"))
            return
        if not _usable(index, document, plan):
            return
        options, translate = self.options, self.translate
        for ref, obj in iter_objects(index, document.tree):
            plan.objects.append(ref)
            if ref.kind in CONVERTED_KINDS:
                if options.dra_target is not None:
                    conversion = _plan_conversion(ref, obj, options.dra_target)
                    if conversion is not None:
                        plan.conversions.append(conversion)
                continue
            if ref.kind in QUOTA_PLANNERS and (ref.kind != "ClusterQueue" or options.kueue):
                quota = QUOTA_PLANNERS[ref.kind](ref, obj, options)
                if quota is not None:
                    plan.quotas.append(quota)
                continue
            sites = find_pod_sites(obj)
            container_sites = find_container_sites(obj)
            for finding in find_unrewritable(obj, sites, tuple(c.container_pointer for c in container_sites)):
                plan.object_notes.append(ObjectNote(ref, Severity.WARNING, _finding_text(finding),
                                                    legacy_left=finding.request_left))
            first_template = len(plan.templates)
            for site in sites:
                try:
                    template_plan, claims = _plan_template(ref, obj, site, options, translate)
                except Exception as err:  # noqa: BLE001 - one odd template must not stop the run
                    # Nothing has been changed yet: the template stays as written, the run goes on.
                    template_plan, claims = TemplatePlan(ref, site, (), (Note(
                        Severity.ERROR,
                        f"could not plan this pod template ({type(err).__name__}: {err}); left unchanged: "
                        "please report this as a kubectl-gpu bug with the manifest"),)), ()
                plan.templates.append(template_plan)
                _place_claims(plan, ref, claims, options, self.present, self.emitted)
            for container_site in container_sites:
                template_plan, claims = _plan_container_site(ref, obj, container_site, options, translate)
                plan.templates.append(template_plan)
                _place_claims(plan, ref, claims, options, self.present, self.emitted)
            _keep_ray_gpu_counts(plan, ref, obj, first_template)
            _prepare_live_object(plan, ref, obj, first_template)


def _keep_ray_gpu_counts(plan: FilePlan, ref: ObjectRef, obj: Mapping[str, Any], first_template: int) -> None:
    """A Ray group whose GPU limit became a claim gets the `num-gpus` KubeRay read from it (ray.py),
    added to that group's template plan so it is written with it or not at all."""
    by_pointer = {plan.templates[i].site.pointer: i for i in range(first_template, len(plan.templates))
                  if plan.templates[i].changed}
    for group in ray_groups(obj):
        index = by_pointer.get(group.template_pointer)
        if index is None:
            continue
        template = plan.templates[index]
        relative = [{**op, "path": str(op["path"])[len(ref.pointer):]} for op in template.operations]
        kept = keep_gpu_count(obj, group, relative)
        if isinstance(kept, KeptCount):
            operation = {**kept.operation, "path": ref.pointer + kept.operation["path"]}
            plan.templates[index] = replace(template, operations=template.operations + (operation,))
            plan.object_notes.append(ObjectNote(ref, Severity.INFO, kept.message))
        elif kept is not None:
            plan.object_notes.append(ObjectNote(ref, Severity.WARNING, kept))


def _prepare_live_object(plan: FilePlan, ref: ObjectRef, obj: Mapping[str, Any], first_template: int) -> None:
    """An object read back from a cluster and rewritten: drop what the API server set, so the
    output applies (see read_back.py); say that a live Pod must be migrated through its owner."""
    changed = [i for i in range(first_template, len(plan.templates)) if plan.templates[i].changed]
    if not changed or not is_live(obj):
        return
    pointers = server_set_pointers(obj)
    if pointers:
        last = plan.templates[changed[-1]]
        removals = tuple({"op": "remove", "path": ref.pointer + pointer} for pointer in pointers)
        plan.templates[changed[-1]] = replace(last, operations=last.operations + removals)
        names = ", ".join(pointer.lstrip("/").replace("/", ".") for pointer in pointers)
        plan.object_notes.append(ObjectNote(
            ref, Severity.INFO,
            f"read from a cluster: removed what the API server sets ({names}) so the output can be applied"))
    warning = live_pod_warning(obj)
    if warning is not None:
        plan.object_notes.append(ObjectNote(ref, Severity.WARNING, warning))


def _converted(obj: Mapping[str, Any], target: DraTarget | None) -> Conversion | None:
    """The rewrite of ``obj`` to ``target``'s version when the target does not serve its own, or None."""
    version = dra_version_of(obj)
    if target is None or version is None or version in target.served:
        return None
    return conversion_patch(obj, target.version)


def _as_target(plain: dict[str, Any], target: DraTarget | None) -> dict[str, Any]:
    """``plain`` as this run writes it: rewritten to the target's version where it must be."""
    conversion = _converted(plain, target)
    if conversion is not None:
        apply_patch(plain, conversion.operations)
    return plain


def _plan_conversion(ref: ObjectRef, obj: Mapping[str, Any], target: DraTarget) -> VersionChange | None:
    conversion = _converted(to_plain(obj), target)
    if conversion is None:
        return None
    version = conversion.source.partition("/")[2]
    message = f"Kubernetes 1.{target.kubernetes_minor} does not serve {version}"
    if conversion.requests_wrapped:
        message += (f"; the fields of {conversion.requests_wrapped} request(s) moved under `exactly`, as the API "
                    "server converts them")
    operations = tuple({**op, **{k: ref.pointer + op[k] for k in ("path", "from") if k in op}}
                       for op in conversion.operations)
    return VersionChange(ref, operations, (Note(Severity.INFO, message),), conversion.source, conversion.target)


def _plan_quota(ref: ObjectRef, obj: Mapping[str, Any], options: MigrateOptions) -> QuotaChange | None:
    """The entries a ResourceQuota needs so its GPU caps hold once its namespace's pods hold claims."""
    plain = to_plain(obj)
    if not is_resource_quota(plain):
        return None
    if ref.namespace is None and options.namespace:
        plain.setdefault("metadata", {})["namespace"] = options.namespace
    translate = options.translate
    if options.mig_stays_legacy:
        hard = (plain.get("spec") or {}).get("hard") or {}
        mig = {str(k).strip().removeprefix("requests.") for k in hard if isinstance(k, str)}
        translate = replace(translate, dra_extended_resources=translate.dra_extended_resources
                            | {name for name in mig if mig_profile_of(name)})
    quota = plan_quota(plain, translate, options.quota_target)
    if not quota.notes:
        return None
    return _cap_change(ref, plain, quota.patch, quota.notes, tuple(f"{e.key}: {e.value}" for e in quota.entries))


def _plan_queue(ref: ObjectRef, obj: Mapping[str, Any], options: MigrateOptions) -> QuotaChange | None:
    """What a Kueue ClusterQueue needs so that its GPU quota counts claims."""
    plain = to_plain(obj)
    if not is_cluster_queue(plain):
        return None
    change = queue_change(plain, options.translate)
    if not change.notes:
        return None
    added = tuple(f"{op['value']['name']}: {op['value']['nominalQuota']}" for op in change.operations
                  if isinstance(op["value"], Mapping))
    return _cap_change(ref, plain, change.operations, change.notes, added, change.mappings)


def _plan_volcano_queue(ref: ObjectRef, obj: Mapping[str, Any], options: MigrateOptions) -> QuotaChange | None:
    """What a Volcano Queue needs so that its GPU caps count claims (kubectl_gpu.core.volcano)."""
    plain = to_plain(obj)
    if not is_volcano_queue(plain):
        return None
    change = volcano_queue_change(plain, options.translate)
    if not change.notes:
        return None
    return _cap_change(ref, plain, change.operations, change.notes, change.added)


def _cap_change(ref: ObjectRef, plain: Mapping[str, Any], patch: Iterable[dict[str, Any]], notes: tuple[Note, ...],
                added: tuple[str, ...], mappings: tuple[dict[str, Any], ...] = ()) -> QuotaChange:
    """The object's change at its place in the document; a live object also loses its server-set fields."""
    operations = [{**op, "path": ref.pointer + op["path"]} for op in patch]
    if operations and is_live(plain):
        operations += [{"op": "remove", "path": ref.pointer + pointer} for pointer in server_set_pointers(plain)]
    return QuotaChange(ref, tuple(operations), notes, added, mappings)


# The kinds whose GPU caps follow the migration, and who plans each.
QUOTA_PLANNERS = {"ResourceQuota": _plan_quota, "ClusterQueue": _plan_queue, "Queue": _plan_volcano_queue}


def _usable(index: int, document: ParsedDocument, plan: FilePlan) -> bool:
    usable = True
    for duplicate in document.duplicates:
        if duplicate.same_value:
            plan.issues.append(DocumentIssue(
                index, duplicate.line, Severity.WARNING,
                f"line {duplicate.line}: key {duplicate.key!r} appears twice with the same value; kubectl's "
                "strict validation rejects duplicates (a rewritten document keeps one)"))
        else:
            usable = False
            plan.issues.append(DocumentIssue(
                index, duplicate.line, Severity.ERROR,
                f"line {duplicate.line}: key {duplicate.key!r} appears twice with different values; Kubernetes "
                "would silently keep the last one, so this document is not migrated: remove the one you do "
                "not mean"))
    return usable


def _finding_text(finding: Unrewritable) -> str:
    return f"{finding.where}: {finding.message}"


def _plan_template(
    ref: ObjectRef,
    obj: Mapping[str, Any],
    site: PodSite,
    options: MigrateOptions,
    translate: Translator,
) -> tuple[TemplatePlan, tuple[ClaimObject, ...]]:
    node = resolve(obj, site.pointer)
    template = {"metadata": {}, "spec": to_plain(node)} if site.inline else to_plain(node)
    misshapen = _misshapen_fields(template)
    if misshapen:
        return TemplatePlan(ref, site, (), (Note(Severity.ERROR, misshapen),)), ()
    translation = translate(template, _translate_options(ref, options))
    notes = list(translation.notes)
    if translation.errors or not translation.patch:
        return TemplatePlan(ref, site, (), tuple(notes)), () if translation.errors else translation.claims
    try:
        apply_patch(template, translation.patch)
    except PatchError as err:
        notes.append(Note(Severity.ERROR, f"the rewrite does not fit this pod template ({err}); left unchanged; "
                                          "please report this as a kubectl-gpu bug"))
        return TemplatePlan(ref, site, (), tuple(notes)), ()
    operations: list[dict[str, Any]] = []
    dropped_metadata = False
    for operation in translation.patch:
        rebased = _rebase(operation, ref, site)
        if rebased is None:
            dropped_metadata = True
        else:
            operations.append(rebased)
    if dropped_metadata:
        notes.append(Note(Severity.INFO, "this pod spec has no pod metadata of its own, so the record of the "
                                         "original requests (annotation) was not added"))
    if translation.claims and obj.get("kind") == "InferenceService" \
            and str(obj.get("apiVersion", "")).startswith("serving.kserve.io/"):
        notes.append(Note(Severity.WARNING, KSERVE_REQUIREMENT))  # its PodSpec's resourceClaims shape
    return TemplatePlan(ref, site, tuple(operations), tuple(notes)), translation.claims


def _plan_container_site(ref: ObjectRef, obj: Mapping[str, Any], site: ContainerSite, options: MigrateOptions,
                         translate: Translator) -> tuple[TemplatePlan, tuple[ClaimObject, ...]]:
    """A container spec outside a pod template whose CRD keeps the pod's fields elsewhere
    (container_sites.py), planned as a pod template: reported under the container's place."""
    translate_options = _translate_options(ref, options)
    where = PodSite(site.container_pointer, site.container_pointer, inline=True, label=site.crd)
    try:
        planned = plan_container_site(obj, site, lambda template: translate(template, translate_options))
    except Exception as err:  # noqa: BLE001 - one odd container must not stop the run
        return TemplatePlan(ref, where, (), (Note(
            Severity.ERROR, f"could not plan this {site.crd} ({type(err).__name__}: {err}); left unchanged: "
                            "please report this as a kubectl-gpu bug with the manifest"),)), ()
    operations = tuple({**op, "path": ref.pointer + str(op["path"])} for op in planned.operations)
    return TemplatePlan(ref, where, operations, planned.notes), planned.claims


# The fields a rewrite reads or writes, with the JSON type Kubernetes requires of each: a
# rewrite on top of any other shape would overwrite what the author wrote.
_LIST_FIELDS = ("resourceClaims", "containers", "initContainers")
_CONTAINER_MAPS = ("resources",)
_RESOURCE_MAPS = ("limits", "requests")


def _misshapen_fields(template: Mapping[str, Any]) -> str | None:
    """Why this pod template cannot be rewritten safely (a field Kubernetes would reject as
    the wrong type), or None."""
    metadata = template.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        return _wrong_type("metadata", metadata, "a mapping")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    if annotations is not None and not isinstance(annotations, Mapping):
        return _wrong_type("metadata.annotations", annotations, "a mapping")
    spec = template.get("spec")
    if not isinstance(spec, Mapping):
        return None
    for name in _LIST_FIELDS:
        value = spec.get(name)
        if value is not None and not isinstance(value, list):
            return _wrong_type(f"spec.{name}", value, "a list")
    for name in ("containers", "initContainers"):
        for index, container in enumerate(spec.get(name) or []):
            if not isinstance(container, Mapping):
                continue
            resources = container.get("resources")
            where = f"spec.{name}[{index}]"
            if resources is None:
                continue
            if not isinstance(resources, Mapping):
                return _wrong_type(f"{where}.resources", resources, "a mapping")
            for section in _RESOURCE_MAPS:
                value = resources.get(section)
                if value is not None and not isinstance(value, Mapping):
                    return _wrong_type(f"{where}.resources.{section}", value, "a mapping")
            claims = resources.get("claims")
            if claims is not None and not isinstance(claims, list):
                return _wrong_type(f"{where}.resources.claims", claims, "a list")
    return None


def _wrong_type(field_name: str, value: Any, expected: str) -> str:
    found = "a mapping" if isinstance(value, Mapping) else "a list" if isinstance(value, list) else "a scalar"
    return (f"{field_name} is {found}, but Kubernetes requires {expected} here (the API server would reject "
            "this object); left unchanged so nothing you wrote is overwritten: fix the field and run migrate again")


def _translate_options(ref: ObjectRef, options: MigrateOptions) -> TranslateOptions:
    """The core's options for one object's pods: its workload to share with, the claims it can see."""
    # An object that names no namespace goes where kubectl puts it: perhaps the pod's.
    namespace = ref.namespace or options.namespace
    known = options.known_claims.get(namespace, ()) + (options.known_claims.get(None, ()) if namespace else ())
    return replace(options.translate, sharing_group=_sharing_group(ref), known_claims=known)


def _sharing_group(ref: ObjectRef) -> str | None:
    # A bare Pod (or a PodTemplate object) is one pod: there is no workload to share with.
    if ref.kind in (None, "Pod", "PodTemplate") or not ref.name:
        return None
    return f"{ref.kind}/{ref.name}"


def _rebase(operation: Mapping[str, Any], ref: ObjectRef, site: PodSite) -> dict[str, Any] | None:
    rebased = dict(operation)
    for key in ("path", "from"):
        if key not in operation:
            continue
        path = str(operation[key])
        if site.inline:
            if path != "/spec" and not path.startswith("/spec/"):
                return None
            path = site.spec_pointer + path[len("/spec"):]
        else:
            path = site.pointer + path
        rebased[key] = ref.pointer + path
    return rebased


def _place_claims(
    plan: FilePlan,
    ref: ObjectRef,
    claims: tuple[ClaimObject, ...],
    options: MigrateOptions,
    present: dict[ObjectKey, Any],
    emitted: set[ObjectKey],
) -> None:
    namespace = ref.namespace or options.namespace
    for claim in claims:
        key = (claim.kind, namespace, claim.name)
        manifest = claim.manifest(namespace)
        if key in present:
            if present[key] != manifest["spec"]:
                plan.object_notes.append(ObjectNote(
                    ref, Severity.WARNING,
                    f"{claim.kind} {claim.name} is already in the input with a different spec; kept as it is "
                    "(delete it and run migrate again to regenerate it)"))
            continue
        if key in emitted:
            continue
        emitted.add(key)
        plan.emissions.append(Emission(claim.kind, claim.name, namespace, manifest, ref))
