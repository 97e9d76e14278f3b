"""The webhook says so when it rewrites pods in a namespace whose ResourceQuota caps the legacy GPU
resource but not the DRA one (the rewritten pods would escape the cap): warn, deny or ignore."""

from __future__ import annotations

import pytest

from kubectl_gpu.core import QuotaTarget, TranslateOptions
from tests.conftest import admission_review
from webhook.quota_guard import uncapped

DEVICES = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"


def gpu_pod() -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "trainer", "namespace": "default"},
            "spec": {"containers": [{"name": "cuda", "image": "nvidia/cuda",
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def quota(hard: dict) -> dict:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "gpus", "namespace": "default"},
            "spec": {"hard": hard}}


@pytest.fixture
def capped(k8s_double):
    k8s_double.seed(quota({"requests.nvidia.com/gpu": "4"}))
    return k8s_double


def test_a_quota_without_the_dra_entry_is_named_with_what_to_add():
    [(warning, reason)] = uncapped([quota({"requests.nvidia.com/gpu": "4"})], TranslateOptions(), QuotaTarget())
    assert warning == f"ResourceQuota gpus does not count these GPUs: add {DEVICES}"
    assert len("kubectl-gpu: " + warning) <= 120
    assert reason.startswith("ResourceQuota default/gpus caps requests.nvidia.com/gpu but not " + DEVICES)
    assert uncapped([quota({"requests.nvidia.com/gpu": "4", DEVICES: "4"})], TranslateOptions(), QuotaTarget()) == []


def test_a_rewrite_under_such_a_quota_is_admitted_with_a_warning_and_counted(start_webhook, capped):
    hook = start_webhook()
    response = hook.review("/mutate", admission_review(gpu_pod()))
    assert response["allowed"] and "patch" in response
    assert f"kubectl-gpu: ResourceQuota gpus does not count these GPUs: add {DEVICES}" in response["warnings"]
    assert 'kubectl_gpu_webhook_uncapped_rewrites_total{mode="warn"} 1.0' in hook.metrics_text()


def test_deny_refuses_it_and_says_what_to_add(start_webhook, capped):
    hook = start_webhook(quota="deny")
    response = hook.review("/mutate", admission_review(gpu_pod()))
    assert not response["allowed"] and response["status"]["code"] == 403
    assert f"caps requests.nvidia.com/gpu but not {DEVICES}" in response["status"]["message"]
    assert 'kubectl_gpu_webhook_uncapped_rewrites_total{mode="deny"} 1.0' in hook.metrics_text()


def test_audit_mode_only_warns_even_with_deny(start_webhook, capped):
    hook = start_webhook(quota="deny", audit=True)
    response = hook.review("/mutate", admission_review(gpu_pod()))
    assert response["allowed"] and "patch" not in response
    assert any("ResourceQuota gpus does not count these GPUs" in w for w in response["warnings"])
    assert 'kubectl_gpu_webhook_uncapped_rewrites_total{mode="audit"} 1.0' in hook.metrics_text()


def test_ignore_reads_no_quota(start_webhook, capped):
    hook = start_webhook(quota="ignore")
    capped.reset_requests()
    response = hook.review("/mutate", admission_review(gpu_pod()))
    assert response["allowed"] and not any("ResourceQuota" in w for w in response.get("warnings", []))
    assert capped.count(resource="resourcequotas") == 0


def test_a_quota_that_already_counts_dra_devices_gets_no_warning(start_webhook, k8s_double):
    k8s_double.seed(quota({"requests.nvidia.com/gpu": "4", DEVICES: "4"}))
    response = start_webhook().review("/mutate", admission_review(gpu_pod()))
    assert not any("ResourceQuota" in w for w in response.get("warnings", []))


@pytest.mark.parametrize("value,expected", [("deny", "deny"), ("ignore", "ignore")])
def test_the_quota_mode_is_read_from_the_config_file(tmp_path, value, expected):
    from webhook.config import load_config

    path = tmp_path / "config.yaml"
    path.write_text(f"quota: {value}\n")
    assert load_config(str(path), {}, {}).quota == expected


def test_an_unknown_quota_mode_names_the_key_and_the_choices(tmp_path):
    from webhook.config import ConfigError, load_config

    path = tmp_path / "config.yaml"
    path.write_text("quota: sometimes\n")
    with pytest.raises(ConfigError, match="quota: 'sometimes'; use one of: warn, deny, ignore"):
        load_config(str(path), {}, {})
