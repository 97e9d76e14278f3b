"""The layers docs/design.md states are checked, not only stated: import contracts in
.importlinter (import-linter, as kopf pins its `_kits`/`_core`/`_cogs` layers) say that the
translation core and the CEL environment do no I/O and import no face, that the packages form
one-way layers (no explain <-> inspect cycle), and that the webhook uses only the core, CEL and
the client of kubectl_gpu."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_import_contracts_hold():
    pytest.importorskip("importlinter", reason="import-linter is not installed: run scripts/bootstrap")
    # In a child process: import-linter configures logging with dictConfig, which would silence
    # the loggers other tests in this process read.
    run = subprocess.run(
        [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports; "
         "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True, no_logo=True))",
         str(ROOT / ".importlinter")],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout
