"""API errors as Kubernetes ``Status`` objects, so clients raise with the right code and reason."""
from __future__ import annotations

from typing import Any

from .kinds import ResourceKind

REASONS = {
    400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
    406: "NotAcceptable", 409: "Conflict", 410: "Expired", 413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType", 422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
    503: "ServiceUnavailable", 504: "Timeout",
}


class ApiError(Exception):
    def __init__(self, code: int, message: str, reason: str | None = None,
                 details: dict[str, Any] | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or REASONS.get(code, "Unknown")
        self.details = details

    def status(self) -> dict[str, Any]:
        status: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                  "message": self.message, "reason": self.reason, "code": self.code}
        if self.details:
            status["details"] = self.details
        return status


def _details(kind: ResourceKind, name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "group": kind.group, "kind": kind.plural, **extra}


def not_found(kind: ResourceKind, name: str) -> ApiError:
    return ApiError(404, f'{kind.qualified_name} "{name}" not found', details=_details(kind, name))


def already_exists(kind: ResourceKind, name: str) -> ApiError:
    return ApiError(409, f'{kind.qualified_name} "{name}" already exists', "AlreadyExists",
                    _details(kind, name))


def conflict(kind: ResourceKind, name: str) -> ApiError:
    return ApiError(409, f'Operation cannot be fulfilled on {kind.qualified_name} "{name}": the object has been '
                         f"modified; please apply your changes to the latest version and try again",
                    "Conflict", _details(kind, name))


def invalid(kind: ResourceKind, name: str, causes: list[dict[str, str]]) -> ApiError:
    summary = "; ".join(f"{c['field']}: {c['message']}" for c in causes)
    return ApiError(422, f'{kind.kind} "{name}" is invalid: {summary}', "Invalid",
                    {"name": name, "group": kind.group, "kind": kind.kind, "causes": causes})


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)
