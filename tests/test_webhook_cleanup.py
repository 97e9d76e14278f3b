"""`kubectl-gpu-webhook cleanup`: unused managed templates go, referenced ones never do."""

from __future__ import annotations

import datetime as dt

from click.testing import CliRunner

from tests.conftest import admission_review
from webhook.cleanup import run_cleanup
from webhook.cli import main
from kubectl_gpu.k8s import Client
from webhook.templates import UNUSED_SINCE_ANNOTATION

V1 = "resource.k8s.io/v1"
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def template(name: str, managed: bool = True) -> dict:
    labels = {"app.kubernetes.io/managed-by": "kubectl-gpu"} if managed else {}
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

        def list(self, resource, namespace, label_selector=None, page_size=500):
            items = super().list(resource, namespace, label_selector, page_size)
            if resource.kind == "Pod" and namespace is None:
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
