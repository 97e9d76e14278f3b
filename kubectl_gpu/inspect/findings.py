"""A finding: something wrong in the cluster, who it is about, and how to fix it.

Its severity is the core's one `Severity` (kubectl_gpu.core): for a finding, ERROR means GPUs are
(or will be) handed out wrongly or pods cannot be scheduled, WARNING not broken yet but a person
should act, INFO worth knowing (it never fails `doctor`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubectl_gpu.core import Severity

__all__ = ["Finding", "Severity", "failing", "sort_findings"]


@dataclass(frozen=True)
class Finding:
    code: str  # stable identifier scripts can match on, e.g. "double-counting"
    severity: Severity
    subject: str  # "node/gpu-1", "resourceclaimtemplate/ns/name", "deviceclass/gpu.nvidia.com"
    message: str  # what is wrong
    fix: str  # what to do about it

    @property
    def fails(self) -> bool:
        """Whether this finding makes `doctor` fail (anything but INFO)."""
        return self.severity is not Severity.INFO

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "severity": self.severity.value, "subject": self.subject,
                "message": self.message, "fix": self.fix}


def failing(findings: tuple[Finding, ...] | list[Finding]) -> bool:
    return any(f.fails for f in findings)


def sort_findings(findings: list[Finding]) -> tuple[Finding, ...]:
    order = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
    return tuple(sorted(findings, key=lambda f: (order[f.severity], f.code, f.subject)))
