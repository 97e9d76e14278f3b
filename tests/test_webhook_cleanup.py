"""`kgpu-webhook cleanup`: unused managed templates go, referenced ones never do."""

from __future__ import annotations

import datetime as dt

from click.testing import CliRunner

from tests.conftest import admission_review
from tests.k8sdouble.double import K8sDouble
from tests.k8sdouble.kinds import ResourceKind
from webhook.cleanup import run_cleanup
from webhook.cli import main
from kubectl_gpu.k8s import Client
from webhook.templates import CREATED_BY_WEBHOOK, UNUSED_SINCE_ANNOTATION

V1 = "resource.k8s.io/v1"
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def template(name: str, managed: bool = True, by_webhook: bool = True) -> dict:
    """A claim template as the webhook creates it; ``by_webhook=False``: as `kubectl gpu migrate`
    writes it (the same managed-by label, not the webhook's own)."""
    labels = {"app.kubernetes.io/managed-by": "kubectl-gpu"} if managed else {}
    if managed and by_webhook:
        labels.update(CREATED_BY_WEBHOOK)
    return {"apiVersion": V1, "kind": "ResourceClaimTemplate", "metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}}


def pod_using(name: str, pod_name: str = "user") -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod_name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "i", "resources": {"claims": [{"name": "g"}]}}],
                     "resourceClaims": [{"name": "g", "resourceClaimTemplateName": name}]}}


def deployment_using(name: str) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": pod_using(name)["spec"]}}}


def names(k8s_double) -> set[str]:
    return {t["metadata"]["name"] for t in k8s_double.list("ResourceClaimTemplate")}


def test_unreferenced_template_is_marked_first_and_deleted_after_the_grace_period(k8s_double):
    k8s_double.seed(template("old"), template("used-by-pod"), template("used-by-deploy"), template("foreign", managed=False))
    k8s_double.seed(pod_using("used-by-pod"), deployment_using("used-by-deploy"))
    api = Client(k8s_double.api_client().configuration, 5)

    first = run_cleanup(api, V1, now=NOW, grace_seconds=600)
    assert first.marked == ["ResourceClaimTemplate default/old"] and first.deleted == []
    assert k8s_double.get("ResourceClaimTemplate", "old")["metadata"]["annotations"][UNUSED_SINCE_ANNOTATION]

    early = run_cleanup(api, V1, now=NOW + dt.timedelta(seconds=60), grace_seconds=600)
    assert early.deleted == [] and "old" in names(k8s_double)

    late = run_cleanup(api, V1, now=NOW + dt.timedelta(seconds=601), grace_seconds=600)
    assert late.deleted == ["ResourceClaimTemplate default/old"]
    assert names(k8s_double) == {"used-by-pod", "used-by-deploy", "foreign"}


def test_a_marked_template_that_is_used_again_is_kept_and_unmarked(k8s_double):
    k8s_double.seed(template("t"))
    api = Client(k8s_double.api_client().configuration, 5)
    run_cleanup(api, V1, now=NOW, grace_seconds=600)
    k8s_double.seed(pod_using("t"))
    report = run_cleanup(api, V1, now=NOW + dt.timedelta(hours=1), grace_seconds=600)
    assert report.deleted == [] and report.unmarked == ["ResourceClaimTemplate default/t"]
    assert UNUSED_SINCE_ANNOTATION not in (k8s_double.get("ResourceClaimTemplate", "t")["metadata"].get("annotations") or {})


def test_the_webhook_revives_a_marked_template_so_a_racing_delete_fails(start_webhook, k8s_double):
    hook = start_webhook()
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
    hook.review("/mutate", admission_review(pod))
    [name] = names(k8s_double)
    api = Client(k8s_double.api_client().configuration, 5)
    run_cleanup(api, V1, now=NOW, grace_seconds=0)  # marked: no pod exists yet
    marked_version = k8s_double.get("ResourceClaimTemplate", name)["metadata"]["resourceVersion"]
    start_webhook().review("/mutate", admission_review(pod))  # a fresh replica admits a new pod
    stored = k8s_double.get("ResourceClaimTemplate", name)
    assert UNUSED_SINCE_ANNOTATION not in (stored["metadata"].get("annotations") or {})
    assert stored["metadata"]["resourceVersion"] != marked_version


def test_delete_is_guarded_by_the_checked_resource_version(k8s_double):
    k8s_double.seed(template("t"))
    api = Client(k8s_double.api_client().configuration, 5)
    run_cleanup(api, V1, now=NOW, grace_seconds=0)
    # Between the listing and the delete, something changes the object: the delete must not win.
    k8s_double.fail("delete", "resourceclaimtemplates", status=409, times=1)
    report = run_cleanup(api, V1, now=NOW + dt.timedelta(seconds=1), grace_seconds=0)
    assert report.deleted == [] and "changed since it was checked" in report.skipped[0]
    assert "t" in names(k8s_double)


def test_dry_run_command_reports_without_changing_anything(k8s_double):
    k8s_double.seed(template("t"))
    result = CliRunner().invoke(main, ["cleanup", "--dry-run", "--kubeconfig", k8s_double.kubeconfig_path()])
    assert result.exit_code == 0, result.output
    assert "would mark unused: ResourceClaimTemplate default/t" in result.output
    assert UNUSED_SINCE_ANNOTATION not in (k8s_double.get("ResourceClaimTemplate", "t")["metadata"].get("annotations") or {})
    assert k8s_double.count(verb="patch") == 0 and k8s_double.count(verb="delete") == 0


def test_a_template_referenced_while_cleanup_runs_is_not_deleted(k8s_double):
    k8s_double.seed(template("t"), template("u"), template("v"))
    api = Client(k8s_double.api_client().configuration, 5)
    run_cleanup(api, V1, now=NOW, grace_seconds=0)

    class PodCreatedDuringCleanup(Client):
        """The API as cleanup sees it when a pod using "t" is admitted after its first look."""

        def list_objects(self, path, **options):
            items = super().list_objects(path, **options)
            if path == "/api/v1/pods":  # the first look, at every namespace
                k8s_double.seed(pod_using("t"))
            return items

    k8s_double.reset_requests()
    report = run_cleanup(PodCreatedDuringCleanup(k8s_double.api_client().configuration, 5), V1,
                         now=NOW + dt.timedelta(seconds=1), grace_seconds=0)
    assert report.skipped == ["ResourceClaimTemplate default/t: referenced again"]
    assert sorted(report.deleted) == ["ResourceClaimTemplate default/u", "ResourceClaimTemplate default/v"]
    assert names(k8s_double) == {"t"}
    # The fresh look lists the namespace once, not once per object deleted.
    assert k8s_double.count(verb="list", resource="pods", namespace="default") == 1


def test_templates_the_webhook_did_not_create_are_never_touched(k8s_double):
    # `kubectl gpu migrate` writes the same managed-by label on the templates a user applies;
    # those belong to the user's manifests, not to the webhook's clean-up.
    k8s_double.seed(template("from-migrate", by_webhook=False), template("from-webhook"))
    api = Client(k8s_double.api_client().configuration, 5)
    run_cleanup(api, V1, now=NOW, grace_seconds=0)
    report = run_cleanup(api, V1, now=NOW + dt.timedelta(seconds=1), grace_seconds=0)
    assert report.deleted == ["ResourceClaimTemplate default/from-webhook"]
    assert names(k8s_double) == {"from-migrate"}
    assert UNUSED_SINCE_ANNOTATION not in (k8s_double.get("ResourceClaimTemplate", "from-migrate")["metadata"]
                                           .get("annotations") or {})


def test_the_webhook_marks_what_it_creates_as_its_own(start_webhook, k8s_double):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
    start_webhook().review("/mutate", admission_review(pod))
    [created] = k8s_double.list("ResourceClaimTemplate")
    assert CREATED_BY_WEBHOOK.items() <= created["metadata"]["labels"].items()


# Custom resources as their operators define them: a JobSet (jobset.x-k8s.io, schema generated from
# the Go types, so it names resourceClaims), a RayCluster (ray.io; its CRD keeps the pod template's
# unknown fields) and a ServiceMonitor (monitoring.coreos.com), which can hold no pod spec.
JOBSET = ResourceKind("jobset.x-k8s.io", ("v1alpha2",), "jobsets", "JobSet", True)
RAYCLUSTER = ResourceKind("ray.io", ("v1",), "rayclusters", "RayCluster", True)
SERVICEMONITOR = ResourceKind("monitoring.coreos.com", ("v1",), "servicemonitors", "ServiceMonitor", True)
POD_SPEC_SCHEMA = {"type": "object", "properties": {
    "containers": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    "resourceClaims": {"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string"}, "resourceClaimTemplateName": {"type": "string"}}}}}}


def crd(kind: ResourceKind, spec_schema: dict) -> dict:
    schema = {"type": "object", "properties": {"spec": spec_schema}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{kind.plural}.{kind.group}"},
            "spec": {"group": kind.group, "scope": "Namespaced",
                     "names": {"plural": kind.plural, "kind": kind.kind, "singular": kind.kind.lower()},
                     "versions": [{"name": v, "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
                                  for v in kind.versions]}}


def custom_resource_cluster() -> K8sDouble:
    double = K8sDouble(extra_kinds=[JOBSET, RAYCLUSTER, SERVICEMONITOR]).start()
    job_template = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "template": {"type": "object", "properties": {"spec": POD_SPEC_SCHEMA}}}}}}
    double.seed(
        crd(JOBSET, {"type": "object", "properties": {"suspend": {"type": "boolean"}, "replicatedJobs": {
            "type": "array", "items": {"type": "object", "properties": {"template": job_template}}}}}),
        crd(RAYCLUSTER, {"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
        crd(SERVICEMONITOR, {"type": "object", "properties": {"endpoints": {"type": "array"}}}))
    return double


def test_templates_referenced_only_by_custom_resources_or_pod_templates_are_kept():
    pod_spec = pod_using("x")["spec"]
    with custom_resource_cluster() as double:
        double.seed(template("jobset"), template("ray"), template("podtemplate"), template("unused"))
        suspended_jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                            "metadata": {"name": "train", "namespace": "default"},
                            "spec": {"suspend": True, "replicatedJobs": [{"name": "w", "template": {"spec": {
                                "template": {"spec": {**pod_spec, "resourceClaims": [
                                    {"name": "g", "resourceClaimTemplateName": "jobset"}]}}}}}]}}
        no_workers = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "r", "namespace": "default"},
                      "spec": {"headGroupSpec": {"template": {"spec": {**pod_spec, "resourceClaims": [
                          {"name": "g", "resourceClaimTemplateName": "ray"}]}}}, "workerGroupSpecs": []}}
        pod_template = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "pt", "namespace": "default"},
                        "template": {"spec": {**pod_spec, "resourceClaims": [
                            {"name": "g", "resourceClaimTemplateName": "podtemplate"}]}}}
        double.seed(suspended_jobset, no_workers, pod_template)
        # The clean-up has no right to read ServiceMonitors, and needs none: their schema holds no pod.
        double.fail("list", "servicemonitors", status=403, times=None)
        api = Client(double.api_client().configuration, 5)
        run_cleanup(api, V1, now=NOW, grace_seconds=0)
        report = run_cleanup(api, V1, now=NOW + dt.timedelta(seconds=1), grace_seconds=0)
        assert report.deleted == ["ResourceClaimTemplate default/unused"]
        assert names(double) == {"jobset", "ray", "podtemplate"}
        assert double.count(verb="list", resource="servicemonitors") == 0


def test_a_resource_that_may_hold_references_but_cannot_be_read_stops_every_deletion():
    with custom_resource_cluster() as double:
        double.seed(template("t"))
        api = Client(double.api_client().configuration, 5)
        run_cleanup(api, V1, now=NOW, grace_seconds=0)
        double.fail("list", "jobsets", status=403, times=None)
        result = CliRunner().invoke(main, ["cleanup", "--kubeconfig", double.kubeconfig_path(), "--grace-seconds", "0"])
        assert result.exit_code == 1
        assert "cannot list jobsets.jobset.x-k8s.io" in result.output and "cleanup.listResources" in result.output
        assert names(double) == {"t"}


def test_cleanup_uses_the_dra_version_the_cluster_serves():
    # Kubernetes 1.33 serves resource.k8s.io v1beta2 and v1beta1, not v1.
    with K8sDouble(kubernetes_version="1.33", disabled_group_versions=["resource.k8s.io/v1"]) as double:
        double.seed({**template("t"), "apiVersion": "resource.k8s.io/v1beta2"})  # v1beta2 has `exactly` too
        result = CliRunner().invoke(main, ["cleanup", "--kubeconfig", double.kubeconfig_path()])
        assert result.exit_code == 0, result.output
        assert "mark unused: ResourceClaimTemplate default/t" in result.output
