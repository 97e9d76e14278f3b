"""What a fleet command that writes (migrate --from-cluster, migrate nodes, rollback) did, object
by object.

For people each step is a line on stdout as it happens, as before.  With -o json|yaml those lines
go to stderr (a long run still shows its progress) and stdout gets one report at the end, also
when the run stops: `steps` (each object and what happened to it, in order), `dryRun`, and `error`
(why it stopped, or null).  Its kinds are MigrationResult, NodeWave and RollbackResult
(docs/schemas/)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import click

from kubectl_gpu.dra.facts import REPORT_API_VERSION


def output_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("-o", "--output", type=click.Choice(["json", "yaml"]), default=None,
                        help="One report for scripts on stdout at the end (what was done to each object); the "
                             "lines for people then go to stderr.")(func)


@dataclass
class StepReport:
    kind: str
    output: str | None  # json | yaml | None (lines for people on stdout)
    dry_run: bool
    steps: list[dict[str, Any]] = field(default_factory=list)

    def say(self, line: str) -> None:
        """A line for people that is about no one object (what was read, what to do next); on a
        terminal wrapped to it, the lines after the first indented under it (kubectl_gpu/prose.py),
        as describe wraps its findings; piped, one line."""
        from kubectl_gpu.cli.console import echo_wrapped

        echo_wrapped(line, err=self.output is not None)

    def step(self, subject: str, result: str, indent: str = "") -> None:
        """`subject: result`, e.g. `Deployment/ml/train: applied`."""
        self.say(f"{indent}{subject}: {result}")
        self.record(subject, result)

    def record(self, subject: str, result: str) -> None:
        """A step for the report only (people read a summary line)."""
        self.steps.append({"object": subject, "result": result, "notes": []})

    def line_step(self, line: str, indent: str = "") -> None:
        """A step the fleet module wrote as one line, `subject: result`."""
        subject, _, result = line.partition(": ")
        self.step(subject, result, indent)

    def note(self, text: str, indent: str = "    ") -> None:
        """A note on the last step (what a request became, a quota entry's warning)."""
        self.say(f"{indent}{text}")
        self.steps[-1]["notes"].append(text)

    def finish(self, error: str | None = None) -> None:
        """The report on stdout (-o json|yaml); nothing for people."""
        if self.output is None:
            return
        from kubectl_gpu.cli.reports import print_structured

        print_structured({"apiVersion": REPORT_API_VERSION, "kind": self.kind, "dryRun": self.dry_run,
                          "steps": self.steps, "error": error}, self.output)
