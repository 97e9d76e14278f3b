"""Raw JSON GETs through the kubernetes client's ApiClient, which brings authentication, TLS and
proxies from the kubeconfig; we skip its model deserialisation and parse the JSON ourselves."""

from __future__ import annotations

import json
from typing import Any, Sequence

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubectl_gpu.k8s.errors import ApiError

# `kubectl --request-timeout` defaults to 0 (wait forever); a GPU report that hangs for minutes
# on a dead control plane helps nobody, and a page of 1,000 pods comes back in well under a
# second from a healthy API server, so each request gets 30 s unless the user says otherwise.
REQUEST_TIMEOUT_SECONDS = 30.0


def get_json(api: client.ApiClient, path: str,
             query: Sequence[tuple[str, Any]] = (),
             timeout: float | None = None) -> dict[str, Any]:
    """GET `path` (e.g. /api/v1/nodes) and return the decoded JSON body; ApiError otherwise.

    `timeout` defaults to the connection's --request-timeout (kubectl_gpu.k8s.kubeconfig.connect);
    None there means no limit."""
    if timeout is None:
        timeout = getattr(api, "request_timeout", REQUEST_TIMEOUT_SECONDS)
    method, url, headers, _, _ = api.param_serialize(
        method="GET",
        resource_path=path,
        query_params=list(query) or None,
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
    )
    try:
        response = api.call_api(method, url, header_params=headers, _request_timeout=timeout)
        body = response.read()
    except ApiException as exc:
        raise ApiError(exc.status or 0, path, str(exc.reason or exc)) from exc
    except urllib3.exceptions.HTTPError as exc:
        server = api.configuration.host
        if timeout and _timed_out(exc):
            raise ApiError(0, path, f"the API server {server} did not answer GET {path} within "
                           f"{timeout:g}s (--request-timeout); check that it is up and reachable, "
                           "or raise --request-timeout") from exc
        raise ApiError(0, path, f"cannot reach the API server {server} (GET {path}): "
                       f"{_root_cause(exc)}") from exc
    if not 200 <= response.status <= 299:
        raise ApiError.from_response(response.status, path, body or b"")
    try:
        doc = json.loads(body)
    except ValueError as exc:
        raise ApiError(response.status, path, f"the response is not JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise ApiError(response.status, path, "the response is not a JSON object")
    return doc


def get_object(api: client.ApiClient, path: str) -> dict[str, Any] | None:
    """GET one object; None when it does not exist."""
    try:
        return get_json(api, path)
    except ApiError as exc:
        if exc.not_found:
            return None
        raise


def _timed_out(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        # urllib3 makes "connection refused" (NewConnectionError) a kind of ConnectTimeoutError.
        if isinstance(seen, urllib3.exceptions.NewConnectionError):
            return False
        if isinstance(seen, (urllib3.exceptions.TimeoutError, TimeoutError)):
            return True
        seen = seen.reason if isinstance(getattr(seen, "reason", None), BaseException) else None
    return False


def _root_cause(exc: BaseException) -> str:
    # urllib3 wraps "connection refused" several layers deep; people need the innermost reason.
    seen = exc
    while getattr(seen, "reason", None) is not None and isinstance(seen.reason, BaseException):
        seen = seen.reason
    return str(seen)
