"""The layers docs/design.md states are checked, not only stated: import contracts in
.importlinter (import-linter, as kopf pins its `_kits`/`_core`/`_cogs` layers) say that the
translation core and the CEL environment do no I/O and import no face, that the packages form
one-way layers (no explain <-> inspect cycle), and that the webhook uses only the core, CEL and
the client of kubectl_gpu."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_import_contracts_hold(capsys):
    cli = pytest.importorskip("importlinter.cli", reason="import-linter is not installed: run scripts/bootstrap")
    code = cli.lint_imports(config_filename=str(ROOT / ".importlinter"), no_cache=True, no_logo=True)
    report = capsys.readouterr().out
    assert code == 0, report
    assert "0 broken" in report
