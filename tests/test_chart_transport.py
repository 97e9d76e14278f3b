"""The chart's transport, caller and priority settings reach the server as given, and the chart
says plainly when the webhook port is open to anyone who can reach it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_chart_support import (
    CHART,
    NAMESPACE,
    RELEASE,
    HelmError,
    config_file,
    find,
    helm,
    needs_helm,
    template,
    value_args,
    values_of,
)

pytestmark = needs_helm

CLIENT_AUTH = {"tls.clientAuth.enabled": "true", "tls.clientAuth.caConfigMap": "apiserver-client-ca"}


def _server_config(docs, tmp_path: Path):
    from webhook.config import load_config

    path = tmp_path / "config.yaml"
    path.write_text(config_file(docs))
    return load_config(str(path), {"POD_NAMESPACE": NAMESPACE}, {})


def _notes(sets: dict[str, str] | None = None) -> str:
    out = helm("install", RELEASE, str(CHART), "--namespace", NAMESPACE, "--dry-run", *value_args(None, sets))
    return out.split("NOTES:", 1)[1]


def test_the_server_gets_the_transport_limits_and_tls_version_the_values_give(tmp_path):
    values = values_of(None)
    config = _server_config(template(), tmp_path)
    given = values["config"]["transport"]
    limits = config.transport
    assert (limits.max_connections, limits.handshake_timeout, limits.header_timeout, limits.body_timeout,
            limits.idle_timeout, limits.body_bytes_in_flight) == (
        given["maxConnections"], given["handshakeTimeoutSeconds"], given["headerTimeoutSeconds"],
        given["bodyTimeoutSeconds"], given["idleTimeoutSeconds"], given["bodyBytesInFlight"])
    assert config.template_creates_per_minute == values["config"]["templateCreatesPerNamespacePerMinute"]
    assert config.tls_policy.min_version == values["tls"]["minVersion"] == "1.3"
    assert config.tls_policy.client_ca_file is None


def test_the_chart_defaults_are_the_servers_defaults():
    """One fact in one place: a setting left out of the chart behaves as the chart says."""
    from webhook.config import DEFAULTS

    values = values_of(None)
    assert values["config"]["transport"] == DEFAULTS["transport"]
    assert values["config"]["templateCreatesPerNamespacePerMinute"] == DEFAULTS["templateCreatesPerNamespacePerMinute"]
    assert values["tls"]["minVersion"] == DEFAULTS["tls"]["minVersion"]


def test_client_auth_mounts_the_ca_where_the_server_reads_it(tmp_path):
    docs = template(None, CLIENT_AUTH)
    config = _server_config(docs, tmp_path)
    assert config.tls_policy.client_common_names == ("kube-apiserver",)
    pod = find(docs, "Deployment")["spec"]["template"]["spec"]
    (volume,) = [v for v in pod["volumes"] if v.get("configMap", {}).get("name") == "apiserver-client-ca"]
    (mount,) = [m for m in pod["containers"][0]["volumeMounts"] if m["name"] == volume["name"]]
    assert Path(mount["mountPath"]) / volume["configMap"]["items"][0]["path"] == Path(config.tls_policy.client_ca_file)


def test_client_auth_without_its_ca_is_refused_with_what_to_set():
    with pytest.raises(HelmError, match="tls.clientAuth.caConfigMap"):
        template(None, {"tls.clientAuth.enabled": "true"})


def test_notes_warn_that_the_port_is_open_unless_client_auth_or_a_network_policy_is_on():
    warning = "any client that can reach port 8443"
    assert warning in _notes()
    assert warning not in _notes(CLIENT_AUTH)
    assert warning not in _notes({"networkPolicy.enabled": "true", "networkPolicy.apiServerCIDRs[0]": "10.0.0.0/28"})
    # A NetworkPolicy does not apply to a pod in the node's network namespace.
    assert warning in _notes({"networkPolicy.enabled": "true", "networkPolicy.apiServerCIDRs[0]": "10.0.0.0/28",
                              "hostNetwork": "true"})


def test_the_network_policy_admits_the_api_server_to_the_webhook_and_scrapers_to_metrics_only():
    docs = template(None, {"networkPolicy.enabled": "true", "networkPolicy.apiServerCIDRs[0]": "172.16.0.0/28",
                           "metrics.port": "9090",
                           "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.team": "monitoring"})
    webhook_rule, metrics_rule = find(docs, "NetworkPolicy")["spec"]["ingress"]
    assert webhook_rule == {"ports": [{"port": 8443, "protocol": "TCP"}], "from": [{"ipBlock": {"cidr": "172.16.0.0/28"}}]}
    assert metrics_rule == {"ports": [{"port": 9090, "protocol": "TCP"}],
                            "from": [{"namespaceSelector": {"matchLabels": {"team": "monitoring"}}}]}


def test_the_webhook_runs_at_cluster_critical_priority_by_default():
    pod = find(template(), "Deployment")["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert "priorityClassName" not in find(template(None, {"priorityClassName": ""}), "Deployment")["spec"]["template"]["spec"]


def _comment_above(lines: list[str], key: str) -> str:
    """The comment that documents ``key`` (a dotted path in values.yaml): the comment lines right
    above it, or above the sibling keys it shares them with."""
    *parents, last = key.split(".")
    index, indent = 0, 0
    for part in [*parents, last]:
        index = next(i for i in range(index, len(lines)) if lines[i].startswith(" " * indent + part + ":"))
        indent += 2
    indent -= 2
    comment: list[str] = []
    for line in reversed(lines[:index]):
        stripped = line.strip()
        if stripped.startswith("#"):
            comment.append(stripped)
        elif not comment and line.startswith(" " * indent) and not line.startswith(" " * (indent + 1)):
            continue  # a sibling with no comment of its own shares the one above
        else:
            break
    return " ".join(reversed(comment))


@pytest.mark.parametrize("key", [
    "config.transport.maxConnections", "config.transport.handshakeTimeoutSeconds",
    "config.transport.headerTimeoutSeconds", "config.transport.bodyTimeoutSeconds",
    "config.transport.idleTimeoutSeconds", "config.transport.bodyBytesInFlight",
    "config.templateCreatesPerNamespacePerMinute", "tls.minVersion", "tls.clientAuth",
    "priorityClassName", "networkPolicy", "resources",
])
def test_each_default_says_what_it_protects(key):
    """values.yaml documents these defaults by what they protect (the operator's question)."""
    lines = (CHART / "values.yaml").read_text().splitlines()
    assert "rotect" in _comment_above(lines, key), key
