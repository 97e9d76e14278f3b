"""The layers docs/design.md states are checked, not only stated: import contracts in
.importlinter (import-linter, as kopf pins its `_kits`/`_core`/`_cogs` layers) say that DRA's
floor, the CEL environment and the translation core do no I/O and import no face, that the
packages form one-way layers (no explain <-> inspect cycle, no core <-> CEL one), and that the
webhook uses none of the CLI's packages."""

from __future__ import annotations

import configparser
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


# Names three modules once shared (issue 15): each now names one module of the product; `cli/`
# modules are named after the command they implement (`kubectl gpu plan`), and stay so.
ONCE_SHARED = ("plan.py", "render.py", "patch.py", "patches.py", "double_counting.py")


def _product_modules() -> list[Path]:
    return [path for package in ("kubectl_gpu", "webhook") for path in (ROOT / package).rglob("*.py")
            if "cli" not in path.relative_to(ROOT).parts]


def test_module_names_say_what_each_module_does():
    modules = _product_modules()
    for name in ONCE_SHARED:
        holders = sorted(str(path.relative_to(ROOT)) for path in modules if path.name == name)
        assert len(holders) <= 1, f"{name} names {holders}: give each a name that says what it does"


def test_no_module_name_is_shared_by_three_modules():
    """Issue 15's rule, for names that come later too (`live.py` and `errors.py` once named three
    modules each): two packages may each have their `errors.py`, a third says what it holds."""
    holders: dict[str, list[str]] = {}
    for path in _product_modules():
        if path.name != "__init__.py":
            holders.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {name: paths for name, paths in holders.items() if len(paths) >= 3} == {}


CORE_FACE = ("__init__", "constants")


def test_the_core_face_contract_names_every_internal_module_and_every_package_outside_the_core():
    """A core module added later is internal until docs/design.md says otherwise, and every package
    outside the core is bound by the contract: the lists in .importlinter cannot fall behind."""
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    contract = config["importlinter:contract:core-face"]
    forbidden = set(contract["forbidden_modules"].split())
    internals = {f"kubectl_gpu.core.{p.stem}" for p in (ROOT / "kubectl_gpu" / "core").glob("*.py")
                 if p.stem not in CORE_FACE}
    assert forbidden == internals
    outside = {f"kubectl_gpu.{p.stem}" for p in (ROOT / "kubectl_gpu").iterdir()
               if p.name not in ("core", "__init__.py", "__pycache__") and (p.suffix == ".py" or p.is_dir())}
    assert set(contract["source_modules"].split()) == outside | {"webhook"}


def test_the_layers_run_one_way_down_to_dras_floor():
    """No ":" in the layers contract: no two packages import each other (the core once imported
    CEL and CEL the core's quantities); the core stands on CEL, CEL on what DRA is (kubectl_gpu.dra),
    and that floor is pure (its own contract)."""
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    layers = [line.strip() for line in config["importlinter:contract:layers"]["layers"].splitlines() if line.strip()]
    assert not any(":" in layer for layer in layers), layers
    assert layers.index("kubectl_gpu.core") < layers.index("kubectl_gpu.cel") < layers.index("kubectl_gpu.dra")
    assert "kubectl_gpu.dra" in config["importlinter:contract:pure-dra"]["source_modules"].split()
