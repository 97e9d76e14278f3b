"""The webhook configurations: what reaches the webhook, how failures behave, and certificates."""

from __future__ import annotations

import base64
import datetime as dt

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

from kubectl_gpu.dra.facts import DRA_VERSIONS
from kubectl_gpu.k8s.paths import WORKLOAD_RESOURCES as WORKLOAD_RESOURCES_TABLE
from tests.k8sdouble import K8sDouble
from tests.test_chart_support import (
    CHART,
    FULLNAME,
    HelmError,
    NAMESPACE,
    RELEASE,
    VALUE_SETS,
    config_file,
    find,
    helm,
    needs_helm,
    rendered,
    template,
    webhook_entries,
)

pytestmark = needs_helm
ALL_SETS = (None, *VALUE_SETS)
MUTATING = "MutatingWebhookConfiguration"
VALIDATING = "ValidatingWebhookConfiguration"
WORKLOAD_RESOURCES = {resource.plural for resource in WORKLOAD_RESOURCES_TABLE}


def _all_entries(docs):
    return [*webhook_entries(docs, MUTATING).values(), *webhook_entries(docs, VALIDATING).values()]


def _resources(entry):
    return {r for rule in entry["rules"] for r in rule["resources"]}


# --- what is registered -----------------------------------------------------------------------


def test_default_registration():
    docs = rendered(None)
    mutating = webhook_entries(docs, MUTATING)
    validating = webhook_entries(docs, VALIDATING)
    assert set(mutating) == {"pods.kubectl-gpu.io", "workloads.kubectl-gpu.io", "cronjobs.kubectl-gpu.io"}
    assert set(validating) == {"pods.kubectl-gpu.io", "dra-objects.kubectl-gpu.io"}
    assert _resources(mutating["pods.kubectl-gpu.io"]) == {"pods"}
    assert _resources(mutating["workloads.kubectl-gpu.io"]) | _resources(mutating["cronjobs.kubectl-gpu.io"]) \
        == WORKLOAD_RESOURCES
    assert _resources(validating["dra-objects.kubectl-gpu.io"]) == {"resourceclaims", "resourceclaimtemplates"}
    (dra_rule,) = validating["dra-objects.kubectl-gpu.io"]["rules"]
    assert dra_rule["apiGroups"] == ["resource.k8s.io"]
    assert set(dra_rule["apiVersions"]) == set(DRA_VERSIONS)  # 1.32 serves only v1beta1
    # Pods are rewritten once, at CREATE; Jobs too (their template is immutable); other workloads
    # on every change of their template.
    assert mutating["pods.kubectl-gpu.io"]["rules"][0]["operations"] == ["CREATE"]
    for rule in mutating["workloads.kubectl-gpu.io"]["rules"]:
        assert rule["operations"] == (["CREATE"] if rule["resources"] == ["jobs"] else ["CREATE", "UPDATE"])


def test_workload_webhooks_follow_rewrite_workloads():
    mutating = webhook_entries(rendered("kubernetes-1-32.yaml"), MUTATING)
    assert set(mutating) == {"pods.kubectl-gpu.io"}


def test_dra_object_validation_can_be_switched_off():
    validating = webhook_entries(rendered("kubernetes-1-32.yaml"), VALIDATING)
    assert set(validating) == {"pods.kubectl-gpu.io"}


def test_node_status_guard_registers_nodes_status_and_never_blocks_the_kubelet():
    assert "node-status.kubectl-gpu.io" not in webhook_entries(rendered(None), MUTATING)
    entry = webhook_entries(rendered("node-status-guard.yaml"), MUTATING)["node-status.kubectl-gpu.io"]
    assert entry["rules"] == [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"],
                               "resources": ["nodes/status"], "scope": "Cluster"}]
    assert entry["failurePolicy"] == "Ignore"
    assert entry["clientConfig"]["service"]["path"] == "/mutate"
    assert [c["name"] for c in entry["matchConditions"]] == ["dra-node-with-legacy-gpu-capacity"]


def test_node_status_guard_without_dra_selectors_is_refused(tmp_path):
    values = tmp_path / "values.yaml"
    values.write_text("config: {nodeStatusGuard: true, draNodeSelectors: []}\n")
    with pytest.raises(HelmError) as err:
        template(None, None, "-f", str(values))
    assert "config.draNodeSelectors" in err.value.stderr


# --- how each webhook behaves -------------------------------------------------------------


@pytest.mark.parametrize("value_set", ALL_SETS)
def test_every_webhook_is_v1_dry_run_safe_and_bounded_in_time(value_set):
    for entry in _all_entries(rendered(value_set)):
        assert entry["admissionReviewVersions"] == ["v1"], entry["name"]
        assert entry["sideEffects"] == "NoneOnDryRun", entry["name"]
        assert 1 <= entry["timeoutSeconds"] <= 30, entry["name"]
        assert entry["matchPolicy"] == "Equivalent", entry["name"]
        assert entry["matchConditions"], entry["name"]
    for entry in webhook_entries(rendered(value_set), MUTATING).values():
        assert entry["reinvocationPolicy"] == "IfNeeded", entry["name"]


def test_gpu_pods_fail_closed_by_default():
    docs = rendered(None)
    for kind in (MUTATING, VALIDATING):
        assert webhook_entries(docs, kind)["pods.kubectl-gpu.io"]["failurePolicy"] == "Fail"
    assert webhook_entries(docs, MUTATING)["workloads.kubectl-gpu.io"]["failurePolicy"] == "Fail"
    # Validating DRA objects is a lint: an outage must not stop other DRA users.
    assert webhook_entries(docs, VALIDATING)["dra-objects.kubectl-gpu.io"]["failurePolicy"] == "Ignore"


def test_audit_mode_fails_open_since_nothing_would_be_changed():
    for entry in _all_entries(rendered("audit.yaml")):
        assert entry["failurePolicy"] == "Ignore", entry["name"]


def test_failure_policy_and_timeout_are_configurable():
    docs = template(None, {"webhook.failurePolicy": "Ignore", "webhook.timeoutSeconds": "20"})
    for entry in webhook_entries(docs, MUTATING).values():
        assert (entry["failurePolicy"], entry["timeoutSeconds"]) == ("Ignore", 20)
    audit_but_fail = template("audit.yaml", {"webhook.failurePolicy": "Fail"})
    assert webhook_entries(audit_but_fail, MUTATING)["pods.kubectl-gpu.io"]["failurePolicy"] == "Fail"


def test_api_timeout_must_leave_the_server_time_to_answer():
    with pytest.raises(HelmError) as err:
        template(None, {"config.apiTimeoutSeconds": "10", "webhook.timeoutSeconds": "10"})
    assert "config.apiTimeoutSeconds (10) must be below webhook.timeoutSeconds (10)" in err.value.stderr


# --- who is never sent to the webhook ------------------------------------------------------


@pytest.mark.parametrize("value_set", ALL_SETS)
def test_kube_system_the_release_namespace_and_opted_out_objects_are_never_sent(value_set):
    for entry in _all_entries(rendered(value_set)):
        if entry["rules"][0]["scope"] == "Cluster":
            continue  # nodes have no namespace
        expressions = entry["namespaceSelector"]["matchExpressions"]
        names = next(e for e in expressions if e["key"] == "kubernetes.io/metadata.name")
        assert names["operator"] == "NotIn"
        assert {"kube-system", NAMESPACE} <= set(names["values"])


def test_opt_out_label_bypasses_the_webhook_only_when_asked_to():
    for entry in _all_entries(rendered("opt-out-bypass.yaml")):
        opt_out = {"key": "kubectl-gpu.io/opt-out", "operator": "NotIn", "values": ["true"]}
        assert opt_out in entry["namespaceSelector"]["matchExpressions"]
        assert entry["objectSelector"] == {"matchExpressions": [opt_out]}


def test_opted_out_objects_still_reach_the_webhook_by_default_so_they_are_fenced():
    for entry in _all_entries(rendered(None)):
        keys = {e["key"] for e in entry["namespaceSelector"]["matchExpressions"]}
        assert keys == {"kubernetes.io/metadata.name"}
        assert entry["objectSelector"] == {}


def test_extra_excluded_namespaces_reach_the_selector():
    for entry in _all_entries(rendered("custom-dra-label.yaml")):
        names = entry["namespaceSelector"]["matchExpressions"][0]
        assert set(names["values"]) == {"kube-system", NAMESPACE, "monitoring", "gpu-operator"}


# --- where the API server sends the reviews -----------------------------------------------


@pytest.mark.parametrize("value_set", ALL_SETS)
def test_webhooks_reach_the_servers_paths_through_the_service(value_set):
    docs = rendered(value_set)
    service = find(docs, "Service")
    (port,) = service["spec"]["ports"]
    container = find(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    named = {p["name"]: p["containerPort"] for p in container["ports"]}
    served_port = yaml.safe_load(config_file(docs))["port"]
    assert named[port["targetPort"]] == served_port == 8443
    for kind, path in ((MUTATING, "/mutate"), (VALIDATING, "/validate")):
        for entry in webhook_entries(docs, kind).values():
            svc = entry["clientConfig"]["service"]
            assert svc == {"name": service["metadata"]["name"], "namespace": NAMESPACE, "path": path,
                           "port": port["port"]}


# --- certificates -----------------------------------------------------------------------------


def _pem(b64: str) -> bytes:
    return base64.b64decode(b64)


def _verify_signed_by(cert: x509.Certificate, ca: x509.Certificate) -> None:
    key = ca.public_key()
    if isinstance(key, rsa.RSAPublicKey):
        key.verify(cert.signature, cert.tbs_certificate_bytes, padding.PKCS1v15(), cert.signature_hash_algorithm)
    else:
        key.verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(cert.signature_hash_algorithm))


def test_self_signed_certificate_is_trusted_by_the_ca_bundle_and_names_the_service():
    docs = rendered(None)
    secret = find(docs, "Secret", f"{FULLNAME}-tls")
    assert secret["type"] == "kubernetes.io/tls"
    ca = x509.load_pem_x509_certificate(_pem(secret["data"]["ca.crt"]))
    cert = x509.load_pem_x509_certificate(_pem(secret["data"]["tls.crt"]))
    key = serialization.load_pem_private_key(_pem(secret["data"]["tls.key"]), password=None)
    assert key.public_key().public_numbers() == cert.public_key().public_numbers()
    _verify_signed_by(cert, ca)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)
    assert f"{FULLNAME}.{NAMESPACE}.svc" in sans
    assert f"{FULLNAME}.{NAMESPACE}.svc.cluster.local" in sans
    assert cert.not_valid_after_utc - dt.datetime.now(dt.timezone.utc) > dt.timedelta(days=3000)
    for entry in _all_entries(docs):
        assert entry["clientConfig"]["caBundle"] == secret["data"]["ca.crt"], entry["name"]


def test_cert_manager_mode_injects_the_ca_and_renders_no_secret():
    docs = rendered("cert-manager.yaml")
    assert not [d for d in docs if d["kind"] == "Secret"]
    certificate = find(docs, "Certificate")
    for kind in (MUTATING, VALIDATING):
        config = find(docs, kind)
        assert config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == \
            f"{NAMESPACE}/{certificate['metadata']['name']}"
        for entry in config["webhooks"]:
            assert "caBundle" not in entry["clientConfig"]
    volumes = find(docs, "Deployment")["spec"]["template"]["spec"]["volumes"]
    assert any(v.get("secret", {}).get("secretName") == certificate["spec"]["secretName"] for v in volumes)


def _existing_secret() -> dict:
    """The Secret an earlier install left behind, with a CA and certificate made here."""
    now = dt.datetime.now(dt.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, "earlier-install-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now).not_valid_after(now + dt.timedelta(days=30))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, f"{FULLNAME}.{NAMESPACE}.svc")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(now + dt.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(f"{FULLNAME}.{NAMESPACE}.svc")]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem_key = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    return {
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {
            "name": f"{FULLNAME}-tls", "namespace": NAMESPACE,
            # What Helm puts on the objects of a release; without it Helm refuses to adopt the Secret.
            "labels": {"app.kubernetes.io/managed-by": "Helm"},
            "annotations": {"meta.helm.sh/release-name": RELEASE, "meta.helm.sh/release-namespace": NAMESPACE},
        },
        "data": {"ca.crt": b64(ca.public_bytes(serialization.Encoding.PEM)),
                 "tls.crt": b64(cert.public_bytes(serialization.Encoding.PEM)), "tls.key": b64(pem_key)},
    }


def test_an_upgrade_keeps_the_certificate_of_the_running_release():
    """Real helm against the Kubernetes API double: `lookup` finds the Secret of the earlier
    install, so the webhooks keep trusting the certificate the running pods serve."""
    existing = _existing_secret()
    with K8sDouble(kubernetes_version="1.35") as api:
        api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        api.seed(existing)
        out = helm(
            "template", RELEASE, str(CHART), "--namespace", NAMESPACE,
            "--dry-run=server", "--disable-openapi-validation",
            # Kinds the API double does not serve; nothing here depends on them.
            "--set", "rbac.create=false", "--set", "podDisruptionBudget.enabled=false", "--set", "cleanup.enabled=false",
            env=api.kubectl_env(),
        )
        looked_up = [r for r in api.requests if r.verb == "get" and r.resource == "secrets"]
    docs = [d for d in yaml.safe_load_all(out) if d]
    assert looked_up and looked_up[0].name == f"{FULLNAME}-tls"
    assert find(docs, "Secret")["data"] == existing["data"]
    for entry in _all_entries(docs):
        assert entry["clientConfig"]["caBundle"] == existing["data"]["ca.crt"]


def test_without_an_earlier_install_every_render_makes_a_new_ca():
    first = find(template(None), "Secret")["data"]["ca.crt"]
    second = find(template(None), "Secret")["data"]["ca.crt"]
    assert first != second
