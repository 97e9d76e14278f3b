"""AdmissionReview v1: reading requests and writing responses (pure; no I/O).

Anything the API server would never send (bad JSON, another apiVersion, no request, no uid) is a
:class:`BadReview`, answered with a 400 and a message saying what was wrong.  Everything else gets a
well-formed AdmissionReview, even for objects the webhook does not understand.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import orjson

from kubectl_gpu.input_text import json_problem
from kubectl_gpu.json_codec import decode_json, encode_json

ADMISSION_API_VERSION = "admission.k8s.io/v1"
# An UPDATE carries the object twice (object and oldObject), each up to the API server's 3 MiB
# limit, plus under 1 MiB of the rest: 7 MiB, as controller-runtime's webhook server allows
# (sigs.k8s.io/controller-runtime pkg/webhook/admission/http.go, maxRequestSize).
MAX_BODY_BYTES = 7 * 1024 * 1024
# Only an UPDATE carries two objects; every other operation one (CREATE and CONNECT the object,
# DELETE the oldObject): half as much.
TWO_OBJECT_OPERATIONS = frozenset({"UPDATE"})


def body_limit(operation: str) -> int:
    """The largest review body the API server can send for ``operation``."""
    return MAX_BODY_BYTES if operation in TWO_OBJECT_OPERATIONS else MAX_BODY_BYTES // 2


# Nesting deeper than any Pod, workload or DRA object is refused before parsing (a body of
# 200,000 "[" must be a 400, not a RecursionError in the JSON parser or in a walker later).
MAX_JSON_DEPTH = 256
MAX_WARNING_CHARS = 120
MAX_WARNINGS = 10


class BadReview(ValueError):
    """Not an AdmissionReview this webhook can answer; the message says what to change."""


@dataclass(frozen=True)
class AdmissionRequest:
    uid: str
    kind: str  # request.kind.kind: "Pod", "Deployment", ...
    group: str
    version: str
    resource: str
    sub_resource: str
    operation: str  # CREATE | UPDATE | DELETE | CONNECT
    namespace: str
    name: str
    obj: dict[str, Any] | None
    old_obj: dict[str, Any] | None
    dry_run: bool
    # False when the body needed the standard library's leniency (NaN...): such an object may
    # encode like a different one, so nothing keyed by its encoding may be reused for it.
    strict_json: bool = True
    # What admission derives from the request's content alone, under the caches of the Admission
    # that derived it (webhook/caches.py, RequestAnswers): a reused parse shares it.
    derived: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    def with_uid(self, uid: str) -> "AdmissionRequest":
        """This request under another uid (the objects, and what was derived from them, are
        shared, not copied)."""
        copy = object.__new__(AdmissionRequest)
        copy.__dict__.update(self.__dict__)
        copy.__dict__["uid"] = uid
        return copy


# A JSON string, written as "unrolled loop" (runs of plain characters between escapes): the same
# matches as "(?:[^"\\]|\\.)*" at a third of the time on a 7 MiB review (1.0 s there).
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")


def nesting_exceeds(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when the JSON in ``body`` nests arrays and objects deeper than ``limit``.

    No parse: fewer brackets than the limit cannot nest deeper (one count, the common case);
    otherwise brackets inside strings are dropped and the rest is walked, stopping at the limit.
    """
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    depth = 0
    for char in _JSON_STRING.sub(b"", body).translate(None, _NOT_BRACKETS):
        depth += 1 if char in (0x5B, 0x7B) else -1
        if depth > limit:
            return True
    return False


def parse_review(body: bytes) -> AdmissionRequest:
    # The size limit is not checked here: the server's client_max_size (MAX_BODY_BYTES) refuses a
    # larger body with a 413 before it is read, so a check here could never run.
    if nesting_exceeds(body):
        raise BadReview(f"body nests JSON deeper than {MAX_JSON_DEPTH} levels; no Kubernetes object this "
                        "webhook reviews comes near that")
    try:
        data, strict = decode_json(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadReview(f"body is not JSON: {json_problem(exc, body)}") from None
    except RecursionError:
        raise BadReview(f"body nests JSON deeper than the parser allows (at most {MAX_JSON_DEPTH} levels)") from None
    if not isinstance(data, dict):
        raise BadReview("body must be a JSON object (an AdmissionReview)")
    if data.get("kind") != "AdmissionReview":
        raise BadReview(f"kind is {data.get('kind')!r}; expected AdmissionReview")
    if data.get("apiVersion") != ADMISSION_API_VERSION:
        raise BadReview(
            f"apiVersion is {data.get('apiVersion')!r}; only {ADMISSION_API_VERSION} is served "
            f"(set admissionReviewVersions: [v1] in the webhook configuration)"
        )
    request = data.get("request")
    if not isinstance(request, dict):
        raise BadReview("AdmissionReview has no request object")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise BadReview("request.uid is missing; the API server always sends one")
    kind = request.get("kind") if isinstance(request.get("kind"), dict) else {}
    resource = request.get("resource") if isinstance(request.get("resource"), dict) else {}
    obj = request.get("object")
    old = request.get("oldObject")
    return AdmissionRequest(
        uid=uid,
        kind=_text(kind.get("kind")),
        group=_text(kind.get("group")),
        version=_text(kind.get("version")),
        resource=_text(resource.get("resource")),
        sub_resource=_text(request.get("subResource")),
        operation=_text(request.get("operation")),
        namespace=_text(request.get("namespace")),
        name=_text(request.get("name")),
        obj=obj if isinstance(obj, dict) else None,
        old_obj=old if isinstance(old, dict) else None,
        dry_run=request.get("dryRun") is True,
        strict_json=strict,
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def clip_warning(text: str) -> str:
    """One warning line as the API server shows it: printable, at most 120 characters."""
    line = " ".join(text.split())
    if len(line) <= MAX_WARNING_CHARS:
        return line
    return line[: MAX_WARNING_CHARS - 3].rstrip() + "..."


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    patch: tuple[dict[str, Any], ...] = ()
    warnings: tuple[str, ...] = ()
    message: str = ""  # the reason for a denial, shown to the user by kubectl
    code: int = 0  # for a denial: 403 policy, 409 name conflict, 422 invalid object, 503 retry
    details: dict[str, Any] = field(default_factory=dict)  # for logs and metrics only
    encoded_patch: str = ""  # encode_patch(patch), when the caller has it already (cached plans)

    @cached_property
    def response_parts(self) -> tuple[bytes, bytes]:
        """The encoded response before and after the uid's JSON string: made once per verdict,
        so answering a cached plan again only encodes the uid."""
        encoded = encode_json(render_response("", self))
        at = encoded.index(_EMPTY_UID) + len(_EMPTY_UID) - 2
        return encoded[:at], encoded[at + 2 :]


_EMPTY_UID = b'"uid":""'


def encode_patch(patch: tuple[dict[str, Any], ...], strict: bool = True) -> str:
    """The JSONPatch as the response carries it: base64 of its JSON."""
    return base64.b64encode(encode_json(list(patch), strict)).decode()


ALLOWED = Verdict(allowed=True)


def allow(warnings: tuple[str, ...] = ()) -> Verdict:
    return Verdict(allowed=True, warnings=warnings) if warnings else ALLOWED


def deny(message: str, code: int = 403, warnings: tuple[str, ...] = ()) -> Verdict:
    return Verdict(allowed=False, message=message, code=code, warnings=warnings)


def render_response(uid: str, verdict: Verdict, strict: bool = True) -> dict[str, Any]:
    response: dict[str, Any] = {"uid": uid, "allowed": verdict.allowed}
    if verdict.allowed and verdict.patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = verdict.encoded_patch or encode_patch(verdict.patch, strict)
    if not verdict.allowed:
        response["status"] = {
            "code": verdict.code or 403,
            "message": verdict.message,
            "reason": {400: "BadRequest", 403: "Forbidden", 409: "Conflict", 422: "Invalid", 500: "InternalError", 503: "ServiceUnavailable"}.get(
                verdict.code or 403, "Forbidden"
            ),
        }
    warnings = [clip_warning(w) for w in verdict.warnings if w.strip()]
    if warnings:
        response["warnings"] = list(dict.fromkeys(warnings))[:MAX_WARNINGS]
    return {"apiVersion": ADMISSION_API_VERSION, "kind": "AdmissionReview", "response": response}


def encode_response(uid: str, verdict: Verdict, strict: bool = True) -> bytes:
    """``encode_json(render_response(uid, verdict, strict), strict)``, faster when the same
    verdict answers many reviews."""
    if not strict:
        return encode_json(render_response(uid, verdict, strict=False), strict=False)
    head, tail = verdict.response_parts
    return head + orjson.dumps(uid) + tail
