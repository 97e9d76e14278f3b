"""List + watch in the one client (kubectl_gpu.k8s: `AsyncClient.watch`, `Informer`), against the
API double's `?watch=1` stream.

Behaviour specified by the Kubernetes API concepts page (https://kubernetes.io/docs/reference/
using-api/api-concepts/):
* "Efficient detection of changes": a watch starts at the resourceVersion a list returned and
  streams ADDED / MODIFIED / DELETED; when that version is older than the server's history the
  server answers 410 Gone (an ERROR event with a Status), and "clients must handle the case by
  ... performing a new get or list operation, and starting the watch from the resourceVersion
  that was returned";
* "Watch bookmarks": with `allowWatchBookmarks=true` the server may send BOOKMARK events that
  only carry the resourceVersion the watch has reached;
and by client-go's reflector (tools/cache/reflector.go `ListAndWatch`/`watchHandler`): a watch
that ends is started again from the last resourceVersion seen; on an expired version the
reflector lists again and replaces its store (tools/cache/delta_fifo.go `Replace` reports the
objects the new list lacks as deleted). A label-selector watch reports an object that stops
matching as DELETED (staging/src/k8s.io/apiserver/pkg/storage/cacher/cache_watcher.go,
`convertToWatchEvent`).
"""

from __future__ import annotations

import asyncio
from typing import Callable

import pytest

from kubectl_gpu.k8s import ApiError, AsyncClient, Informer
from tests.k8sdouble import K8sDouble

TEMPLATES = "/apis/resource.k8s.io/v1/resourceclaimtemplates"
MANAGED = "app.kubernetes.io/managed-by=kubectl-gpu"


def template(name: str, namespace: str = "default", managed: bool = True) -> dict:
    labels = {"app.kubernetes.io/managed-by": "kubectl-gpu"} if managed else {}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"spec": {"devices": {"requests": [
                {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}}


async def until(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    """Wait for something a watch delivers (a bound against a hang, not a speed check)."""
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("the watch did not deliver it")
        await asyncio.sleep(0.01)


def client_of(double: K8sDouble) -> AsyncClient:
    return AsyncClient(double.api_client().configuration, 5)


async def test_a_watch_streams_changes_after_the_lists_resource_version(k8s_double):
    api = client_of(k8s_double)
    listed = await api.get_json(TEMPLATES)
    version = listed["metadata"]["resourceVersion"]
    k8s_double.seed(template("a"))
    k8s_double.delete("ResourceClaimTemplate", "a")
    events = []
    async for event in api.watch(TEMPLATES, resource_version=version, timeout_seconds=1):
        events.append((event["type"], event["object"]["metadata"]["name"]))
        if len(events) == 2:
            break
    await api.close()
    assert events == [("ADDED", "a"), ("DELETED", "a")]


async def test_a_watch_from_a_compacted_version_raises_410_expired(k8s_double):
    api = client_of(k8s_double)
    version = (await api.get_json(TEMPLATES))["metadata"]["resourceVersion"]
    k8s_double.seed(template("a"))
    k8s_double.compact()
    with pytest.raises(ApiError) as raised:
        async for _ in api.watch(TEMPLATES, resource_version=version, timeout_seconds=1):
            pass
    await api.close()
    assert raised.value.expired and raised.value.status == 410


async def test_bookmarks_carry_only_the_resource_version_the_watch_reached():
    with K8sDouble(bookmark_seconds=0.2) as double:
        api = client_of(double)
        version = (await api.get_json(TEMPLATES))["metadata"]["resourceVersion"]
        double.seed({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "unrelated"}})
        async for event in api.watch(TEMPLATES, resource_version=version, timeout_seconds=5):
            break
        await api.close()
    assert event["type"] == "BOOKMARK"
    assert int(event["object"]["metadata"]["resourceVersion"]) > int(version)
    assert set(event["object"]) == {"kind", "apiVersion", "metadata"}


async def test_an_informer_lists_then_follows_every_change(k8s_double):
    k8s_double.seed(template("before"))
    seen: list[tuple[str, str]] = []
    informer = Informer(client_of(k8s_double), TEMPLATES, label_selector=MANAGED,
                        on_change=lambda kind, obj: seen.append((kind, obj["metadata"]["name"])))
    informer.start()
    assert await informer.wait_synced(10)
    assert informer.get("default", "before") is not None
    k8s_double.seed(template("new", namespace="kube-public"))
    stored = k8s_double.get("ResourceClaimTemplate", "before")
    stored["metadata"]["annotations"] = {"note": "edited"}
    k8s_double.seed(stored, replace=True)
    k8s_double.delete("ResourceClaimTemplate", "before")
    await until(lambda: informer.get("default", "before") is None)
    assert informer.get("kube-public", "new") is not None
    assert seen == [("ADDED", "before"), ("ADDED", "new"), ("MODIFIED", "before"), ("DELETED", "before")]
    assert informer.current and informer.lists == 1
    await informer.stop()
    await informer.api.close()


async def test_an_object_that_stops_matching_the_selector_leaves_the_copy(k8s_double):
    k8s_double.seed(template("t"))
    informer = Informer(client_of(k8s_double), TEMPLATES, label_selector=MANAGED)
    informer.start()
    assert await informer.wait_synced(10)
    stored = k8s_double.get("ResourceClaimTemplate", "t")
    stored["metadata"]["labels"] = {}
    k8s_double.seed(stored, replace=True)
    await until(lambda: informer.get("default", "t") is None)
    stored["metadata"]["labels"] = {"app.kubernetes.io/managed-by": "kubectl-gpu"}
    k8s_double.seed(stored, replace=True)
    await until(lambda: informer.get("default", "t") is not None)
    await informer.stop()
    await informer.api.close()


async def test_an_informer_watches_again_from_where_it_was_when_a_watch_ends():
    with K8sDouble(max_watch_seconds=0.3) as double:
        informer = Informer(client_of(double), TEMPLATES)
        informer.start()
        assert await informer.wait_synced(10)
        await until(lambda: double.count(verb="watch") >= 3)  # three watches ended by their timeout
        double.seed(template("late"))
        await until(lambda: informer.get("default", "late") is not None)
        assert informer.lists == 1  # never listed again: nothing was missed
        await informer.stop()
        await informer.api.close()


async def test_an_expired_resource_version_makes_the_informer_list_again_and_replace_its_copy(k8s_double):
    k8s_double.seed(template("kept"), template("removed"))
    seen: list[tuple[str, str]] = []
    informer = Informer(client_of(k8s_double), TEMPLATES,
                        on_change=lambda kind, obj: seen.append((kind, obj["metadata"]["name"])))
    k8s_double.delay(0.5, "watch", "resourceclaimtemplates", times=1)  # the first watch starts late
    informer.start()
    assert await informer.wait_synced(10)
    k8s_double.delete("ResourceClaimTemplate", "removed")
    k8s_double.seed(template("added"))
    k8s_double.compact()  # ... after the history it would start from is gone: 410
    await until(lambda: informer.lists == 2 and informer.current)
    assert sorted(name for _, name in informer.objects) == ["added", "kept"]
    assert ("DELETED", "removed") in seen and ("ADDED", "added") in seen
    k8s_double.seed(template("after"))
    await until(lambda: informer.get("default", "after") is not None)
    await informer.stop()
    await informer.api.close()


async def test_a_failed_watch_is_retried_after_a_backoff_and_the_copy_marked_not_current(k8s_double):
    k8s_double.fail("watch", "resourceclaimtemplates", status=500, times=1)
    informer = Informer(client_of(k8s_double), TEMPLATES, backoff_seconds=(0.3, 1.0))
    informer.start()
    assert await informer.wait_synced(10)
    await until(lambda: informer.last_error is not None)
    assert not informer.current and informer.last_error.status == 500
    k8s_double.seed(template("later"))
    await until(lambda: informer.get("default", "later") is not None)
    assert informer.current and informer.lists == 2
    await informer.stop()
    await informer.api.close()
