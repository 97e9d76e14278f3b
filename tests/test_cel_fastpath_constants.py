"""Selector calls on literals (``quantity('40Gi')``, ``semver('1.2.3')``) are the same for every
device: the fast path evaluates them once, yet answers and errors stay those of cel-python."""

from __future__ import annotations

import pytest

from kubectl_gpu.cel import CelRuntimeError, lib
from kubectl_gpu.dra.devices import make_device
from kubectl_gpu.dra.values import Semver
from tests.cel_reference import CELPY, FAST, compile_selector

DEVICES = [make_device("gpu.nvidia.com", f"gpu-{i}", attributes={"type": "gpu", "driverVersion": Semver.parse(v)},
                       capacity={"memory": m})
           for i, (v, m) in enumerate([("570.1.0", "80Gi"), ("550.9.2", "40Gi"), ("575.57.8", "24Gi")])]


@pytest.mark.parametrize("expression", [
    "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0",
    "device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('39Gi').add(quantity('1Gi')))",
    "device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('560.0.0'))",
    "semver('1.2.3').isLessThan(semver('1.10.0')) && device.attributes['gpu.nvidia.com'].type == 'gpu'",
])
def test_constant_calls_give_cel_python_answers(expression):
    fast, reference = compile_selector(expression, FAST), compile_selector(expression, CELPY)
    assert fast.engine == FAST
    assert [fast.matches(d) for d in DEVICES] == [reference.matches(d) for d in DEVICES]


def test_a_constant_call_runs_once_per_compile_not_once_per_device(monkeypatch):
    calls = []
    original = lib.FUNCTIONS["quantity"]
    monkeypatch.setitem(lib.FUNCTIONS, "quantity", lambda *a: calls.append(a) or original(*a))
    # an expression no other test compiles, so the compile cache cannot answer it
    selector = compile_selector("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('41Gi')) < 0", FAST)
    assert [selector.matches(d) for d in DEVICES] == [False, True, True]
    assert calls == [("41Gi",)]


def test_a_failing_constant_call_is_still_a_runtime_error_on_every_device():
    expression = "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('forty gigs')) >= 0"
    fast, reference = compile_selector(expression, FAST), compile_selector(expression, CELPY)
    for device in DEVICES:
        with pytest.raises(CelRuntimeError) as fast_error:
            fast.matches(device)
        with pytest.raises(CelRuntimeError) as reference_error:
            reference.matches(device)
        assert fast_error.value.message == reference_error.value.message
        assert "quantities must match" in fast_error.value.message
