"""The chart lints, renders for every value set, and every object is valid Kubernetes 1.34/1.35."""

from __future__ import annotations

import re

import kubernetes_validate
import pytest
import yaml
from click.testing import CliRunner

from kubectl_gpu.cli.main import main as kubectl_gpu_main
from kubectl_gpu.inspect.doctor.webhooks import is_kubectl_gpu_webhook

from tests.test_chart_support import (
    CHART,
    CRD_KINDS,
    FULLNAME,
    KUBERNETES_VERSIONS,
    NAMESPACE,
    REPO,
    VALUE_SETS,
    HelmError,
    VALUE_SETS_DIR,
    config_file,
    find,
    helm,
    kinds,
    needs_helm,
    rendered,
    values_of,
)

pytestmark = needs_helm
ALL_SETS = (None, *VALUE_SETS)


def test_the_value_sets_cover_what_operators_choose_between():
    assert {"cert-manager.yaml", "audit.yaml", "custom-dra-label.yaml", "ha-off.yaml",
            "node-status-guard.yaml"} <= set(VALUE_SETS)


@pytest.mark.parametrize("value_set", ALL_SETS)
def test_helm_lint_strict_passes(value_set):
    args = ["lint", "--strict", str(CHART), "--namespace", NAMESPACE]
    if value_set:
        args += ["-f", str(VALUE_SETS_DIR / value_set)]
    out = helm(*args)
    assert "0 chart(s) failed" in out
    assert "[WARNING]" not in out and "[ERROR]" not in out


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("value_set", ALL_SETS)
def test_every_rendered_object_is_valid_kubernetes(value_set, version):
    checked = 0
    for doc in rendered(value_set):
        if doc["kind"] in CRD_KINDS:
            continue  # no OpenAPI schema in Kubernetes for CRD kinds; see test_crd_objects_*
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as err:
            pytest.fail(f"{doc['kind']} {doc['metadata']['name']} is not valid for {version}: {err.message}")
        checked += 1
    assert checked >= 9


def test_default_install_renders_the_expected_objects():
    assert kinds(rendered(None)) == {
        "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Secret", "Service",
        "Role", "RoleBinding",  # self-signed mode: the server renews its own Secret
        "Deployment", "PodDisruptionBudget", "CronJob", "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    }


@pytest.mark.parametrize("value_set", ALL_SETS)
def test_every_object_carries_the_standard_labels(value_set):
    for doc in rendered(value_set):
        labels = doc["metadata"]["labels"]
        where = f"{doc['kind']} {doc['metadata']['name']}"
        assert labels["app.kubernetes.io/name"] == "kubectl-gpu-webhook", where
        assert labels["app.kubernetes.io/instance"] == "gpu", where
        assert labels["app.kubernetes.io/managed-by"] == "Helm", where
        assert labels["app.kubernetes.io/part-of"] == "kubectl-gpu", where
        assert re.fullmatch(r"\d+\.\d+\.\d+.*", labels["app.kubernetes.io/version"]), where
        assert labels["app.kubernetes.io/component"] in ("admission-webhook", "cleanup"), where


@pytest.mark.parametrize("value_set", ALL_SETS)
def test_namespaced_objects_go_to_the_release_namespace(value_set):
    cluster_scoped = {"ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration",
                      "ValidatingWebhookConfiguration", "DeviceClass"}
    for doc in rendered(value_set):
        if doc["kind"] in cluster_scoped:
            assert "namespace" not in doc["metadata"]
        else:
            assert doc["metadata"]["namespace"] == NAMESPACE, doc["kind"]


def _design_config_example() -> dict:
    design = (REPO / "docs" / "design.md").read_text()
    section = design.split("## Webhook configuration", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block, "docs/design.md lost its webhook configuration example"
    return yaml.safe_load(block.group(1))


def _shape(value):
    """The keys of a config, recursively: what must agree between the chart and the design."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    return None


def test_default_config_file_is_the_documented_format_with_the_documented_defaults():
    documented = _design_config_example()
    config = yaml.safe_load(config_file(rendered(None)))
    assert _shape(config) == _shape(documented)
    # Self-signed mode (the default) names the release's Secret, Service and configurations.
    assert config["tls"].pop("selfSigned") == {
        "secretName": f"{FULLNAME}-tls", "webhookConfigurations": [FULLNAME], "serviceName": FULLNAME,
        "clusterDomain": "cluster.local", "validityDays": values_of(None)["certificates"]["validityDays"]}
    documented["tls"].pop("selfSigned")
    # The only difference: the release namespace is excluded too (the server also adds its own
    # namespace from POD_NAMESPACE; listing it makes the file say what really happens).
    assert config["excludedNamespaces"] == ["kube-system", NAMESPACE]
    assert {k: v for k, v in config.items() if k != "excludedNamespaces"} == \
        {k: v for k, v in documented.items() if k != "excludedNamespaces"}


@pytest.mark.parametrize("value_set", ALL_SETS)
def test_config_file_holds_exactly_the_values_given(value_set):
    values = values_of(value_set)["config"]
    config = yaml.safe_load(config_file(rendered(value_set)))
    assert config["translation"] == values["translation"]
    for key in ("passThroughFamilies", "rewriteWorkloads", "draNodeSelectors", "nodeStatusGuard", "audit",
                "optOutLabel", "apiTimeoutSeconds", "logLevel"):
        assert config[key] == values[key], key
    assert set(config["excludedNamespaces"]) == {"kube-system", NAMESPACE, *values["excludedNamespaces"]}
    assert config["port"] == values_of(value_set)["containerPort"]
    renewed = config["tls"].pop("selfSigned", None)
    client_auth = values_of(value_set)["tls"]["clientAuth"]
    assert config["tls"] == {"certFile": "/etc/kubectl-gpu/tls/tls.crt", "keyFile": "/etc/kubectl-gpu/tls/tls.key",
                             "minVersion": values_of(value_set)["tls"]["minVersion"],
                             "clientAuth": {"caFile": "", "commonNames": []} if not client_auth["enabled"] else
                             {"caFile": "/etc/kubectl-gpu/client-ca/ca.crt", "commonNames": client_auth["commonNames"]}}
    assert config["transport"] == values["transport"]
    assert config["templateCreatesPerNamespacePerMinute"] == values["templateCreatesPerNamespacePerMinute"]
    assert (renewed is not None) == (values_of(value_set)["certificates"]["mode"] == "self-signed")


def test_a_config_change_restarts_the_webhook_pods():
    def checksum(docs):
        return find(docs, "Deployment")["spec"]["template"]["metadata"]["annotations"]["checksum/config"]

    assert checksum(rendered(None)) != checksum(rendered("audit.yaml"))
    assert checksum(rendered(None)) == checksum(rendered("ha-off.yaml"))  # replicas are not config


def test_crd_objects_of_cert_manager_reference_the_right_secret_and_names():
    docs = rendered("cert-manager-selfsigned-issuer.yaml")
    certificate = find(docs, "Certificate", FULLNAME)
    ca_issuer = find(docs, "Issuer", f"{FULLNAME}-ca")
    root = find(docs, "Issuer", f"{FULLNAME}-selfsigned")
    ca = find(docs, "Certificate", f"{FULLNAME}-ca")
    assert certificate["apiVersion"] == ca_issuer["apiVersion"] == "cert-manager.io/v1"
    assert root["spec"] == {"selfSigned": {}} and ca["spec"]["issuerRef"]["name"] == root["metadata"]["name"]
    assert ca_issuer["spec"] == {"ca": {"secretName": ca["spec"]["secretName"]}}
    assert certificate["spec"]["issuerRef"] == {"name": ca_issuer["metadata"]["name"], "kind": "Issuer",
                                                "group": "cert-manager.io"}
    assert certificate["spec"]["secretName"] == f"{FULLNAME}-tls"
    assert f"{FULLNAME}.{NAMESPACE}.svc" in certificate["spec"]["dnsNames"]
    assert "server auth" in certificate["spec"]["usages"]


def test_an_existing_cluster_issuer_is_used_as_given():
    docs = rendered("cert-manager.yaml")
    assert "Issuer" not in kinds(docs)
    assert find(docs, "Certificate")["spec"]["issuerRef"] == {"name": "platform-ca", "kind": "ClusterIssuer",
                                                              "group": "cert-manager.io"}


def test_service_monitor_scrapes_metrics_over_verified_https():
    docs = rendered("observability-and-network-policy.yaml")
    monitor = find(docs, "ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    service = find(docs, "Service")
    assert monitor["spec"]["selector"]["matchLabels"] == service["spec"]["selector"]
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] == service["spec"]["ports"][0]["name"]
    assert (endpoint["scheme"], endpoint["path"], endpoint["interval"]) == ("https", "/metrics", "15s")
    assert "insecureSkipVerify" not in endpoint["tlsConfig"]
    assert endpoint["tlsConfig"]["ca"]["secret"] == {"name": f"{FULLNAME}-tls", "key": "ca.crt"}
    assert endpoint["tlsConfig"]["serverName"] == f"{FULLNAME}.{NAMESPACE}.svc"


def test_image_digest_pins_the_image():
    docs = rendered("observability-and-network-policy.yaml")
    image = find(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == "ghcr.io/kubectl-gpu/kubectl-gpu-webhook@sha256:" + "0123456789abcdef" * 4
    default = find(rendered(None), "Deployment")["spec"]["template"]["spec"]["containers"][0]["image"]
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert default.endswith(":" + chart["appVersion"])


def test_notes_tell_how_to_verify_the_install():
    notes = helm("install", "gpu", str(CHART), "--namespace", NAMESPACE, "--dry-run=client")
    assert "kubectl gpu doctor" in notes
    assert "kubectl gpu describe" in notes
    assert "--dry-run=server" in notes
    assert f"rollout status deployment/{FULLNAME}" in notes
    audit = helm("install", "gpu", str(CHART), "--namespace", NAMESPACE, "--dry-run=client",
                 "-f", str(VALUE_SETS_DIR / "audit.yaml"))
    assert "AUDIT" in audit and "Failure policy for GPU pods: Ignore" in audit


README = CHART / "README.md"
NOTES = CHART / "templates" / "NOTES.txt"


def test_the_readme_install_commands_name_what_the_chart_creates():
    block = re.search(r"```sh\n(.*?)```", README.read_text(), re.S).group(1)
    install, rollout, doctor = (line.split() for line in block.strip().splitlines())
    assert install[:2] == ["helm", "install"] and (REPO / install[3]).resolve() == CHART
    release, namespace = install[2], install[install.index("-n") + 1]
    docs = [d for d in yaml.safe_load_all(helm("template", release, str(CHART), "--namespace", namespace)) if d]
    deployment = find(docs, "Deployment")["metadata"]["name"]
    assert rollout == ["kubectl", "-n", namespace, "rollout", "status", f"deployment/{deployment}"]
    # `kubectl gpu doctor` then checks this install: it must recognise the chart's webhooks.
    assert doctor == ["kubectl", "gpu", "doctor"]
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        assert is_kubectl_gpu_webhook(find(docs, kind)), kind


def test_every_kubectl_gpu_command_the_readme_and_notes_name_exists():
    named = set(re.findall(r"kubectl gpu ([a-z-]+)", README.read_text() + NOTES.read_text()))
    assert {"doctor", "describe"} <= named
    for name in sorted(named):
        outcome = CliRunner().invoke(kubectl_gpu_main, [name, "--help"])
        assert outcome.exit_code == 0, f"kubectl gpu {name}: {outcome.output}"


def test_every_value_the_readme_names_exists_and_is_accepted():
    defaults = values_of(None)
    named = re.findall(r"`([a-zA-Z]+(?:\.[a-zA-Z]+)+)(?::\s*([^`]+))?`", README.read_text())
    paths = [(path, value) for path, value in named if not path.endswith((".yaml", ".json"))]
    assert len(paths) >= 3, paths
    for path, value in paths:
        node = defaults
        for key in path.split("."):
            assert isinstance(node, dict) and key in node, f"README names {path}, values.yaml has no such key"
            node = node[key]
        if value:
            helm("template", "gpu", str(CHART), "--namespace", NAMESPACE, "--set", f"{path}={value}")


@pytest.mark.parametrize("version", ["1.32.0", "1.33.4", "1.34.1", "1.35.0"])
def test_renders_for_every_supported_kubernetes_version(version):
    out = helm("template", "gpu", str(CHART), "--namespace", NAMESPACE, "--kube-version", version)
    assert "kind: MutatingWebhookConfiguration" in out


def test_refuses_kubernetes_older_than_1_32():
    with pytest.raises(HelmError) as err:
        helm("template", "gpu", str(CHART), "--namespace", NAMESPACE, "--kube-version", "1.31.5")
    assert "requires kubeVersion: >=1.32.0-0" in err.value.stderr
