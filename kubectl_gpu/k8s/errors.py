"""Every way a Kubernetes API call can fail, as one hierarchy built in one place.

Like kopf's `_cogs/clients/errors.py`, the HTTP status picks the class (`ApiError.from_status`),
so callers catch what they mean (`except Conflict`) or test a property of the one base class
(`exc.conflict`); every error carries its HTTP status (0: the server could not be reached).
Messages say what went wrong and what to change.
"""

from __future__ import annotations

import json


class KubeconfigError(Exception):
    """The kubeconfig could not be loaded, or names no usable context."""


class CredentialPluginError(Exception):
    """A kubeconfig user's exec credential plugin (exec_credential.py) could not be run or gave no
    usable credential."""


class ApiError(Exception):
    """The API server refused or failed a request.

    `status` is the HTTP status (0 when the server could not be reached), `reason` the
    Kubernetes Status reason (NotFound, Forbidden, Expired, AlreadyExists...) when the server
    sent one, `method` and `path` the request that failed.
    """

    def __init__(self, status: int, path: str, message: str, reason: str = "",
                 method: str = "GET") -> None:
        self.status = status
        self.path = path
        self.reason = reason
        self.message = message
        self.method = method
        self.body = b""  # the answer's body as sent (a Status with details.causes), when there was one
        super().__init__(self._describe())

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def forbidden(self) -> bool:
        return self.status in (401, 403)

    @property
    def conflict(self) -> bool:
        # 409: AlreadyExists on create, Conflict on a stale resourceVersion or precondition.
        return self.status == 409

    @property
    def expired(self) -> bool:
        # A continue token older than the server's compaction window: the list must restart.
        return self.status == 410 or self.reason == "Expired"

    @property
    def unreachable(self) -> bool:
        return self.status == 0

    @property
    def retryable(self) -> bool:
        # No answer, throttled, or the server failed: the same request may succeed later.
        return self.status == 0 or self.status == 429 or self.status >= 500

    def _describe(self) -> str:
        if self.status == 0:
            return self.message  # names the server and what to do (kubectl_gpu.k8s.client)
        hint = ""
        if self.forbidden:
            verb = "get/list" if self.method == "GET" else "this verb"
            hint = f" (check your credentials and RBAC: the user needs {verb} on this resource)"
        return f"{self.method} {self.path} failed with HTTP {self.status}: {self.message}{hint}"

    @staticmethod
    def from_status(status: int, path: str, message: str, reason: str = "",
                    method: str = "GET") -> "ApiError":
        """The error of the class `status` calls for."""
        return _class_for(status, reason)(status, path, message, reason, method)

    @staticmethod
    def from_response(status: int, path: str, body: bytes, method: str = "GET") -> "ApiError":
        """The error for a non-2xx answer, with the message and reason of its Status body."""
        message, reason = body.decode("utf-8", "replace").strip()[:300], ""
        try:
            doc = json.loads(body)
        except ValueError:
            doc = None
        if isinstance(doc, dict) and doc.get("kind") == "Status":
            message = doc.get("message") or message
            reason = doc.get("reason") or ""
        error = ApiError.from_status(status, path, message or "no message", reason, method)
        error.body = body
        return error


class Unreachable(ApiError):
    """No answer: connection refused, DNS, TLS, timeout (status 0)."""


class Forbidden(ApiError):
    """401 or 403: the credentials or RBAC do not allow the request."""


class NotFound(ApiError):
    """404: the object, or the resource itself, does not exist."""

    @classmethod
    def named(cls, path: str, message: str) -> "NotFound":
        """An object a command was asked about (or one it refers to) is not there: `message`
        says what is missing and where it looked, as kubectl's own "not found" does."""
        error = cls(404, path, message, "NotFound")
        Exception.__init__(error, message)
        return error


class Conflict(ApiError):
    """409: the object exists already, or changed since it was read."""


class Expired(ApiError):
    """410: a list's continue token expired; the list must restart."""


class Unavailable(ApiError):
    """429 or 5xx: the server is busy or failing; the same request may succeed later."""


def _class_for(status: int, reason: str) -> type[ApiError]:
    if status == 0:
        return Unreachable
    if status in (401, 403):
        return Forbidden
    if status == 404:
        return NotFound
    if status == 409:
        return Conflict
    if status == 410 or reason == "Expired":
        return Expired
    if status == 429 or status >= 500:
        return Unavailable
    return ApiError


# What a transport (client.py's aiohttp or blocking one) raises; the client words them as ApiErrors
# naming the request (status 0: the server could not be reached).
class TransportTimeout(Exception):
    """No answer within the request's time."""


class TransportFailure(Exception):
    """The server (or the proxy) could not be reached; the message is the innermost reason."""


def root_cause(exc: BaseException) -> str:
    """The innermost reason of a transport's failure: aiohttp and http.client wrap "connection
    refused" in their own errors; people need the reason."""
    seen: BaseException = exc
    while seen.__cause__ is not None:
        seen = seen.__cause__
    return str(seen) or type(seen).__name__
