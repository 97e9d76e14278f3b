"""values.schema.json turns a bad value into a helm error that names the key and what is allowed."""

from __future__ import annotations

import pytest

from tests.test_chart_support import HelmError, needs_helm, template

pytestmark = needs_helm


def _rejected(tmp_path, values_yaml: str) -> str:
    values = tmp_path / "values.yaml"
    values.write_text(values_yaml)
    with pytest.raises(HelmError) as err:
        template(None, None, "-f", str(values))
    return err.value.stderr


@pytest.mark.parametrize("values_yaml, message", [
    ("config: {translation: {sharing: half}}",
     "at '/config/translation/sharing': value must be one of 'auto', 'consumable', 'exclusive', 'timeslicing', 'mps'"),
    ("config: {translation: {apiVersion: v1alpha3}}",
     "at '/config/translation/apiVersion': value must be one of 'auto', 'v1', 'v1beta2', 'v1beta1'"),
    ("config: {cluster: {unsatisfiableClaims: reject}}",
     "at '/config/cluster/unsatisfiableClaims': value must be one of 'warn', 'deny', 'ignore'"),
    ("config: {translation: {targetDriver: amd}}",
     "at '/config/translation/targetDriver': value must be one of 'nvidia', 'hami', 'auto'"),
    ("config: {translation: {integerGpus: keep}}",
     "at '/config/translation/integerGpus': value must be one of 'rewrite', 'extended-resource'"),
    ("config: {translation: {aliyunMemoryUnit: GB}}",
     "at '/config/translation/aliyunMemoryUnit': value must be one of 'GiB', 'MiB'"),
    ("config: {translation: {gpuMemory: 80GB}}",
     "at '/config/translation/gpuMemory': '80GB' does not match pattern"),
    ("config: {passThroughFamilies: [nvidia]}",
     "at '/config/passThroughFamilies/0': value must be one of 'nvidia-gpu', 'vcuda', 'mig', 'hami', 'aliyun', "
     "'vgpu-manager', 'volcano', 'volcano-gpushare', 'koordinator', 'tpu'"),
    ("config: {passThroughFamilies: [tpu, tpu]}", "at '/config/passThroughFamilies': items at 0 and 1 are equal"),
    ("config: {draNodeSelectors: [{value: disabled}]}", "at '/config/draNodeSelectors/0': missing property 'key'"),
    ("config: {draNodeSelectors: [{key: 'bad key!', value: x}]}", "at '/config/draNodeSelectors/0/key'"),
    ("config: {draNodeSelectors: [{key: a.b/c, values: [x]}]}",
     "at '/config/draNodeSelectors/0': additional properties 'values' not allowed"),
    ("config: {audit: 'yes'}", "at '/config/audit': got string, want boolean"),
    ("config: {rewriteWorkloads: 1}", "at '/config/rewriteWorkloads': got number, want boolean"),
    ("config: {logLevel: verbose}", "at '/config/logLevel': value must be one of 'debug', 'info', 'warning', 'error'"),
    ("config: {apiTimeoutSeconds: 0}", "at '/config/apiTimeoutSeconds': exclusiveMinimum: got 0, want 0"),
    ("config: {apiTimeoutSeconds: 60}", "at '/config/apiTimeoutSeconds': maximum: got 60, want 30"),
    ("config: {optOutLabel: 'opt out'}", "at '/config/optOutLabel'"),
    ("config: {excludedNamespaces: [Kube_System]}", "at '/config/excludedNamespaces/0'"),
    ("config: {rewriteWorkload: true}", "at '/config': additional properties 'rewriteWorkload' not allowed"),
    ("webhook: {failurePolicy: Maybe}", "at '/webhook/failurePolicy': value must be one of"),
    ("webhook: {timeoutSeconds: 31}", "at '/webhook/timeoutSeconds': maximum: got 31, want 30"),
    ("webhook: {timeoutSeconds: 0}", "at '/webhook/timeoutSeconds': minimum: got 0, want 1"),
    ("replicaCount: 0", "at '/replicaCount': minimum: got 0, want 1"),
    ("replicaCount: two", "at '/replicaCount': got string, want integer"),
    ("certificates: {mode: vault}", "at '/certificates/mode': value must be one of 'self-signed', 'cert-manager'"),
    ("certificates: {certManager: {issuerRef: {name: ca, kind: Vault}}}",
     "at '/certificates/certManager/issuerRef/kind': value must be one of 'Issuer', 'ClusterIssuer'"),
    ("containerPort: 443", "at '/containerPort': minimum: got 443, want 1,024"),
    ("image: {digest: latest}", "at '/image/digest': 'latest' does not match pattern"),
    ("topologySpread: {nodes: Sometimes}", "at '/topologySpread/nodes': value must be one of"),
    ("networkPolicy: {apiServerCIDRs: [10.0.0.1]}", "at '/networkPolicy/apiServerCIDRs/0'"),
    ("cleanup: {schedule: every hour}", "at '/cleanup/schedule'"),
    ("replicas: 3", "additional properties 'replicas' not allowed"),
])
def test_bad_values_are_rejected_with_the_key_and_the_allowed_values(tmp_path, values_yaml, message):
    stderr = _rejected(tmp_path, values_yaml)
    assert "values don't meet the specifications of the schema" in stderr
    assert message in stderr


@pytest.mark.parametrize("values_yaml", [
    "config: {translation: {gpuMemory: 80Gi, apiVersion: v1beta2, sharing: timeslicing}}",
    "config: {draNodeSelectors: [{key: nvidia.com/dra.present}, {key: a.example/b, value: ''}]}",
    "config: {apiTimeoutSeconds: 0.5}",
    "webhook: {failurePolicy: Ignore}",
    "podDisruptionBudget: {maxUnavailable: 50%}",
    "certificates: {mode: cert-manager, certManager: {issuerRef: {name: ca, kind: ClusterIssuer}}}",
    "global: {imageRegistry: example.com}",
])
def test_good_values_are_accepted(tmp_path, values_yaml):
    values = tmp_path / "values.yaml"
    values.write_text(values_yaml)
    assert template(None, None, "-f", str(values))


def test_the_target_driver_choices_are_the_translations():
    import json
    from pathlib import Path

    from kubectl_gpu.core import TargetDriver

    schema = json.loads((Path(__file__).resolve().parent.parent / "charts" / "kubectl-gpu-webhook"
                         / "values.schema.json").read_text())
    translation = schema["properties"]["config"]["properties"]["translation"]["properties"]
    assert translation["targetDriver"]["enum"] == [t.value for t in TargetDriver]
