"""What the core tells a person about an input: one note per thing changed, to know, or to fix.

Apart from the translation's data model (model.py) because reading legacy requests (families.py,
hints.py) also speaks in notes, and `describe` and `doctor` read legacy requests without ever
translating: they need the notes, not the model's enums and dataclasses.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Severity(str, Enum):
    INFO = "info"  # a change that was made
    WARNING = "warning"  # made, but the person should know something
    ERROR = "error"  # this pod template was NOT changed; the message says what to fix


@dataclass(frozen=True)
class Note:
    """One line of the change report, about one place in the pod template."""

    severity: Severity
    message: str
    container: str | None = None  # container name, when the note is about one
    resource: str | None = None  # legacy resource name, when the note is about one

    def render(self) -> str:
        where = f"container {self.container!r}: " if self.container else ""
        return f"{where}{self.message}"
