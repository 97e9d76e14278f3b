"""The admission decisions: one AdmissionRequest in, one Verdict out.

Pure planning lives in mutation.py, dra_validation.py and fencing.py; this module adds
what needs the cluster (namespace and node labels, the templates a pod needs) and the order in
which things are checked.  HTTP, logs and metrics are the server's business.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from kubectl_gpu.cluster import ClusterProfile, fit_options, unsatisfiable
from kubectl_gpu.cluster.quota import quota_target
from kubectl_gpu.cluster.shared_gpus import lands_only_on_shared_gpus
from kubectl_gpu.core import (KnownClaim, QuotaTarget, TranslateOptions, claims_beside_legacy_gpus, gpus_asked_twice,
                              known_claims)
from kubectl_gpu.dra.gpu_drivers import publishing_nodes
from kubectl_gpu.core.constants import DRA_GROUP
from kubectl_gpu.k8s import ApiError, Resource

from . import fencing
from .caches import Caches, RequestAnswers
from .cluster_profile import ProfileCache
from .config import WebhookConfig
from .dra_validation import validate_dra_object
from .labelcache import LabelCache
from .metrics import Metrics
from .mutation import (
    MESSAGE_PREFIX,
    MutationPlan,
    TemplateSite,
    audit_warnings,
    controller_reference,
    device_plugin_view,
    find_site,
    opted_out,
    site_opted_out,
)
from .quota_guard import QuotaGuard
from .review import AdmissionRequest, Verdict, allow, deny
from .templates import TemplateConflict, TemplateStore, TemplateUnavailable

DRA_KINDS = ("ResourceClaim", "ResourceClaimTemplate")
# Pod -> ReplicaSet -> Deployment, Pod -> Job -> CronJob: two workloads at most above a pod.
MAX_OWNER_DEPTH = 2
RETRY_HINT = "the Kubernetes API did not answer in time; the request was not admitted, retry it"


@dataclass
class Admission:
    config: WebhookConfig
    templates: TemplateStore
    namespaces: LabelCache
    nodes: LabelCache
    metrics: Metrics
    # kind -> labels and owners of the workloads that own pods (opt-out on a Deployment).
    owners: dict[str, LabelCache] = field(default_factory=dict)
    profiles: ProfileCache | None = None  # the cluster's profile (version, gates, devices); None: not used
    caches: Caches = field(default_factory=Caches)  # what one review keeps for the next (caches.py)
    quota: QuotaGuard | None = None  # config `quota`: warn | deny (None: ignore)

    def excluded(self, request: AdmissionRequest) -> bool:
        namespace = request.namespace or _metadata(request.obj).get("namespace") or ""
        return namespace in self.config.excluded_namespaces

    # --- /mutate ------------------------------------------------------------------------

    async def mutate(self, request: AdmissionRequest) -> Verdict:
        if request.kind == "Node" and request.sub_resource == "status":
            return await self._guard_node_status(request)
        # A controller's pods share one parse (ReviewParser), and with it what their content decides.
        answers: RequestAnswers[_Reading] = self.caches.answers(request)
        reading = answers.reading
        if reading is None:
            reading = answers.reading = self._read(request, answers)
        if reading.answer is not None:
            return reading.answer
        site, namespace, skip = reading.site, reading.namespace, reading.skip
        assert site is not None and reading.plan is not None
        mutation = reading.plan
        if mutation.claims and self.profiles is not None and self.config.needs_cluster_profile:
            # Something will be rewritten: fit it to the cluster (served version, sharing, devices).
            fitted = await self._fit_to_cluster(request, answers, site, skip)
            if isinstance(fitted, Verdict):
                return fitted
            mutation = fitted
        elif (mutation.has_legacy or mutation.claims) and self.profiles is not None:
            # Legacy requests stay: keep them off the nodes the profile's slices say run the driver
            # (read even where translation needs nothing else of the cluster: a driver node may carry no
            # label); and a pod kept in a time-sliced pool asked for slots, whatever else is configured.
            mutation = await self._fenced_off_driver_nodes(request, answers, site, skip, mutation)
        if not skip:
            try:
                opted = opted_out(await self.namespaces.labels(namespace), self.config)
                if not opted and reading.owner is not None:
                    opted = await self._owner_opted_out(reading.owner, namespace)
            except ApiError as exc:
                return deny(f"kubectl-gpu: cannot read the labels of namespace {namespace} or of the pod's "
                            f"owner ({exc.status or exc.reason}): {RETRY_HINT}", 503)
            if opted:
                mutation = self._plan(request, answers, site, True)
        if mutation.errors:
            return self._refuse(request, site, mutation)
        if mutation.claims and mutation.maybe_same_gpus_twice:
            # Judged with the options fitted to the cluster, as /validate does: its own GPU classes.
            options = (await self._validation_config()).translate_options
            # Rewriting would silently give the container a second GPU claim: deny it as /validate
            # does for the same container and migrate for the same input (the core's verdict; only
            # claims that allocate GPUs count, not an IMEX channel).
            try:
                twice = gpus_asked_twice(site.template, await self._claims_of(site.template, namespace), options)
            except ApiError as exc:
                return deny(f"kubectl-gpu: cannot read this object's ResourceClaims ({exc.status or exc.reason}): "
                            f"{RETRY_HINT}", 503)
            if twice:
                self.metrics.double_counting.labels(finding="same_gpus_twice").inc()
                if not self.config.audit:
                    return deny("kubectl-gpu: " + "; ".join(n.render() for n in twice), 403)
        self._count(mutation)
        if mutation.claims and self.quota is not None:  # quota_guard.py: a cap the rewritten pods escape
            quota_warnings, denial = await self.quota.review(namespace, *(await self._quota_inputs()),
                                                             self.config.audit)
            if denial is not None:
                return deny(denial, 403, mutation.warnings)
            mutation = replace(mutation, warnings=mutation.warnings + quota_warnings)
        if self.config.audit:
            return allow(audit_warnings(mutation))
        if mutation.claims:
            try:
                await self.templates.ensure(mutation.claims, namespace, dry_run=request.dry_run)
            except TemplateConflict as exc:
                return deny(f"kubectl-gpu: {exc}", exc.code, mutation.warnings)
            except TemplateUnavailable as exc:
                return deny(f"kubectl-gpu: {exc}", exc.code)
        if request.strict_json:
            return mutation.verdict
        # A lenient body's patch is encoded by the standard library, as its response is.
        return Verdict(allowed=True, patch=mutation.patch, warnings=mutation.warnings)

    def _read(self, request: AdmissionRequest, answers: RequestAnswers[Any]) -> "_Reading":
        """What the request's content alone decides (with this configuration): where its pod
        template is, and the whole answer when no cluster state can change it."""
        site = find_site(request)
        if site is None or self.excluded(request):
            return _Reading(site, allow())
        left_alone = self._left_alone(request, site)
        if left_alone is not None:
            return _Reading(site, left_alone)
        skip = site_opted_out(site, self.config)
        mutation = self._plan(request, answers, site, skip)
        if not mutation.patch and not mutation.claims and not mutation.errors:
            # Nothing to change; notes (an accelerator with no DRA driver...) are still worth telling.
            return _Reading(site, allow(audit_warnings(mutation) if self.config.audit else mutation.warnings))
        namespace = request.namespace or _metadata(request.obj).get("namespace") or ""
        owner = self._controller(_metadata(request.obj)) if site.kind == "Pod" else None
        return _Reading(site, None, namespace, skip, owner, mutation)

    def _left_alone(self, request: AdmissionRequest, site: TemplateSite) -> Verdict | None:
        """The answer for an object this webhook must not rewrite, or None to go on.

        What real controllers need (kubernetes#57167 is the loop a rewriting webhook causes):
        * a workload a controller owns (a Deployment's ReplicaSet, a CronJob's Job) is never
          rewritten: its owner's template is, and the controller compares the two;
        * a Job's pod template is immutable (batch/v1 validation), so Jobs are rewritten at CREATE
          only, and any other workload at UPDATE only when that update changes its pod template
          (a label, a scale or a finalizer change must not start a rollout);
        * a pod that names its node (spec.nodeName) never meets the scheduler, so a claim would
          never be allocated: it keeps its device-plugin request, and /validate denies it on a
          DRA node.
        """
        obj = request.obj or {}
        if site.kind == "Pod":
            if request.operation != "CREATE":
                return allow()  # a pod's spec is fixed once created; it was handled at CREATE
            node_name = obj.get("spec", {}).get("nodeName")
            if isinstance(node_name, str) and node_name:
                return allow(self._bound_pod_warning(site))
            return None
        if not self.config.rewrite_workloads or request.operation not in ("CREATE", "UPDATE"):
            return allow()
        if controller_reference(_metadata(obj)) is not None:
            return allow()
        if request.operation == "UPDATE":
            if request.kind == "Job":
                return allow()
            old_site = find_site(replace(request, obj=request.old_obj)) if request.old_obj is not None else None
            if old_site is not None and old_site.template == site.template:
                return allow()
        return None

    def _bound_pod_warning(self, site: TemplateSite) -> tuple[str, ...]:
        mutation = self._plan_site(site, True)
        if not mutation.has_legacy:
            return ()
        return (f"{MESSAGE_PREFIX}spec.nodeName is set, so the scheduler never sees this pod and could not "
                "allocate a DRA claim: its GPU request is left to the device plugin",)

    def _refuse(self, request: AdmissionRequest, site: TemplateSite, mutation: MutationPlan) -> Verdict:
        """Deny what the core could not translate, with every reason (a controller's pods show no
        warnings, so a denial event is the only place a person will read it)."""
        name = request.name or _metadata(request.obj).get("name") or _metadata(request.obj).get("generateName") or ""
        where = f"{request.kind} {name}".strip()
        message = (f"kubectl-gpu: {where}: cannot be moved to DRA: " + "; ".join(mutation.errors)
                   + f" (to keep it on the device plugin, label it {self.config.opt_out_label}=true)")
        if self.config.audit:
            return allow(audit_warnings(mutation))
        return deny(message, 422)

    def _controller(self, metadata: Mapping[str, Any]) -> tuple[LabelCache, str] | None:
        """The workload controlling an object with this metadata, when its labels can be read: the
        label cache of its kind and its name."""
        ref = controller_reference(metadata)
        owners = self.owners.get(str(ref.get("kind"))) if ref is not None else None
        if ref is None or owners is None or str(ref.get("apiVersion")) != owners.resource.api_version:
            return None
        return owners, str(ref["name"])

    async def _owner_opted_out(self, owner: tuple[LabelCache, str], namespace: str) -> bool:
        """True when a workload above the pod (its ReplicaSet ``owner``, that ReplicaSet's
        Deployment...) carries the opt-out label: the label on a Deployment is not copied to its pods."""
        found: tuple[LabelCache, str] | None = owner
        for _ in range(MAX_OWNER_DEPTH):
            if found is None:
                return False
            owners, name = found
            metadata = await owners.metadata(name, namespace)
            if opted_out(metadata.get("labels") or {}, self.config):
                return True
            found = self._controller(metadata)
        return False

    def _plan(self, request: AdmissionRequest, answers: RequestAnswers[Any], site: TemplateSite,
              skip: bool) -> MutationPlan:
        """The plan with this Admission's own configuration (not fitted to a profile)."""
        kept = answers.plans.get(skip)
        if kept is None:
            kept = answers.plans[skip] = self.caches.plans.get_or_plan(site, self.config, skip, request.strict_json)
        return kept

    def _plan_site(self, site: TemplateSite, skip: bool) -> MutationPlan:
        return self.caches.plans.get_or_plan(site, self.config, skip, False)

    async def _fit_to_cluster(self, request: AdmissionRequest, answers: RequestAnswers[Any], site: TemplateSite,
                              skip: bool) -> MutationPlan | Verdict:
        assert self.profiles is not None
        try:
            profile = await self.profiles.get()
        except Exception as exc:  # noqa: BLE001 - ApiError or a profile the API returned that cannot be read
            if self.config.api_version_auto:
                return deny(f"kubectl-gpu: cannot read which {DRA_GROUP} versions the API server serves ({exc}): "
                            f"{RETRY_HINT}", 503)
            return self._plan(request, answers, site, skip)
        # The fitted answer is a pure function of the plan and the profile's content (its revision):
        # a controller's next pod gets the same object, so its verdict and encoded response too.
        return answers.fitted_for(skip, profile.revision, lambda: self._fit(request, site, skip, profile))

    async def _fenced_off_driver_nodes(self, request: AdmissionRequest, answers: RequestAnswers[Any],
                                       site: TemplateSite, skip: bool, mutation: MutationPlan) -> MutationPlan:
        """The plan fitted to the profile (whose slices name the driver's nodes); the plan as it was
        when the profile cannot be read: a pod that keeps its legacy requests is never denied for that."""
        assert self.profiles is not None
        try:
            profile = await self.profiles.get()
        except Exception:  # noqa: BLE001 - ApiError or a profile the API returned that cannot be read
            return mutation
        if not self.config.needs_cluster_profile:
            # Nothing else is fitted: the configuration as written, with the driver's nodes and the
            # time-sliced pool the pod is kept in.  Once per body and revision, as _fit: the slot
            # reading walks the shared pools' nodes, which a controller's pods need not repeat.
            return answers.fitted_for(skip, profile.revision, lambda: self.caches.plans.get_or_plan(
                site, _reading_slots(self._config_for(profile)[0], site, profile), skip, request.strict_json,
                profile.revision))
        fitted = answers.fitted_for(skip, profile.revision, lambda: self._fit(request, site, skip, profile))
        return fitted if isinstance(fitted, MutationPlan) else mutation

    def _fit(self, request: AdmissionRequest, site: TemplateSite, skip: bool,
                profile: ClusterProfile) -> MutationPlan | Verdict:
        config = _reading_slots(self._config_for(profile)[0], site, profile)
        mutation = self.caches.plans.get_or_plan(site, config, skip, request.strict_json, profile.revision)
        warnings: list[str] = []
        if mutation.claims and self.config.unsatisfiable_claims != "ignore":
            problems = self._check(mutation, profile)
            if problems and self.config.unsatisfiable_claims == "deny" and not self.config.audit:
                return deny(MESSAGE_PREFIX + "no device in the cluster can satisfy " + "; ".join(
                    f"{kind} {name}: {reason}" for kind, name, reason in problems), 403, mutation.warnings)
            # Warnings stay short (the API server may cut them at 120 characters); deny says why in full.
            warnings += [f"{MESSAGE_PREFIX}no device in the cluster can satisfy {kind} {name}"
                         for kind, name, _ in problems]
        if not warnings:
            return mutation
        return replace(mutation, warnings=mutation.warnings + tuple(warnings))

    def _config_for(self, profile: ClusterProfile) -> tuple[WebhookConfig, tuple[str, ...]]:
        """The configuration fitted to ``profile`` (where translation depends on the cluster; else only
        the nodes the driver's slices name are taken from it), and the fitting's notes."""
        def fit(profile: ClusterProfile) -> tuple[WebhookConfig, tuple[str, ...]]:
            driver_nodes = publishing_nodes(profile.resource_slices)
            if not self.config.needs_cluster_profile:
                return replace(self.config, driver_node_names=driver_nodes), ()
            fitted = fit_options(self.config.translate_options, profile,
                                 api_version_given=not self.config.api_version_auto)
            return replace(self.config, translate_options=fitted.options, driver_node_names=driver_nodes), fitted.notes

        return self.caches.fitted.get(profile, fit)

    def _check(self, mutation: MutationPlan, profile: ClusterProfile) -> list[tuple[str, str, str]]:
        problems = []
        for claim in mutation.claims:
            reason = self.caches.unsatisfiable.get(
                profile.revision, claim.name, lambda: unsatisfiable([claim], profile).get(claim.name))
            if reason:
                problems.append((claim.kind, claim.name, reason))
        return problems

    async def _quota_inputs(self) -> tuple[TranslateOptions, QuotaTarget]:
        """The options and what the cluster's quota counts, from its profile when it can be read."""
        if self.profiles is None:
            return self.config.translate_options, QuotaTarget()
        try:
            profile = await self.profiles.get()
        except Exception:  # noqa: BLE001 - the rewrite itself already answered for an unreadable profile
            return self.config.translate_options, QuotaTarget()
        return self._config_for(profile)[0].translate_options, quota_target(profile)

    def _count(self, mutation: MutationPlan) -> None:
        metrics = self.metrics
        audit = "true" if self.config.audit else "false"
        for family in mutation.rewritten_families:
            metrics.series(metrics.rewrites, family, audit).inc()
        if mutation.fenced:
            metrics.series(metrics.double_counting, "fenced").inc()

    async def _guard_node_status(self, request: AdmissionRequest) -> Verdict:
        node = request.obj
        if not self.config.node_status_guard or request.operation != "UPDATE" or node is None:
            return allow()
        driver_nodes = (await self._validation_config()).driver_node_names
        ops = tuple(fencing.strip_legacy_capacity(node, self.config.dra_node_selectors, driver_nodes,
                                                  self.config.extra_legacy_resources))
        if not ops:
            return allow()
        self.metrics.double_counting.labels(finding="node_status_stripped").inc()
        if self.config.audit:
            return allow((f"{MESSAGE_PREFIX}audit: would strip legacy GPU capacity from DRA node {request.name}",))
        return Verdict(allowed=True, patch=ops)

    # --- /validate ----------------------------------------------------------------------

    async def validate(self, request: AdmissionRequest) -> Verdict:
        if self.excluded(request) or request.obj is None or request.operation not in ("CREATE", "UPDATE"):
            return allow()
        if request.group == DRA_GROUP and request.kind in DRA_KINDS and not request.sub_resource:
            return self._validate_dra(request)
        if request.group == "" and request.kind == "Pod" and not request.sub_resource and request.operation == "CREATE":
            return await self._validate_pod(request)
        return allow()

    def _validate_dra(self, request: AdmissionRequest) -> Verdict:
        result = validate_dra_object(request.obj)
        warnings = tuple(result.warnings)
        if result.allowed:
            return allow(warnings)
        message = f"kubectl-gpu: {request.kind} {request.name or _metadata(request.obj).get('name', '')}: {result.message()}"
        if self.config.audit:
            return allow(warnings + (message,))
        return deny(message, 422, warnings)

    async def _validate_pod(self, request: AdmissionRequest) -> Verdict:
        assert request.obj is not None
        extra = self.config.extra_legacy_resources
        if not fencing.legacy_gpu_resources(request.obj, extra):
            # Both findings are about device-plugin GPU requests: a pod without any (a DRA-only
            # pod) needs no node lookup, and is never denied because the API is unreachable.
            return allow()
        # Judge the pod with the options /mutate plans it with (fitted to the cluster profile): a
        # MIG request a DeviceClass serves through extendedResourceName (KEP-5004) belongs on DRA nodes.
        config = await self._validation_config()
        pod = device_plugin_view(request.obj, config)
        if not fencing.legacy_gpu_resources(pod, extra):
            return allow()
        selectors = self.config.dra_node_selectors
        findings: dict[str, list[str]] = {}
        try:
            if selectors or config.driver_node_names:
                node_labels: dict[str, dict[str, str]] = {}
                for name in fencing.pinned_node_names(pod) if selectors else ():
                    node_labels[name] = await self.nodes.labels(name)
                findings["pinned"] = fencing.pinned_to_dra_node(pod, selectors, node_labels, config.driver_node_names,
                                                                 extra)
            if claims_beside_legacy_gpus(pod, config.translate_options):
                # Only claims that really allocate GPUs count (not an IMEX channel or a NIC).
                known = await self._claims_of(pod, request.namespace)
                findings["same_gpus_twice"] = [
                    n.render() for n in gpus_asked_twice(pod, known, config.translate_options)]
            if selectors and not findings["pinned"]:
                # /mutate fences every such pod; one without the fence skipped it (Ignore during an
                # outage) or a later webhook changed its affinity.  After the findings above, which
                # /mutate reports in the same words.
                findings["unfenced"] = fencing.unfenced(pod, selectors, extra)
        except ApiError as exc:
            return deny(f"kubectl-gpu: cannot check this pod against DRA nodes ({exc.status or exc.reason}): {RETRY_HINT}", 503)
        reasons = [reason for found in findings.values() for reason in found]
        for finding, found in findings.items():
            if found:
                self.metrics.double_counting.labels(finding=finding).inc()
        if not reasons:
            return allow()
        if self.config.audit:
            return allow(tuple(f"{MESSAGE_PREFIX}audit: {r}" for r in reasons))
        return deny("kubectl-gpu: " + "; ".join(reasons), 403)

    async def _validation_config(self) -> WebhookConfig:
        """The configuration /mutate would plan with: fitted to the cluster profile when it uses one
        (and knowing the driver's nodes from its slices in any case).  A profile that cannot be read
        leaves the configuration as written (the pod is judged as before, never denied only because
        the profile is unavailable)."""
        if self.profiles is None:
            return self.config
        try:
            profile = await self.profiles.get()
        except Exception:  # noqa: BLE001 - ApiError or a profile the API returned that cannot be read
            return self.config
        return self._config_for(profile)[0]

    async def _claims_of(self, pod: Mapping[str, Any], namespace: str) -> list[KnownClaim]:
        """The claims the pod's containers use beside a legacy GPU, read from the API (a claim that
        does not exist is left out: the scheduler will report it; it is no proof of double use)."""
        version = self.config.translate_options.api_version.value
        if self.config.api_version_auto and self.profiles is not None:
            # Read the claims in a version the API server serves (v1 is 404 on 1.32/1.33).
            served = (await self.profiles.get()).api_version
            version = served.value if served is not None else version
        wanted = {c for beside in claims_beside_legacy_gpus(pod, self.config.translate_options) for c in beside.claims}
        known: list[KnownClaim] = []
        for ref in sorted(wanted, key=lambda c: (c.kind, c.name)):
            try:
                obj = await self.templates.api.get(Resource(version, ref.kind), namespace, ref.name)
            except ApiError as exc:
                if exc.not_found:
                    continue
                raise
            known.extend(known_claims({**obj, "kind": ref.kind}))
        return known


@dataclass(frozen=True)
class _Reading:
    """What /mutate reads from a request's content alone, kept with its parse."""

    site: TemplateSite | None
    answer: Verdict | None  # the whole answer (not handled, excluded, left alone, nothing to change)
    namespace: str = ""
    skip: bool = False  # the object or its pod template opts itself out
    owner: tuple[LabelCache, str] | None = None  # a pod's controller, whose labels may opt it out
    plan: MutationPlan | None = None  # with the Admission's own configuration, when there is no answer yet


def _metadata(obj: dict[str, Any] | None) -> dict[str, Any]:
    if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
        return obj["metadata"]
    return {}


def _reading_slots(config: WebhookConfig, site: TemplateSite, profile: ClusterProfile) -> WebhookConfig:
    """``config`` reading nvidia.com/gpu as slots where the pod's node selection keeps it in a
    time-sliced pool, as migrate reads it.  A pure function of the template and the profile (its
    revision covers the nodes' labels)."""
    options = config.translate_options
    if profile.slot_nodes and not options.gpu_slots and lands_only_on_shared_gpus(site.template, profile.slot_nodes):
        return replace(config, translate_options=replace(options, gpu_slots=True))
    return config
