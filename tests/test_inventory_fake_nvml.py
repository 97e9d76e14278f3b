"""The recorded NVML (kubectl_gpu/inventory/recorded_nvml.py) serving the nodes of tests/data/nvml/*.json
as the tests' fake NVML."""

from __future__ import annotations

import json
from pathlib import Path

import pynvml
import pytest

from kubectl_gpu.inventory.recorded_nvml import RecordedNvml

DATA = Path(__file__).parent / "data" / "nvml"


class FakeNvml(RecordedNvml):
    @classmethod
    def load(cls, name: str) -> "FakeNvml":
        return cls(json.loads((DATA / f"{name}.json").read_text()))

    def install(self, monkeypatch: pytest.MonkeyPatch) -> "FakeNvml":  # type: ignore[override]
        super().install(monkeypatch.setattr)
        return self

    def install_permanently(self) -> None:
        """For a subprocess (sitecustomize), where there is no monkeypatch to undo."""
        RecordedNvml.install(self)


def test_the_fake_raises_pynvmls_own_error_classes(monkeypatch: pytest.MonkeyPatch) -> None:
    FakeNvml.load("no-library").install(monkeypatch)
    with pytest.raises(pynvml.NVMLError_LibraryNotFound):
        pynvml.nvmlInit()


def test_the_fake_serves_every_data_file() -> None:
    names = sorted(path.stem for path in DATA.glob("*.json"))
    assert "h100-80gb-hbm3" in names and "a100-sxm4-40gb-mig" in names
    for name in names:
        assert FakeNvml.load(name).node["description"]
