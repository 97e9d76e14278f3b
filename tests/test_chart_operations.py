"""What operators meet when they install and run the chart on real clusters: long release names,
tainted nodes, drains, certificate renewal, service accounts, host networking."""

from __future__ import annotations

import base64

import kubernetes_validate
import pytest
import yaml

from tests.test_chart_support import CHART, FULLNAME, NAMESPACE, HelmError, find, find_all, helm, needs_helm, template

pytestmark = needs_helm


def render_release(release: str, *args: str) -> list[dict]:
    out = helm("template", release, str(CHART), "--namespace", NAMESPACE, *args)
    return [doc for doc in yaml.safe_load_all(out) if doc]


@pytest.mark.parametrize("release", ["gpu", "a" * 26, "kubectl-gpu-webhook-production-eu-west-1", "x" * 53])
def test_the_cleanup_cronjob_name_fits_for_any_release_name(release):
    """The API server refuses a CronJob name over 52 characters: the CronJob controller appends
    11 to name its Jobs (kubernetes pkg/apis/batch/validation, ValidateCronJob)."""
    (cronjob,) = find_all(render_release(release), "CronJob")
    assert len(cronjob["metadata"]["name"]) <= 52
    assert cronjob["metadata"]["name"].endswith("-cleanup")


def test_replicas_spread_without_counting_nodes_whose_taints_they_do_not_tolerate():
    """Tainted GPU nodes would otherwise count as empty domains: with DoNotSchedule the second
    replica could wait for a node it may never run on."""
    spec = find(template(), "Deployment")["spec"]["template"]["spec"]
    constraints = spec["topologySpreadConstraints"]
    assert constraints and all(c["nodeTaintsPolicy"] == "Honor" for c in constraints)


def test_a_not_ready_replica_never_blocks_a_node_drain():
    pdb = find(template(), "PodDisruptionBudget")
    assert pdb["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
    kubernetes_validate.validate(pdb, "1.34", strict=True)


def test_without_a_created_service_account_a_name_is_required_never_default():
    with pytest.raises(HelmError, match="serviceAccount.name is required"):
        template(None, {"serviceAccount.create": "false"})
    docs = template(None, {"serviceAccount.create": "false", "serviceAccount.name": "gpu-webhook"})
    subjects = [s for d in find_all(docs, "ClusterRoleBinding") for s in d["subjects"]]
    assert {"kind": "ServiceAccount", "name": "gpu-webhook", "namespace": NAMESPACE} in subjects
    assert all(s["name"] != "default" for s in subjects)
    assert find(docs, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == "gpu-webhook"


def test_host_network_for_clusters_whose_control_plane_cannot_reach_pods():
    spec = find(template(None, {"hostNetwork": "true"}), "Deployment")["spec"]["template"]["spec"]
    assert spec["hostNetwork"] is True and spec["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert "hostNetwork" not in find(template(), "Deployment")["spec"]["template"]["spec"]


def test_cert_manager_signs_the_serving_certificate_with_a_ca_that_outlives_it():
    """cainjector copies ca.crt of the serving Secret: with a CA Issuer that is the CA, which
    stays the same across serving-certificate renewals."""
    docs = template(None, {"certificates.mode": "cert-manager"})
    certificates = {c["metadata"]["name"]: c for c in find_all(docs, "Certificate")}
    ca, serving = certificates[f"{FULLNAME}-ca"], certificates[FULLNAME]
    assert ca["spec"]["isCA"] is True
    issuers = {i["metadata"]["name"]: i for i in find_all(docs, "Issuer")}
    assert serving["spec"]["issuerRef"]["name"] == f"{FULLNAME}-ca"
    assert issuers[f"{FULLNAME}-ca"]["spec"]["ca"]["secretName"] == ca["spec"]["secretName"]
    assert ca["spec"]["issuerRef"]["name"] in issuers and "selfSigned" in issuers[ca["spec"]["issuerRef"]["name"]]["spec"]
    hours = lambda d: int(d.rstrip("h"))  # noqa: E731
    assert hours(ca["spec"]["duration"]) > hours(serving["spec"]["duration"])
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        assert find(docs, kind)["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == f"{NAMESPACE}/{FULLNAME}"


def test_a_secret_you_manage_can_serve_the_webhook():
    ca = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()
    with pytest.raises(HelmError, match="caBundle"):
        template(None, {"certificates.mode": "existing-secret", "certificates.existingSecret.name": "my-tls"})
    docs = template(None, {"certificates.mode": "existing-secret", "certificates.existingSecret.name": "my-tls",
                           "certificates.existingSecret.caBundle": ca})
    assert not find_all(docs, "Secret") and not find_all(docs, "Certificate")
    volumes = find(docs, "Deployment")["spec"]["template"]["spec"]["volumes"]
    assert {"my-tls"} == {v["secret"]["secretName"] for v in volumes if "secret" in v}
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        configuration = find(docs, kind)
        assert all(w["clientConfig"]["caBundle"] == ca for w in configuration["webhooks"])
        assert "annotations" not in configuration["metadata"]


def test_a_separate_plain_http_metrics_port_the_server_accepts(tmp_path):
    from webhook import cli

    docs = template(None, {"metrics.port": "9090", "metrics.serviceMonitor.enabled": "true"})
    (container,) = find(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert {"name": "metrics", "containerPort": 9090, "protocol": "TCP"} in container["ports"]
    context = cli.main.commands["serve"].make_context("serve", list(container["args"]))
    assert context.params["metrics_port"] == 9090
    assert {"name": "metrics", "port": 9090, "targetPort": "metrics", "protocol": "TCP"} in find(docs, "Service")["spec"]["ports"]
    (endpoint,) = find(docs, "ServiceMonitor")["spec"]["endpoints"]
    assert (endpoint["port"], endpoint["scheme"]) == ("metrics", "http")


def test_the_pod_has_time_to_drain_and_finish_reviews_after_sigterm():
    docs = template()
    spec = find(docs, "Deployment")["spec"]["template"]["spec"]
    timeout = max(w["timeoutSeconds"] for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
                  for w in find(docs, kind)["webhooks"])
    from webhook import cli

    delay = cli.main.commands["serve"].make_context("serve", list(spec["containers"][0]["args"])).params[
        "shutdown_delay_seconds"]
    assert spec["terminationGracePeriodSeconds"] > delay + timeout
