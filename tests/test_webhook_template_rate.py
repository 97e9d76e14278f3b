"""A bound on the claim objects the webhook creates per namespace and minute: a flood of reviews
(forged, or a pathological controller) cannot fill a namespace; beyond the bound a pod is denied
with a retryable 429 that says when to retry, and other namespaces are not affected."""

from __future__ import annotations

from tests.conftest import admission_review
from tests.test_webhook_server import gpu_pod
from webhook.ratelimit import PerKeyRate


def test_beyond_the_bound_a_new_template_is_denied_with_a_retryable_429(start_webhook, k8s_double):
    k8s_double.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    hook = start_webhook(templateCreatesPerNamespacePerMinute=2)
    for amount in ("1", "2"):
        assert hook.review("/mutate", admission_review(gpu_pod(amount)))["allowed"]
    denied = hook.review("/mutate", admission_review(gpu_pod("4")))
    assert denied["allowed"] is False and denied["status"]["code"] == 429
    assert "templateCreatesPerNamespacePerMinute" in denied["status"]["message"]
    assert "retry in" in denied["status"]["message"]
    assert len(k8s_double.list("ResourceClaimTemplate", "default")) == 2

    # A pod whose template exists creates nothing, so it is admitted; another namespace has its own bound.
    assert hook.review("/mutate", admission_review(gpu_pod("1")))["allowed"]
    other = gpu_pod("4")
    other["metadata"]["namespace"] = "other"
    assert hook.review("/mutate", admission_review(other, namespace="other"))["allowed"]


def test_the_bound_refills_over_the_minute():
    now = [0.0]
    rate = PerKeyRate(2, clock=lambda: now[0])
    assert rate.take("ml") and rate.take("ml") and not rate.take("ml")
    assert rate.retry_after("ml") == 30.0
    now[0] = 30.0
    assert rate.take("ml") and not rate.take("ml")
    assert rate.take("other")
