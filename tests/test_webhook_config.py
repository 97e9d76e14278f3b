"""Webhook configuration: the design.md file format, env over file, flags over env, clear errors."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from cryptography import x509

from kubectl_gpu.core.model import ApiVersion, IntegerGpuMode, Sharing, TargetDriver
from kubectl_gpu.dra import hami
from webhook.cli import main
from webhook.config import ConfigError, load_config

DESIGN_EXAMPLE = """
port: 8443
tls: {certFile: /etc/kubectl-gpu/tls/tls.crt, keyFile: /etc/kubectl-gpu/tls/tls.key}
translation:
  apiVersion: v1beta2
  sharing: exclusive
  integerGpus: extended-resource
  gpuMemory: "80Gi"
  aliyunMemoryUnit: MiB
  targetDriver: hami
passThroughFamilies: [tpu]
rewriteWorkloads: false
draNodeSelectors:
  - {key: ack.node.gpu.schedule, value: disabled}
  - {key: nvidia.com/dra}
nodeStatusGuard: true
audit: true
optOutLabel: example.com/no-dra
excludedNamespaces: [kube-system, monitoring]
apiTimeoutSeconds: 3
logLevel: debug
"""


def write(tmp_path, text: str) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return str(path)


def test_defaults_without_a_file():
    config = load_config(None, {}, {})
    assert config.port == 8443 and config.rewrite_workloads is True and config.node_status_guard is False
    assert config.translate_options.integer_gpus is IntegerGpuMode.REWRITE
    assert config.translate_options.target_driver is TargetDriver.NVIDIA
    assert config.excluded_namespaces == {"kube-system"}
    assert [(s.key, s.value) for s in config.dra_node_selectors] == [("ack.node.gpu.schedule", "disabled")]


def test_every_key_of_the_design_format_is_read(tmp_path):
    config = load_config(write(tmp_path, DESIGN_EXAMPLE), {"POD_NAMESPACE": "gpu-system"}, {})
    options = config.translate_options
    assert options.api_version is ApiVersion.V1BETA2 and options.sharing is Sharing.EXCLUSIVE
    assert options.integer_gpus is IntegerGpuMode.EXTENDED_RESOURCE and options.gpu_memory == "80Gi"
    assert options.aliyun_memory_unit == "MiB" and options.pass_through_families == {"tpu"}
    assert options.target_driver is TargetDriver.HAMI and options.gpu_device_class == hami.HAMI_DEVICE_CLASS
    assert config.rewrite_workloads is False and config.node_status_guard is True and config.audit is True
    assert [(s.key, s.value) for s in config.dra_node_selectors] == [("ack.node.gpu.schedule", "disabled"), ("nvidia.com/dra", None)]
    assert config.opt_out_label == "example.com/no-dra" and config.api_timeout_seconds == 3
    assert config.excluded_namespaces == {"kube-system", "monitoring", "gpu-system"}  # its own namespace too


def test_env_overrides_the_file_and_flags_override_env(tmp_path):
    path = write(tmp_path, "port: 9000\naudit: false\n")
    env = {"KUBECTL_GPU_WEBHOOK_PORT": "9100", "KUBECTL_GPU_WEBHOOK_AUDIT": "true"}
    assert load_config(path, env, {}).port == 9100
    config = load_config(path, env, {"port": 9200, "audit": None})
    assert config.port == 9200 and config.audit is True


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("prot: 8443\n", "did you mean 'port'"),
        ("translation: {sharing: halves}\n", "use one of: consumable, exclusive, timeslicing, mps"),
        ("translation: {integerGpus: kep}\n", "rewrite, extended-resource"),
        ("translation: {apiVersion: v2}\n", "unknown DRA API version"),
        ("translation: {gpuMemory: lots}\n", 'write e.g. "80Gi"'),
        ("passThroughFamilies: [amd]\n", "use any of: nvidia-gpu"),
        ("port: 70000\n", "use 1-65535"),
        ("translation: {targetDriver: amd}\n", "translation.targetDriver: 'amd'; use one of: nvidia, hami, auto"),
        ("rewriteWorkloads: maybe\n", "write true or false"),
        ("draNodeSelectors: [{label: x}]\n", "draNodeSelectors[0]"),
        ("apiTimeoutSeconds: 60\n", "at most 30"),
        ("- a list\n", "must hold a mapping"),
        ("port: [\n", "not valid YAML"),
        # A value its tag cannot hold (tests/test_unreadable_values.py): an error at its line, not a
        # traceback at start.
        ("port: !!int abc\n", "line 1"),
        ("audit: !!bool sometimes\n", "remove the tag or fix the value"),
        ("apiTimeoutSeconds: " + "9" * 5000 + "\n", "5000 digits"),
    ],
)
def test_bad_config_fails_at_start_naming_the_key(tmp_path, text, message):
    with pytest.raises(ConfigError, match=None) as caught:
        load_config(write(tmp_path, text), {}, {})
    assert message in str(caught.value)


def test_serve_refuses_a_bad_config_with_a_usage_error(tmp_path):
    result = CliRunner().invoke(main, ["serve", "--config", write(tmp_path, "audit: sometimes\n")])
    assert result.exit_code == 2 and "audit" in result.output


@pytest.mark.parametrize("value", ["!!int abc", "!!timestamp x", "9" * 5000])
def test_an_environment_value_that_cannot_be_read_names_its_variable(value):
    with pytest.raises(ConfigError) as caught:
        load_config(None, {"KUBECTL_GPU_WEBHOOK_PORT": value}, {})
    assert "KUBECTL_GPU_WEBHOOK_PORT" in str(caught.value) or "port" in str(caught.value)


def test_serve_says_how_to_get_missing_certificates(tmp_path):
    result = CliRunner().invoke(main, ["serve", "--cert-file", str(tmp_path / "no.crt"), "--key-file", str(tmp_path / "no.key")])
    assert result.exit_code == 2 and "kgpu-webhook certs" in result.output


def test_certs_command_writes_a_ca_and_a_cert_for_the_service_names(tmp_path):
    result = CliRunner().invoke(main, ["certs", "--service", "gpu-hook", "--namespace", "gpu-system", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    ca = x509.load_pem_x509_certificate((tmp_path / "ca.crt").read_bytes())
    cert = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)
    assert names == ["gpu-hook", "gpu-hook.gpu-system", "gpu-hook.gpu-system.svc", "gpu-hook.gpu-system.svc.cluster.local"]
    assert cert.issuer == ca.subject
    cert.verify_directly_issued_by(ca)
    assert (tmp_path / "tls.key").stat().st_mode & 0o077 == 0
