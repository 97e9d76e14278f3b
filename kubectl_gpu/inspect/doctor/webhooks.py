"""The kubectl-gpu admission webhook: configured, and pointing at a Service that can answer.

A webhook whose Service has no ready endpoint rejects every matching pod (failurePolicy Fail) or
silently lets legacy-GPU pods through unconverted (Ignore).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from kubectl_gpu.core.constants import MANAGED_BY_LABEL, MANAGED_BY_VALUE
from kubectl_gpu.inspect.doctor.inputs import DoctorInputs
from kubectl_gpu.inspect.doctor.report import CheckResult
from kubectl_gpu.inspect.findings import Finding, Severity

NAME = "webhook"
TITLE = "kubectl-gpu admission webhook configuration and service"
WEBHOOK_NAME_SUFFIX = "kubectl-gpu.io"
CHART_NAME = "kubectl-gpu-webhook"
# Where every release's files are published (krew/gpu.yaml's archives live there too).
RELEASES_URL = "https://github.com/kubectl-gpu/kubectl-gpu/releases/download"


def _chart_reference() -> str:
    """The chart archive scripts/release publishes with this plugin's release, which `helm install`
    takes as a URL: a suggested command must work where it is read, so never a path inside this
    repository nor a registry nobody pushes to."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("kubectl-gpu")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return f"{RELEASES_URL}/v<VERSION>/{CHART_NAME}-<VERSION>.tgz"
    return f"{RELEASES_URL}/v{release}/{CHART_NAME}-{release}.tgz"


CHART_REFERENCE = _chart_reference()
RELEASE_NAMESPACE = "kubectl-gpu"
CERT_MANAGER_ANNOTATION = "cert-manager.io/inject-ca-from"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"


@dataclass(frozen=True)
class _Target:
    kind: str  # MutatingWebhookConfiguration | ValidatingWebhookConfiguration
    config: str
    namespace: str
    service: str
    port: int
    fails_closed: bool  # failurePolicy Fail (the default)

    @property
    def subject(self) -> str:
        return f"{self.kind.lower()}/{self.config}"


def is_kubectl_gpu_webhook(config: Mapping[str, Any]) -> bool:
    labels = (config.get("metadata") or {}).get("labels") or {}
    if labels.get(MANAGED_BY_LABEL) == MANAGED_BY_VALUE or labels.get("app.kubernetes.io/name") == CHART_NAME:
        return True
    return any(str(w.get("name", "")).endswith(WEBHOOK_NAME_SUFFIX) for w in config.get("webhooks") or ())


def installed(inputs: DoctorInputs) -> bool:
    return any(is_kubectl_gpu_webhook(c) for c in (*inputs.mutating_webhooks, *inputs.validating_webhooks))


def check_webhooks(inputs: DoctorInputs) -> CheckResult:
    configs = [("MutatingWebhookConfiguration", c) for c in inputs.mutating_webhooks
               if is_kubectl_gpu_webhook(c)]
    configs += [("ValidatingWebhookConfiguration", c) for c in inputs.validating_webhooks
                if is_kubectl_gpu_webhook(c)]
    if not configs:
        return CheckResult(NAME, TITLE, "no kubectl-gpu webhook configuration", (Finding(
            "webhook-not-installed", Severity.INFO, "webhook/kubectl-gpu",
            "no kubectl-gpu admission webhook is installed: new pods asking for legacy GPUs are "
            "not converted to DRA claims",
            f"install the webhook: helm install kubectl-gpu {CHART_REFERENCE} --namespace "
            f"{RELEASE_NAMESPACE} --create-namespace (or convert manifests with: kubectl gpu migrate FILE)"),))
    findings: list[Finding] = []
    targets: dict[tuple, _Target] = {}
    for kind, config in configs:
        name = str((config.get("metadata") or {}).get("name") or "")
        annotations = (config.get("metadata") or {}).get("annotations") or {}
        for webhook in config.get("webhooks") or ():
            client = webhook.get("clientConfig") or {}
            fails_closed = webhook.get("failurePolicy", "Fail") == "Fail"
            if not client.get("caBundle"):
                findings.append(_empty_ca_bundle(kind, name, webhook, annotations,
                                                 (client.get("service") or {}).get("namespace")))
            service = client.get("service")
            if not service:
                findings.append(Finding(
                    "webhook-url-not-checked", Severity.INFO, f"{kind.lower()}/{name}",
                    f"webhook {webhook.get('name')} calls URL {client.get('url')}; doctor only "
                    "checks in-cluster Services", "make sure that URL answers over TLS"))
                continue
            target = _Target(kind, name, str(service.get("namespace") or ""),
                             str(service.get("name") or ""), int(service.get("port") or 443),
                             fails_closed)
            key = (kind, name, target.namespace, target.service, target.port)
            previous = targets.get(key)
            # One finding per Service; it is as bad as the strictest webhook calling it.
            if previous is None or (fails_closed and not previous.fails_closed):
                targets[key] = target
    for target in targets.values():
        finding = _service_finding(target, inputs)
        if finding is not None:
            findings.append(finding)
    summary = f"{len(configs)} configuration(s), {len(targets)} service target(s)"
    return CheckResult(NAME, TITLE, summary, tuple(findings))


def _empty_ca_bundle(kind: str, name: str, webhook: Mapping[str, Any],
                     annotations: Mapping[str, str], namespace: str | None) -> Finding:
    if CERT_MANAGER_ANNOTATION in annotations:
        fix = (f"check that cert-manager runs and that Certificate {annotations[CERT_MANAGER_ANNOTATION]} "
               "is Ready; its CA injector fills caBundle")
    else:
        fix = ("reinstall the chart so it renders the caBundle (or set certificates.mode=cert-manager): "
               f"helm upgrade --install kubectl-gpu {CHART_REFERENCE} --namespace "
               f"{namespace or RELEASE_NAMESPACE} --reuse-values")
    return Finding(
        "webhook-ca-bundle-empty", Severity.ERROR, f"{kind.lower()}/{name}",
        f"webhook {webhook.get('name')} has an empty caBundle: the API server cannot verify the "
        "webhook's certificate, so every call to it fails", fix)


def _service_finding(target: _Target, inputs: DoctorInputs) -> Finding | None:
    effect = ("every pod creation it matches is REJECTED" if target.fails_closed
              else "matching pods are admitted WITHOUT conversion (failurePolicy Ignore)")
    severity = Severity.ERROR if target.fails_closed else Severity.WARNING
    where = f"{target.namespace}/{target.service}"
    service = _find(inputs.services, target.namespace, target.service)
    if service is None:
        return Finding("webhook-service-missing", severity, target.subject,
                       f"Service {where} that the webhook calls does not exist; {effect}",
                       f"reinstall the webhook chart in namespace {target.namespace}, or delete "
                       f"{target.kind} {target.config} if the webhook was uninstalled")
    ports = [p for p in (service.get("spec") or {}).get("ports") or () if p.get("port") == target.port]
    if not ports:
        offered = ", ".join(str(p.get("port")) for p in (service.get("spec") or {}).get("ports") or ()) or "none"
        return Finding("webhook-service-port", severity, target.subject,
                       f"the webhook calls port {target.port} of Service {where}, which exposes "
                       f"{offered}; {effect}",
                       f"set clientConfig.service.port to one of the Service's ports ({offered}) "
                       "or fix the Service")
    ready = _ready_endpoints(inputs, target)
    if ready == 0:
        return Finding("webhook-not-ready", severity, target.subject,
                       f"Service {where} has no ready endpoints: the webhook server is not running "
                       f"or not ready; {effect}",
                       f"check the webhook pods: kubectl -n {target.namespace} get pods,endpoints "
                       f"and kubectl -n {target.namespace} describe deployment {target.service}")
    return None


def _ready_endpoints(inputs: DoctorInputs, target: _Target) -> int:
    if inputs.endpoint_slices is not None:
        count = 0
        for endpoint_slice in inputs.endpoint_slices:
            metadata = endpoint_slice.get("metadata") or {}
            if metadata.get("namespace") != target.namespace or \
                    (metadata.get("labels") or {}).get(SERVICE_NAME_LABEL) != target.service:
                continue
            for endpoint in endpoint_slice.get("endpoints") or ():
                # An unset `ready` means ready, as kube-proxy reads it.
                if (endpoint.get("conditions") or {}).get("ready", True) is not False:
                    count += 1
        return count
    endpoints = _find(inputs.endpoints, target.namespace, target.service)
    if endpoints is None:
        return 0
    return sum(len(subset.get("addresses") or ()) for subset in endpoints.get("subsets") or ())


def _find(objects: tuple[Mapping[str, Any], ...], namespace: str, name: str) -> Mapping[str, Any] | None:
    for obj in objects:
        metadata = obj.get("metadata") or {}
        if metadata.get("name") == name and metadata.get("namespace") == namespace:
            return obj
    return None
