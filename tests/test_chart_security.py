"""Security and availability properties of the rendered chart, as an operator would audit them."""

from __future__ import annotations

import pytest

from tests.test_chart_support import (
    FULLNAME,
    NAMESPACE,
    HelmError,
    VALUE_SETS,
    find,
    find_all,
    kinds,
    needs_helm,
    rendered,
    template,
    values_of,
)

pytestmark = needs_helm
ALL_SETS = (None, *VALUE_SETS)


def _pod_specs(docs):
    for doc in docs:
        if doc["kind"] == "Deployment":
            yield doc["metadata"]["name"], doc["spec"]["template"]["spec"]
        elif doc["kind"] == "CronJob":
            yield doc["metadata"]["name"], doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]


def _rules(docs, role_name):
    return [
        (group, resource, verb)
        for rule in find(docs, "ClusterRole", role_name)["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    ]


# --- RBAC -----------------------------------------------------------------------------------


@pytest.mark.parametrize("value_set", ALL_SETS)
def test_rbac_has_no_wildcards(value_set):
    for role in find_all(rendered(value_set), "ClusterRole") + find_all(rendered(value_set), "Role"):
        for rule in role["rules"]:
            for field in ("apiGroups", "resources", "verbs"):
                assert "*" not in rule.get(field, []), (role["metadata"]["name"], rule)
            assert "resourceNames" not in rule or "*" not in rule["resourceNames"]
            assert "nonResourceURLs" not in rule


def test_the_server_can_only_get_and_create_what_admission_needs():
    rules = set(_rules(rendered(None), FULLNAME))
    assert rules == {
        ("resource.k8s.io", "resourceclaimtemplates", "get"),
        ("resource.k8s.io", "resourceclaimtemplates", "create"),
        ("resource.k8s.io", "resourceclaimtemplates", "patch"),
        ("resource.k8s.io", "resourceclaims", "get"),
        ("resource.k8s.io", "resourceclaims", "create"),
        ("resource.k8s.io", "resourceclaims", "patch"),
        # the watch of managed templates and claims (webhook/templates.py)
        ("resource.k8s.io", "resourceclaimtemplates", "list"),
        ("resource.k8s.io", "resourceclaimtemplates", "watch"),
        ("resource.k8s.io", "resourceclaims", "list"),
        ("resource.k8s.io", "resourceclaims", "watch"),
        ("", "namespaces", "get"),
        ("", "nodes", "get"),
        # a namespace's ResourceQuotas, for config.quota (webhook/quota_guard.py)
        ("", "resourcequotas", "list"),
        # the owners of pods, for the opt-out label on a workload (webhook/admission.py)
        ("", "replicationcontrollers", "get"),
        ("apps", "deployments", "get"),
        ("apps", "statefulsets", "get"),
        ("apps", "daemonsets", "get"),
        ("apps", "replicasets", "get"),
        ("batch", "jobs", "get"),
        ("batch", "cronjobs", "get"),
        # The cluster profile: served devices and classes (translation.apiVersion/sharing auto,
        # cluster.unsatisfiableClaims).
        ("resource.k8s.io", "resourceslices", "list"),
        ("resource.k8s.io", "deviceclasses", "list"),
        ("resource.k8s.io", "resourceslices", "watch"),
        ("resource.k8s.io", "deviceclasses", "watch"),
        # The cluster profile's Nodes: where the device plugin time-slices (their GFD labels).
        ("", "nodes", "list"),
        ("", "nodes", "watch"),
        # self-signed mode (the default): the caBundle of its own webhook configurations
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "get"),
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "update"),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations", "get"),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations", "update"),
    }
    assert not any(verb in ("delete", "deletecollection", "escalate", "bind", "impersonate")
                   for _, _, verb in rules)
    assert {resource for _, resource, verb in rules if verb == "update"} == {
        "mutatingwebhookconfigurations", "validatingwebhookconfigurations"}
    assert not any(resource in ("secrets", "nodes/status", "pods") for _, resource, _ in rules)


def test_certificate_renewal_may_touch_only_the_webhooks_own_secret_and_configurations():
    """Self-signed mode renews in-process (webhook/rotation.py), as Gatekeeper's cert-controller
    does: read and replace its own Secret, and the caBundle of its own two configurations."""
    docs = rendered(None)
    for rule in find(docs, "ClusterRole", FULLNAME)["rules"]:
        if "admissionregistration.k8s.io" in rule["apiGroups"]:
            assert rule["resourceNames"] == [FULLNAME]
    [secret_rule] = find(docs, "Role", FULLNAME)["rules"]
    assert secret_rule == {"apiGroups": [""], "resources": ["secrets"], "resourceNames": [f"{FULLNAME}-tls"],
                           "verbs": ["get", "update"]}


def test_the_node_status_guard_needs_no_extra_permission():
    # It answers admission requests with a patch; it never writes nodes itself.
    assert set(_rules(rendered("node-status-guard.yaml"), FULLNAME)) == set(_rules(rendered(None), FULLNAME))


def test_only_the_cleanup_job_can_delete_and_only_generated_claim_objects():
    docs = rendered(None)
    rules = set(_rules(docs, f"{FULLNAME}-cleanup"))
    deletable = {(g, r) for g, r, v in rules if v == "delete"}
    assert deletable == {("resource.k8s.io", "resourceclaimtemplates"), ("resource.k8s.io", "resourceclaims")}
    readable = {(g, r) for g, r, v in rules if v == "list"}
    built_in = {("", "pods"), ("", "podtemplates"), ("", "replicationcontrollers"), ("apps", "deployments"),
                ("apps", "statefulsets"), ("apps", "daemonsets"), ("apps", "replicasets"), ("batch", "jobs"),
                ("batch", "cronjobs"), ("resource.k8s.io", "resourceclaimtemplates"),
                ("resource.k8s.io", "resourceclaims"), ("apiextensions.k8s.io", "customresourcedefinitions")}
    custom = {(g, r) for rule in values_of(None)["cleanup"]["listResources"] for g in rule["apiGroups"] for r in rule["resources"]}
    assert readable == built_in | custom and ("jobset.x-k8s.io", "jobsets") in custom
    assert {v for g, r, v in rules if (g, r) in custom} == {"list"}
    binding = find(docs, "ClusterRoleBinding", f"{FULLNAME}-cleanup")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": f"{FULLNAME}-cleanup", "namespace": NAMESPACE}]
    cronjob = find(docs, "CronJob")
    assert cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["serviceAccountName"] == f"{FULLNAME}-cleanup"
    assert find(docs, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == FULLNAME


def test_bindings_point_at_the_roles_and_service_accounts_the_chart_creates():
    docs = rendered(None)
    accounts = {sa["metadata"]["name"] for sa in find_all(docs, "ServiceAccount")}
    roles = {r["metadata"]["name"] for r in find_all(docs, "ClusterRole")}
    for binding in find_all(docs, "ClusterRoleBinding"):
        assert binding["roleRef"]["name"] in roles
        assert {s["name"] for s in binding["subjects"]} <= accounts


def test_cleanup_can_be_turned_off_with_its_permissions():
    docs = template(None, {"cleanup.enabled": "false"})
    assert "CronJob" not in kinds(docs)
    assert [r["metadata"]["name"] for r in find_all(docs, "ClusterRole")] == [FULLNAME]


# --- pods -----------------------------------------------------------------------------------


@pytest.mark.parametrize("value_set", ALL_SETS)
def test_every_pod_runs_restricted_non_root_with_a_read_only_root(value_set):
    specs = list(_pod_specs(rendered(value_set)))
    assert specs
    for name, spec in specs:
        pod = spec["securityContext"]
        assert pod["runAsNonRoot"] is True, name
        assert pod["runAsUser"] > 0 and pod["runAsGroup"] > 0, name
        assert pod["seccompProfile"] == {"type": "RuntimeDefault"}, name
        assert not spec.get("hostNetwork") and not spec.get("hostPID") and not spec.get("hostIPC"), name
        for container in spec["containers"]:
            sc = container["securityContext"]
            assert sc["runAsNonRoot"] is True, name
            assert sc["readOnlyRootFilesystem"] is True, name
            assert sc["allowPrivilegeEscalation"] is False, name
            assert sc.get("privileged") is not True, name
            assert sc["capabilities"] == {"drop": ["ALL"]}, name
            assert sc["seccompProfile"] == {"type": "RuntimeDefault"}, name
            assert container["resources"]["requests"]["cpu"] and container["resources"]["requests"]["memory"], name
            assert container["resources"]["limits"]["memory"], name
        assert not any(v.get("hostPath") for v in spec.get("volumes", [])), name


def test_webhook_probes_use_the_servers_https_health_endpoints():
    deployment = find(rendered(None), "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"https": 8443}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "https", "scheme": "HTTPS"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "https", "scheme": "HTTPS"}
    assert container["startupProbe"]["httpGet"]["path"] == "/healthz"


def test_webhook_pod_gets_config_tls_and_its_namespace_where_the_server_looks():
    deployment = find(rendered(None), "Deployment")
    spec = deployment["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert container["args"] == ["--config", "/etc/kubectl-gpu/config.yaml"]
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    config = mounts["/etc/kubectl-gpu/config.yaml"]
    assert config["subPath"] == "config.yaml" and config["readOnly"] is True
    assert volumes[config["name"]]["configMap"]["name"] == FULLNAME
    tls = volumes[mounts["/etc/kubectl-gpu/tls"]["name"]]["secret"]
    assert tls["secretName"] == f"{FULLNAME}-tls"
    assert {i["path"] for i in tls["items"]} == {"tls.crt", "tls.key"}
    assert tls["defaultMode"] == 0o440  # the key is not world-readable
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"


# --- availability ---------------------------------------------------------------------------


def test_default_install_is_highly_available():
    docs = rendered(None)
    deployment = find(docs, "Deployment")
    assert deployment["spec"]["replicas"] >= 2
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    pdb = find(docs, "PodDisruptionBudget")
    assert pdb["spec"]["maxUnavailable"] == 1
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    spread = {c["topologyKey"]: c for c in deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]}
    assert spread["kubernetes.io/hostname"]["whenUnsatisfiable"] == "DoNotSchedule"
    assert spread["kubernetes.io/hostname"]["maxSkew"] == 1
    assert "topology.kubernetes.io/zone" in spread
    assert spread["kubernetes.io/hostname"]["labelSelector"]["matchLabels"].items() <= pod_labels.items()


def test_ha_off_drops_the_pdb_that_would_block_node_drains():
    docs = rendered("ha-off.yaml")
    assert find(docs, "Deployment")["spec"]["replicas"] == 1
    assert "PodDisruptionBudget" not in kinds(docs)
    assert "topologySpreadConstraints" not in find(docs, "Deployment")["spec"]["template"]["spec"]


def test_service_selects_only_webhook_pods_not_the_cleanup_job():
    docs = rendered(None)
    selector = find(docs, "Service")["spec"]["selector"]
    deployment_labels = find(docs, "Deployment")["spec"]["template"]["metadata"]["labels"]
    cleanup_labels = find(docs, "CronJob")["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]
    assert selector.items() <= deployment_labels.items()
    assert not selector.items() <= cleanup_labels.items()


# --- network policy -------------------------------------------------------------------------


def test_network_policy_only_opens_the_webhook_port_to_the_configured_sources():
    docs = rendered("observability-and-network-policy.yaml")
    policy = find(docs, "NetworkPolicy")
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    assert policy["spec"]["podSelector"]["matchLabels"] == find(docs, "Service")["spec"]["selector"]
    (rule,) = policy["spec"]["ingress"]
    assert rule["ports"] == [{"port": 8443, "protocol": "TCP"}]
    assert rule["from"] == [
        {"ipBlock": {"cidr": "172.16.0.0/28"}},
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}},
    ]


def test_network_policy_without_any_source_is_refused():
    with pytest.raises(HelmError) as err:
        template(None, {"networkPolicy.enabled": "true"})
    assert "networkPolicy.apiServerCIDRs" in err.value.stderr
    assert "every GPU pod would be rejected" in err.value.stderr


def test_with_quota_ignore_the_server_reads_no_resourcequota():
    rules = set(_rules(template(sets={"config.quota": "ignore"}), FULLNAME))
    assert not any(resource == "resourcequotas" for _, resource, _ in rules)
