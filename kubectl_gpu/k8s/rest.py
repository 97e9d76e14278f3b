"""Raw JSON GETs through the kubernetes client's ApiClient, which brings authentication, TLS and
proxies from the kubeconfig; we skip its model deserialisation and parse the JSON ourselves."""

from __future__ import annotations

import json
from typing import Any, Sequence

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubectl_gpu.k8s.errors import ApiError

REQUEST_TIMEOUT_SECONDS = 30.0


def get_json(api: client.ApiClient, path: str,
             query: Sequence[tuple[str, Any]] = (),
             timeout: float = REQUEST_TIMEOUT_SECONDS) -> dict[str, Any]:
    """GET `path` (e.g. /api/v1/nodes) and return the decoded JSON body; ApiError otherwise."""
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
        raise ApiError(0, path, _root_cause(exc)) from exc
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


def _root_cause(exc: BaseException) -> str:
    # urllib3 wraps "connection refused" several layers deep; people need the innermost reason.
    seen = exc
    while getattr(seen, "reason", None) is not None and isinstance(seen.reason, BaseException):
        seen = seen.reason
    return str(seen)
