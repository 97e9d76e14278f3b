"""kubectl-gpu's one Kubernetes client (kubectl_gpu/k8s): the async client the webhook uses and its
synchronous face for the CLI, against the HTTP-level API double.

Behaviour specified by the Kubernetes API concepts page (https://kubernetes.io/docs/reference/
using-api/api-concepts/): "Retrieving large results sets in chunks" (a continue token that has
expired is answered 410 Gone and the client must start the list again), status codes
(409 Conflict for AlreadyExists and stale resourceVersions, 429/5xx to retry), and bearer-token
authentication (https://kubernetes.io/docs/reference/access-authn-authz/authentication/).
"""

from __future__ import annotations

import datetime as dt

import pytest
from kubernetes.client import Configuration

from kubectl_gpu.k8s import (ApiError, AsyncClient, Client, Conflict, Forbidden, NotFound, Resource,
                             Unavailable, Unreachable)
from tests.k8sdouble import K8sDouble
from webhook.cleanup import run_cleanup
from webhook.templates import CREATED_BY_WEBHOOK, TemplateConflict, TemplateUnavailable

NAMESPACE = Resource("v1", "Namespace")
TEMPLATES = Resource("resource.k8s.io/v1", "ResourceClaimTemplate")


def configuration(double: K8sDouble) -> Configuration:
    return double.api_client().configuration


def managed_template(name: str) -> dict:
    """A template as the webhook creates it (so the clean-up may delete it)."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "default",
                         "labels": {"app.kubernetes.io/managed-by": "kubectl-gpu", **CREATED_BY_WEBHOOK}},
            "spec": {"spec": {"devices": {"requests": [
                {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}}


async def test_the_async_client_reads_writes_and_lists_raw_json(k8s_double):
    api = AsyncClient(configuration(k8s_double), 5)
    try:
        created = await api.create(TEMPLATES, "default", managed_template("t"))
        assert created["metadata"]["uid"]
        assert (await api.get(TEMPLATES, "default", "t"))["spec"] == created["spec"]
        patched = await api.merge_patch(TEMPLATES, "default", "t", {"metadata": {"annotations": {"a": "b"}}})
        assert patched["metadata"]["annotations"] == {"a": "b"}
        [listed] = await api.list(TEMPLATES, "default")
        assert listed["kind"] == "ResourceClaimTemplate"  # list items say what they are, as kubectl shows them
        await api.delete(TEMPLATES, "default", "t", patched["metadata"]["resourceVersion"])
        assert await api.get_object(TEMPLATES.path("default", "t")) is None
        assert await api.reachable()
    finally:
        await api.close()


async def test_each_failure_is_the_error_class_its_status_calls_for(k8s_double):
    api = AsyncClient(configuration(k8s_double), 5)
    try:
        await api.create(TEMPLATES, "default", managed_template("t"))
        with pytest.raises(Conflict) as conflict:
            await api.create(TEMPLATES, "default", managed_template("t"))
        assert conflict.value.status == 409 and conflict.value.conflict and conflict.value.reason == "AlreadyExists"
        with pytest.raises(Conflict):  # a delete guarded by a stale resourceVersion
            await api.delete(TEMPLATES, "default", "t", "1")
        with pytest.raises(NotFound) as missing:
            await api.get(TEMPLATES, "default", "nope")
        assert missing.value.status == 404 and "GET " in str(missing.value)
        k8s_double.fail("get", "namespaces", status=503, times=1)
        with pytest.raises(Unavailable) as busy:
            await api.get(NAMESPACE, None, "default")
        assert busy.value.status == 503 and busy.value.retryable
        k8s_double.fail("create", "resourceclaimtemplates", status=403, times=1)
        with pytest.raises(Forbidden) as refused:
            await api.create(TEMPLATES, "default", managed_template("u"))
        assert "POST " in str(refused.value) and "RBAC" in str(refused.value)
    finally:
        await api.close()


async def test_a_server_that_does_not_answer_is_unreachable_with_status_0():
    config = Configuration()
    config.host = "http://127.0.0.1:1"  # nothing listens on port 1
    api = AsyncClient(config, 5)
    try:
        with pytest.raises(Unreachable) as down:
            await api.get(NAMESPACE, None, "default")
        assert down.value.status == 0 and down.value.retryable
        assert "cannot reach the API server" in str(down.value)
        assert not await api.reachable()
    finally:
        await api.close()


def test_the_bearer_token_of_the_configuration_is_sent():
    with K8sDouble(token="s3cret") as double:
        assert Client(configuration(double), 5).get(NAMESPACE, None, "default")["metadata"]["name"] == "default"
        anonymous = Configuration()
        anonymous.host = double.url
        with pytest.raises(Forbidden) as refused:
            Client(anonymous, 5).get(NAMESPACE, None, "default")
        assert refused.value.status == 401


def test_the_sync_face_gives_what_the_async_client_gives(k8s_double):
    api = Client(configuration(k8s_double), 5)
    api.create(TEMPLATES, "default", managed_template("t"))
    assert [t["metadata"]["name"] for t in api.list(TEMPLATES, "default")] == ["t"]
    assert api.get_object(TEMPLATES.path("default", "gone")) is None
    with pytest.raises(ApiError) as conflict:
        api.create(TEMPLATES, "default", managed_template("t"))
    assert isinstance(conflict.value, Conflict)


def test_cleanup_restarts_a_list_whose_continue_token_expired(k8s_double):
    k8s_double.seed(managed_template("unused"))
    k8s_double.fail("list", "pods", status=410, reason="Expired", message="continue token expired", times=1)
    report = run_cleanup(Client(configuration(k8s_double), 5), "resource.k8s.io/v1",
                         now=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc), grace_seconds=600)
    assert report.marked == ["ResourceClaimTemplate default/unused"]
    assert k8s_double.count(verb="list", resource="pods") == 2  # the expired attempt, then the list again


def test_template_errors_carry_the_admission_status_they_are_answered_with():
    # kopf's AdmissionError carries its code; a conflicting object is 409, an API outage 503.
    assert TemplateConflict("x").code == 409
    assert TemplateUnavailable("x").code == 503


def test_a_named_object_that_is_not_there_is_the_clients_one_not_found(k8s_double):
    """kubectl: `Error from server (NotFound): pods "ghost" not found` (HTTP 404, reason NotFound).
    Every lookup of the tools raises the client's one NotFound, whose message is what people see."""
    from kubectl_gpu.inspect.fetch import fetch_pod

    with pytest.raises(NotFound) as missing:
        fetch_pod(Client(configuration(k8s_double), 5), "default", "ghost")
    assert isinstance(missing.value, ApiError) and missing.value.not_found
    assert (missing.value.status, missing.value.reason) == (404, "NotFound")
    assert missing.value.path == "/api/v1/namespaces/default/pods/ghost"
    assert str(missing.value) == 'pod "ghost" not found in namespace "default"'
