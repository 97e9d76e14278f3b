"""Errors a person can act on: each message says what went wrong and what to change."""

from __future__ import annotations

import json


class KubeconfigError(Exception):
    """The kubeconfig could not be loaded, or names no usable context."""


class ApiError(Exception):
    """The API server refused or failed a request.

    `status` is the HTTP status (0 when the server could not be reached), `reason` the
    Kubernetes Status reason (NotFound, Forbidden, Expired...) when the server sent one.
    """

    def __init__(self, status: int, path: str, message: str, reason: str = "") -> None:
        self.status = status
        self.path = path
        self.reason = reason
        self.message = message
        super().__init__(self._describe())

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def forbidden(self) -> bool:
        return self.status in (401, 403)

    @property
    def unreachable(self) -> bool:
        return self.status == 0

    @property
    def expired(self) -> bool:
        # A continue token older than the server's compaction window: the list must restart.
        return self.status == 410 or self.reason == "Expired"

    def _describe(self) -> str:
        if self.status == 0:
            return self.message  # names the server and what to do (kubectl_gpu.k8s.rest)
        hint = ""
        if self.forbidden:
            hint = " (check your credentials and RBAC: the user needs get/list on this resource)"
        return f"GET {self.path} failed with HTTP {self.status}: {self.message}{hint}"

    @classmethod
    def from_response(cls, status: int, path: str, body: bytes) -> "ApiError":
        message, reason = body.decode("utf-8", "replace").strip()[:300], ""
        try:
            doc = json.loads(body)
        except ValueError:
            doc = None
        if isinstance(doc, dict) and doc.get("kind") == "Status":
            message = doc.get("message") or message
            reason = doc.get("reason") or ""
        return cls(status, path, message or "no message", reason)
