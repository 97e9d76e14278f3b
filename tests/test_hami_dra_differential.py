"""Differential: HAMi-DRA's own conversion cases (tests/data/hami_dra/mutating_cases.yaml, transcribed
from Project-HAMi/HAMi-DRA with their commits) through kubectl-gpu's translation for HAMi's driver.
The same pod must mean the same claim: the same count, the same capacity quantities, selectors spelled
as HAMi-DRA spells them and picking the same devices, and the same refusals.

One difference is on purpose, and asserted as such: where the pod states no compute (no
nvidia.com/gpucores), HAMi-DRA's claim names no `cores`, so the driver's request policy gives it all
100 and one such pod holds a GPU's compute alone; kubectl-gpu asks for `cores: 0`, which is what
HAMi's device plugin did (no gpucores: none accounted, none limited; HAMi-core limits nothing at 0)."""

from __future__ import annotations

import pytest

from kubectl_gpu.cel import compile_selector
from kubectl_gpu.core import TargetDriver, TranslateOptions, translate_pod_template
from kubectl_gpu.dra import hami
from kubectl_gpu.dra.devices import devices_from_slice
from kubectl_gpu.dra.quantity import parse_quantity
from tests.test_dra_hami import CASES, GIB, hami_device, slice_of

HAMI = TranslateOptions(target_driver=TargetDriver.HAMI)
# Devices the cases' values pick among: their UUIDs and product names, and others.
DEVICES = devices_from_slice(slice_of(hami.HAMI_DRIVER, [
    hami_device(i, uuid, product, 80 * GIB)
    for i, (uuid, product) in enumerate([("gpu-123", "A100"), ("gpu-456", "H100"), ("gpu-789", "A100"),
                                         ("gpu-999", "H100"), ("gpu-888", "L4"), ("GPU-other", 'A100"x')])]))
CLASS = compile_selector(hami.HAMI_DEVICE_CLASS_SELECTOR)


def picked(expressions: list[str]) -> set[str]:
    selectors = [compile_selector(e) for e in expressions]
    return {d.name for d in DEVICES if CLASS.matches(d) and all(s.matches(d) for s in selectors)}


def translate(limits: dict, annotations: dict):
    template = {"metadata": {"annotations": annotations},
                "spec": {"containers": [{"name": "c", "resources": {"limits": limits}}]}}
    return translate_pod_template(template, HAMI)


@pytest.mark.parametrize("case", CASES["selectors"], ids=lambda c: c["name"])
def test_card_annotations_mean_what_hami_dra_makes_of_them(case):
    result = translate({hami.HAMI_DRA_COUNT_RESOURCE: 1}, case["annotations"])
    if case.get("error"):  # HAMi-DRA refuses the pod (fails closed): so does the translation
        assert result.errors and not result.claims
        return
    (claim,) = result.claims
    (request,) = claim.claim_spec["devices"]["requests"]
    exactly = request["exactly"]
    ours = [s["cel"]["expression"] for s in exactly.get("selectors", [])]
    assert exactly["deviceClassName"] == hami.HAMI_DEVICE_CLASS
    assert ours == case["want"]
    # HAMi-DRA's request also carries the type selector; the class already requires the type.
    assert picked(ours) == picked([hami.HAMI_DRA_TYPE_SELECTOR, *case["want"]])


@pytest.mark.parametrize("case", CASES["conversions"], ids=lambda c: c["name"])
def test_hamis_resources_become_the_count_and_capacity_hami_dra_asks_for(case):
    result = translate(case["limits"], {})
    (claim,) = result.claims
    (request,) = claim.claim_spec["devices"]["requests"]
    exactly = request["exactly"]
    ours = {k: parse_quantity(v) for k, v in (exactly.get("capacity") or {}).get("requests", {}).items()}
    theirs = {k: parse_quantity(v) for k, v in case["want"]["capacity"].items()}
    assert exactly["count"] == case["want"]["count"]
    assert exactly["deviceClassName"] == hami.HAMI_DEVICE_CLASS
    if not theirs:  # whole GPUs: neither names a capacity, the request policy gives each all of a GPU
        assert ours == {}
        return
    if hami.CORES.name not in theirs:  # the one difference on purpose (module docstring)
        assert ours.pop(hami.CORES.name) == 0
    assert ours == theirs
    # Neither leaves the converted resources behind in the container.
    assert not result.remaining
