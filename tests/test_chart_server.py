"""The chart and the server agree: the rendered config is what the server parses, the webhook
configuration points at paths it serves, the chart's certificate is what it serves over TLS, and
the RBAC the chart grants covers every API call the server and the clean-up job really make."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.test_chart_support import (
    FULLNAME,
    NAMESPACE,
    VALUE_SETS,
    config_file,
    find,
    needs_helm,
    rendered,
    values_of,
    webhook_entries,
)

pytestmark = needs_helm
ALL_SETS = (None, *VALUE_SETS)

webhook_config = pytest.importorskip("webhook.config", reason="webhook/config.py (the server's loader) is missing")


def _load_rendered(value_set: str | None, tmp_path: Path, env: dict[str, str] | None = None):
    path = tmp_path / "config.yaml"
    path.write_text(config_file(rendered(value_set)))
    return webhook_config.load_config(str(path), {"POD_NAMESPACE": NAMESPACE, **(env or {})}, {})


@pytest.mark.parametrize("value_set", ALL_SETS)
def test_the_server_parses_the_rendered_config_to_the_values_given(value_set, tmp_path):
    values = values_of(value_set)
    given = values["config"]
    config = _load_rendered(value_set, tmp_path)
    options = config.translate_options
    assert config.port == values["containerPort"]
    assert (config.cert_file, config.key_file) == ("/etc/kubectl-gpu/tls/tls.crt", "/etc/kubectl-gpu/tls/tls.key")
    if given["translation"]["apiVersion"] == "auto":
        assert config.api_version_auto
    else:
        assert options.api_version.value == f"resource.k8s.io/{given['translation']['apiVersion']}"
    assert options.sharing.value == given["translation"]["sharing"]
    assert config.unsatisfiable_claims == given["cluster"]["unsatisfiableClaims"]
    assert config.profile_ttl_seconds == given["cluster"]["profileTtlSeconds"]
    assert dict(config.feature_gates) == (given["cluster"].get("featureGates") or {})
    assert options.integer_gpus.value == given["translation"]["integerGpus"]
    assert options.gpu_memory == given["translation"]["gpuMemory"]
    assert options.aliyun_memory_unit == given["translation"]["aliyunMemoryUnit"]
    assert options.target_driver.value == given["translation"]["targetDriver"]
    assert config.pass_through_families == frozenset(given["passThroughFamilies"])
    assert config.extra_legacy_resources == frozenset(given["extraLegacyResources"])
    assert options.pass_through_families == frozenset(given["passThroughFamilies"])
    assert config.rewrite_workloads is given["rewriteWorkloads"]
    assert [(s.key, s.value) for s in config.dra_node_selectors] == \
        [(s["key"], s.get("value")) for s in given["draNodeSelectors"]]
    assert config.node_status_guard is given["nodeStatusGuard"]
    assert config.audit is given["audit"]
    assert config.opt_out_label == given["optOutLabel"]
    assert config.excluded_namespaces == frozenset({"kube-system", NAMESPACE, *given["excludedNamespaces"]})
    assert config.api_timeout_seconds == given["apiTimeoutSeconds"]
    assert config.log_level == given["logLevel"]
    # Every review answers before the API server stops waiting for it (webhook.timeoutSeconds).
    docs = rendered(value_set)
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for entry in find(docs, kind)["webhooks"]:
            assert config.review_deadline_seconds < entry["timeoutSeconds"] == config.admission_timeout_seconds


def test_the_deployment_and_cronjob_command_lines_are_accepted_by_the_cli(tmp_path):
    cli = pytest.importorskip("webhook.cli")
    docs = rendered(None)
    (container,) = find(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    config = tmp_path / "config.yaml"
    config.write_text(config_file(docs))
    args = [a.replace("/etc/kubectl-gpu/config.yaml", str(config)) for a in container["args"]]
    # The image's ENTRYPOINT is `kgpu-webhook serve` (Dockerfile); the chart adds args.
    context = cli.main.commands["serve"].make_context("serve", list(args))
    assert context.params["config_path"] == str(config)
    cron = find(docs, "CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    assert cron["command"] == ["kgpu-webhook", "cleanup"]
    cron_args = [a.replace("/etc/kubectl-gpu/config.yaml", str(config)) for a in cron["args"]]
    context = cli.main.commands["cleanup"].make_context("cleanup", cron_args)
    assert context.params["grace_seconds"] == 600


# --- the running server --------------------------------------------------------------------


def _allowed(role: dict[str, Any], verb: str, group: str, resource: str) -> bool:
    return any(group in rule["apiGroups"] and resource in rule["resources"] and verb in rule["verbs"]
               for rule in role["rules"])


def _denied_calls(role: dict[str, Any], requests) -> list[str]:
    return sorted({f"{r.verb} {r.group or 'core'}/{r.resource_path}" for r in requests
                   if r.resource and not _allowed(role, r.verb, r.group, r.resource_path)})


class _Https:
    """HTTPS to the webhook the way the API server calls it: trusting only the caBundle of the
    webhook configuration and checking the certificate against the Service's DNS name."""

    def __init__(self, port: int, ca_bundle_b64: str) -> None:
        import urllib3

        context = ssl.create_default_context(cadata=base64.b64decode(ca_bundle_b64).decode())
        name = f"{FULLNAME}.{NAMESPACE}.svc"
        self.pool = urllib3.HTTPSConnectionPool("127.0.0.1", port, ssl_context=context, server_hostname=name,
                                                assert_hostname=name, retries=False, timeout=30)

    def get(self, path: str) -> tuple[int, str]:
        response = self.pool.request("GET", path)
        return response.status, response.data.decode()

    def review(self, path: str, request: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
        response = self.pool.request("POST", path, body=body.encode(), headers={"Content-Type": "application/json"})
        assert response.status == 200, response.data[:500]
        return json.loads(response.data)["response"]


def _request(obj: dict[str, Any], resource: str, uid: str, namespace: str = "ml") -> dict[str, Any]:
    group, _, version = obj["apiVersion"].rpartition("/")
    gvk = {"group": group, "version": version, "kind": obj["kind"]}
    return {"uid": uid, "kind": gvk, "requestKind": gvk, "resource": {"group": group, "version": version, "resource": resource},
            "name": obj["metadata"]["name"], "namespace": namespace, "operation": "CREATE",
            "userInfo": {"username": "alice"}, "object": obj, "oldObject": None, "dryRun": False}


GPU_POD = {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train", "namespace": "ml"},
    "spec": {"containers": [{"name": "cuda", "image": "nvidia/cuda:12.4.0-base-ubuntu22.04",
                             "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
}


@pytest.fixture
def running_webhook(k8s_double, tmp_path):
    """The server started from the rendered chart: its ConfigMap file, its Secret's certificate,
    POD_NAMESPACE as the Deployment sets it; the API is the Kubernetes double."""
    from kubectl_gpu.k8s import AsyncClient
    from webhook.server import WebhookServer

    docs = rendered(None)
    # What the chart installs and the server renews (self-signed mode): its Secret and configurations.
    k8s_double.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    k8s_double.seed(*(d for d in docs if d["kind"] in (
        "Secret", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")))
    secret = find(docs, "Secret")["data"]
    tls = {name: tmp_path / name for name in ("tls.crt", "tls.key")}
    for name, path in tls.items():
        path.write_bytes(base64.b64decode(secret[name]))
    # The pod finds the files at /etc/kubectl-gpu/tls; here they are elsewhere, given by env.
    config = _load_rendered(None, tmp_path, {"KUBECTL_GPU_WEBHOOK_CERT_FILE": str(tls["tls.crt"]),
                                             "KUBECTL_GPU_WEBHOOK_KEY_FILE": str(tls["tls.key"])})
    api = AsyncClient(k8s_double.api_client().configuration, config.api_timeout_seconds)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = WebhookServer(config, api)
    port = asyncio.run_coroutine_threadsafe(server.start("127.0.0.1", 0), loop).result(30)
    try:
        yield docs, _Https(port, secret["ca.crt"])
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)


def test_the_server_started_from_the_chart_serves_what_the_chart_points_at(k8s_double, running_webhook):
    docs, https = running_webhook
    k8s_double.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}})
    k8s_double.seed({"apiVersion": "v1", "kind": "Node",
                     "metadata": {"name": "dra-node-1", "labels": {"ack.node.gpu.schedule": "disabled"}}})
    k8s_double.reset_requests()

    (container,) = find(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    ready_path = container["readinessProbe"]["httpGet"]["path"]
    deadline = time.monotonic() + 30  # bounded: readiness needs one API round trip
    status, body = https.get(ready_path)
    while status != 200 and time.monotonic() < deadline:
        time.sleep(0.1)
        status, body = https.get(ready_path)
    assert (status, body) == (200, "ok\n")
    assert https.get(container["livenessProbe"]["httpGet"]["path"])[0] == 200
    assert https.get(container["startupProbe"]["httpGet"]["path"])[0] == 200

    mutating = webhook_entries(docs, "MutatingWebhookConfiguration")["pods.kubectl-gpu.io"]
    response = https.review(mutating["clientConfig"]["service"]["path"], _request(GPU_POD, "pods", "uid-1"))
    assert response["uid"] == "uid-1" and response["allowed"] is True
    patch = json.loads(base64.b64decode(response["patch"]))
    assert any(op["path"].startswith("/spec/resourceClaims") or op["path"] == "/spec/resourceClaims" for op in patch)
    templates = k8s_double.list("ResourceClaimTemplate", "ml")
    assert len(templates) == 1

    validating = webhook_entries(docs, "ValidatingWebhookConfiguration")
    pinned = json.loads(json.dumps(GPU_POD))
    pinned["metadata"]["name"] = "pinned"
    pinned["spec"]["nodeName"] = "dra-node-1"
    response = https.review(validating["pods.kubectl-gpu.io"]["clientConfig"]["service"]["path"],
                            _request(pinned, "pods", "uid-2"))
    assert response["allowed"] is False and "dra-node-1" in response["status"]["message"]
    response = https.review(validating["dra-objects.kubectl-gpu.io"]["clientConfig"]["service"]["path"],
                            _request(templates[0], "resourceclaimtemplates", "uid-3"))
    assert response["allowed"] is True

    status, metrics = https.get("/metrics")  # where the ServiceMonitor scrapes
    assert status == 200 and "reviews" in metrics

    server_role = find(docs, "ClusterRole", FULLNAME)
    own_namespace = find(docs, "Role", FULLNAME)  # its Secret, in its namespace
    server_role = {"rules": server_role["rules"] + own_namespace["rules"]}
    calls = [r for r in k8s_double.requests if r.resource]
    assert {(r.verb, r.resource_path) for r in calls} >= {("get", "namespaces"), ("get", "nodes"),
                                                          ("create", "resourceclaimtemplates")}
    assert _denied_calls(server_role, calls) == []


def test_the_cleanup_job_needs_nothing_beyond_its_role(k8s_double, tmp_path):
    cleanup = pytest.importorskip("webhook.cleanup")
    from click.testing import CliRunner

    from webhook.cli import main

    docs = rendered(None)
    k8s_double.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}})
    spec = {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}
    managed = {"app.kubernetes.io/managed-by": "kubectl-gpu", **cleanup.CREATED_BY_WEBHOOK}
    k8s_double.seed(
        # unreferenced and marked long ago: deleted
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "spec": spec,
         "metadata": {"name": "gpu-1", "namespace": "ml", "labels": managed,
                      "annotations": {cleanup.UNUSED_SINCE_ANNOTATION: "2000-01-01T00:00:00Z"}}},
        # unreferenced, not marked yet: marked now, deleted by a later run
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "spec": spec,
         "metadata": {"name": "gpu-2", "namespace": "ml", "labels": managed}},
    )
    k8s_double.reset_requests()
    config = tmp_path / "config.yaml"
    config.write_text(config_file(docs))
    cron = find(docs, "CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    args = [cron["command"][1], *[a.replace("/etc/kubectl-gpu/config.yaml", str(config)) for a in cron["args"]],
            "--kubeconfig", k8s_double.kubeconfig_path()]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (left,) = k8s_double.list("ResourceClaimTemplate", "ml")
    assert left["metadata"]["name"] == "gpu-2" and cleanup.UNUSED_SINCE_ANNOTATION in left["metadata"]["annotations"]
    calls = [r for r in k8s_double.requests if r.resource]
    assert {("delete", "resourceclaimtemplates"), ("patch", "resourceclaimtemplates")} <= \
        {(r.verb, r.resource_path) for r in calls}
    assert _denied_calls(find(docs, "ClusterRole", f"{FULLNAME}-cleanup"), calls) == []


# --- the largest review the API server can send, within the chart's limits ---------------------


def _memory_limit_bytes(quantity: str) -> int:
    from kubectl_gpu.dra.quantity import parse_quantity

    return int(parse_quantity(quantity))


def _peak_rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc: the peak memory cannot be read here")


def _largest_update(size: int) -> bytes:
    """An UPDATE of a GPU Deployment whose object and oldObject are each about half of ``size``,
    made of many small values (an env list): the shape that costs the parser the most memory."""
    def deployment(image: str, entries: int) -> dict[str, Any]:
        env = [{"name": f"VARIABLE_{i:07d}", "value": "v" * 40} for i in range(entries)]
        return {"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "big", "namespace": "ml", "uid": "d-1"},
                "spec": {"selector": {"matchLabels": {"app": "big"}},
                         "template": {"metadata": {"labels": {"app": "big"}},
                                      "spec": {"containers": [{"name": "c", "image": image, "env": env,
                                                               "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}}

    per_entry = len(json.dumps({"name": "VARIABLE_0000000", "value": "v" * 40}, separators=(",", ":"))) + 1
    entries = (size // 2 - 4096) // per_entry
    new = deployment("img:new", entries)
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
              "request": _request(new, "deployments", "uid-big") | {
                  "operation": "UPDATE", "oldObject": deployment("img:old", entries)}}
    review["request"]["kind"] = {"group": "apps", "version": "v1", "kind": "Deployment"}
    review["request"]["resource"] = {"group": "apps", "version": "v1", "resource": "deployments"}
    unpadded = len(json.dumps(review, separators=(",", ":")))
    new["metadata"]["annotations"] = {"pad": "p" * (size - unpadded - 64)}  # up to the limit
    body = json.dumps(review, separators=(",", ":")).encode()
    assert size - 64 <= len(body) <= size
    return body


def test_the_largest_review_is_answered_within_the_charts_memory_limit_and_timeout(k8s_double, tmp_path):
    """kube-apiserver accepts request bodies up to 3 MiB (k8s.io/apiserver/pkg/server/config.go,
    MaxRequestBodyBytes = 3 * 1024 * 1024), so an UPDATE's AdmissionReview carries at most two such
    objects plus the envelope: the server answers bodies up to 7 MiB (as controller-runtime's
    webhook, pkg/webhook/admission/http.go maxRequestSize) and refuses more with 413.  Served by
    `kgpu-webhook serve` with the rendered chart's config, its answer must come within the
    webhook's timeoutSeconds (the API server gives up then) and its peak memory stay under the
    Deployment's memory limit (the kubelet kills it above)."""
    import os
    import socket
    import subprocess
    import sys
    import urllib3

    from webhook.review import MAX_BODY_BYTES

    docs = rendered(None)
    secret = find(docs, "Secret")["data"]
    for name in ("tls.crt", "tls.key"):
        (tmp_path / name).write_bytes(base64.b64decode(secret[name]))
    (tmp_path / "config.yaml").write_text(config_file(docs))
    (container,) = find(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    limit = _memory_limit_bytes(container["resources"]["limits"]["memory"])
    timeout = find(docs, "MutatingWebhookConfiguration")["webhooks"][0]["timeoutSeconds"]
    k8s_double.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}})
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "POD_NAMESPACE": NAMESPACE,
           "KUBECTL_GPU_WEBHOOK_CERT_FILE": str(tmp_path / "tls.crt"),
           "KUBECTL_GPU_WEBHOOK_KEY_FILE": str(tmp_path / "tls.key")}
    server = subprocess.Popen(
        [sys.executable, "-c", "from webhook.cli import main; main()", "serve", "--config",
         str(tmp_path / "config.yaml"), "--kubeconfig", k8s_double.kubeconfig_path(), "--port", str(port),
         "--shutdown-delay-seconds", "0"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        context = ssl.create_default_context(cadata=base64.b64decode(secret["ca.crt"]).decode())
        name = f"{FULLNAME}.{NAMESPACE}.svc"
        pool = urllib3.HTTPSConnectionPool("127.0.0.1", port, ssl_context=context, server_hostname=name,
                                           assert_hostname=name, retries=False, timeout=timeout)
        deadline = time.monotonic() + 60  # start-up, bounded
        while True:
            try:
                if pool.request("GET", "/healthz").status == 200:
                    break
            except urllib3.exceptions.HTTPError:
                pass
            assert time.monotonic() < deadline and server.poll() is None, "the server did not start"
            time.sleep(0.2)
        body = _largest_update(MAX_BODY_BYTES)
        answer = pool.request("POST", "/mutate", body=body, headers={"Content-Type": "application/json"})
        assert answer.status == 200
        response = json.loads(answer.data)["response"]
        assert response["uid"] == "uid-big" and response["allowed"] is True and response.get("patch")
        assert _peak_rss_bytes(server.pid) < limit
        too_big = pool.request("POST", "/mutate", body=body + b" " * (MAX_BODY_BYTES + 1 - len(body)),
                               headers={"Content-Type": "application/json"})
        assert too_big.status == 413 and b"3 MiB each" in too_big.data
    finally:
        server.terminate()
        server.wait(30)
