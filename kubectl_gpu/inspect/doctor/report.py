"""The doctor's report: one result per check, each with its findings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubectl_gpu.dra.facts import REPORT_API_VERSION
from kubectl_gpu.inspect.findings import Finding, failing, sort_findings


@dataclass(frozen=True)
class CheckResult:
    name: str  # stable identifier, e.g. "double-counting"
    title: str  # what was checked, for people
    summary: str  # what was looked at, e.g. "12 GPU nodes"
    findings: tuple[Finding, ...] = ()
    skipped: str | None = None  # why the check could not run

    @property
    def status(self) -> str:
        if self.skipped:
            return "skipped"
        return "failed" if failing(self.findings) else "ok"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "status": self.status,
                "summary": self.summary, "skipped": self.skipped,
                "findings": [f.to_dict() for f in self.findings]}


@dataclass(frozen=True)
class DoctorReport:
    checks: tuple[CheckResult, ...]
    served_dra_versions: tuple[str, ...]

    @property
    def findings(self) -> tuple[Finding, ...]:
        return sort_findings([f for c in self.checks for f in c.findings])

    @property
    def healthy(self) -> bool:
        return not failing(self.findings)

    def to_dict(self) -> dict[str, Any]:
        return {"apiVersion": REPORT_API_VERSION, "kind": "GpuDoctorReport", "healthy": self.healthy,
                "servedDRAVersions": list(self.served_dra_versions),
                "checks": [c.to_dict() for c in self.checks],
                "findings": [f.to_dict() for f in self.findings]}
