"""A finding: something wrong in the cluster, who it is about, and how to fix it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any


class Severity(str, Enum):
    ERROR = "error"  # GPUs are (or will be) handed out wrongly, or pods cannot be scheduled
    WARNING = "warning"  # not broken yet, but a person should act
    INFO = "info"  # worth knowing; never fails `doctor`

    @property
    def fails(self) -> bool:
        return self is not Severity.INFO


@dataclass(frozen=True)
class Finding:
    code: str  # stable identifier scripts can match on, e.g. "double-counting"
    severity: Severity
    subject: str  # "node/gpu-1", "resourceclaimtemplate/ns/name", "deviceclass/gpu.nvidia.com"
    message: str  # what is wrong
    fix: str  # what to do about it

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "severity": self.severity.value, "subject": self.subject,
                "message": self.message, "fix": self.fix}


def failing(findings: tuple[Finding, ...] | list[Finding]) -> bool:
    return any(f.severity.fails for f in findings)


def sort_findings(findings: list[Finding]) -> tuple[Finding, ...]:
    order = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
    return tuple(sorted(findings, key=lambda f: (order[f.severity], f.code, f.subject)))
