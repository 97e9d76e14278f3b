"""Request log and fault injection: what tests use to see and disturb the API traffic."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

TIMEOUT = "timeout"  # fault status meaning: hold the request, then drop the connection unanswered


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    verb: str  # get | list | watch | create | update | patch | delete | deletecollection
    group: str
    version: str
    resource: str  # plural, e.g. "pods"; "" for a non-resource URL (/version, /apis, /metrics): see ``path``
    subresource: str  # "" or e.g. "status"
    namespace: str
    name: str
    query: dict[str, str] = field(default_factory=dict)
    dry_run: bool = False

    @property
    def resource_path(self) -> str:
        """``pods`` or ``nodes/status``, the way RBAC names it."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource

    def matches(self, verb: str | None = None, resource: str | None = None, namespace: str | None = None,
                name: str | None = None) -> bool:
        return (verb is None or verb == self.verb) and \
            (resource is None or resource == self.resource_path) and \
            (namespace is None or namespace == self.namespace) and \
            (name is None or name == self.name)


@dataclass
class Fault:
    """Matches requests by verb/resource/namespace/name; ``times=None`` means every matching request."""
    verb: str | None = None
    resource: str | None = None
    namespace: str | None = None
    name: str | None = None
    status: int | str | None = None  # None: only delay; int: answer with a Status; "timeout"
    seconds: float = 0.0  # delay before answering (or before dropping the connection for "timeout")
    times: int | None = 1
    message: str | None = None
    reason: str | None = None
    # Only a list's later pages (True: a request with a continue token, as an expired token is
    # answered 410), or only first requests (False); None: either.
    continuing: bool | None = None
    hits: int = 0

    @property
    def exhausted(self) -> bool:
        return self.times is not None and self.hits >= self.times


class FaultPlan:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self._requests: list[RecordedRequest] = []

    def add(self, fault: Fault) -> Fault:
        if fault.status is not None and fault.status != TIMEOUT and not (
                isinstance(fault.status, int) and 400 <= fault.status <= 599):
            raise ValueError(f"fault status must be an HTTP error code 400-599 or {TIMEOUT!r}, not {fault.status!r}")
        if fault.seconds < 0 or (fault.times is not None and fault.times < 1):
            raise ValueError("fault seconds must be >= 0 and times >= 1 (or None for always)")
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def record(self, request: RecordedRequest) -> list[Fault]:
        """Log the request and consume the faults it triggers: every matching delay, then the first error."""
        triggered: list[Fault] = []
        with self._lock:
            self._requests.append(request)
            for fault in self._faults:
                if fault.exhausted or not request.matches(fault.verb, fault.resource, fault.namespace, fault.name):
                    continue
                if fault.continuing is not None and bool(request.query.get("continue")) != fault.continuing:
                    continue
                if fault.status is not None and any(f.status is not None for f in triggered):
                    continue
                fault.hits += 1
                triggered.append(fault)
            self._faults = [f for f in self._faults if not f.exhausted]
        return triggered

    def log(self, request: RecordedRequest) -> None:
        """Log a request that no fault can match (a non-resource URL: discovery, /metrics)."""
        with self._lock:
            self._requests.append(request)

    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def reset_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    def count(self, **criteria: Any) -> int:
        with self._lock:
            return sum(1 for r in self._requests if r.matches(**criteria))
