"""On the slices inventory predicts for the NVIDIA driver's DynamicMIG gate (an A100, an H100 and the real
H200: tests/test_inventory_dynamic_mig.py checks them device by device against the driver's code), the
allocator never hands out a MIG device together with its full GPU, nor two MIG placements that overlap:
every device draws on the GPU's counter set (one `memory-slice-<i>` counter per memory slice, and the
GPU's engines and multiprocessors), and the allocator keeps within it (structured allocator,
DRAPartitionableDevices).

Each answer is checked against an exhaustive search over the same devices and counters: "allocated"
must be a set of distinct devices, each of its request's profile, whose counters add up to no more
than the counter set; "unsatisfiable" must mean that no such set exists.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_gpu.allocator import ALLOCATED, UNSATISFIABLE, Allocator, Claim, DeviceClass, Features, Node, Request, SubRequest
from kubectl_gpu.dra.devices import read_slice
from kubectl_gpu.dra.facts import NVIDIA_DRIVER
from kubectl_gpu.dra.gates import default_gates
from kubectl_gpu.dra.quantity import parse_quantity
from tests.mig_tables import SHARED_NVML
from tests.test_inventory_dynamic_mig import a100, h200, load, slices

NODE = "gpu-node-1"
CLASS = DeviceClass(NVIDIA_DRIVER, (f"device.driver == '{NVIDIA_DRIVER}'",))
FULL_GPU = "gpu"  # a request kind: the full GPU; any other is a MIG profile


class Predicted:
    """One node's predicted slices: its devices by name, what each is (gpu or its MIG profile), what
    each consumes, and the counter set they share."""

    def __init__(self, documents: list[dict]) -> None:
        self.documents = documents
        self.allocator = Allocator([read_slice(s) for s in documents], {CLASS.name: CLASS},
                                   Features.from_gates(default_gates()))
        [counter_set] = [c for s in documents for c in s["spec"].get("sharedCounters", ())]
        self.capacity = {name: parse_quantity(v["value"]) for name, v in counter_set["counters"].items()}
        self.kind: dict[str, str] = {}
        self.consumes: dict[str, dict[str, Fraction]] = {}
        for device in (d for s in documents for d in s["spec"].get("devices", ())):
            attributes = device["attributes"]
            self.kind[device["name"]] = (FULL_GPU if attributes["type"]["string"] == "gpu"
                                         else attributes["profile"]["string"])
            [consumption] = device["consumesCounters"]
            assert consumption["counterSet"] == counter_set["name"]
            self.consumes[device["name"]] = {n: parse_quantity(v["value"]) for n, v in consumption["counters"].items()}

    @property
    def profiles(self) -> list[str]:
        return sorted({k for k in self.kind.values() if k != FULL_GPU})

    @property
    def kinds(self) -> list[str]:
        return sorted(set(self.kind.values()))

    def fits(self, devices: Sequence[str]) -> bool:
        used: Counter[str] = Counter()
        for device in devices:
            used.update(self.consumes[device])
        return all(amount <= self.capacity[name] for name, amount in used.items())

    def allocate(self, requests: Sequence[tuple[str, int]]) -> Any:
        return self.allocator.allocate([Claim("default/c", tuple(
            Request(f"r{i}", exactly=SubRequest(f"r{i}", CLASS.name, (_selector(kind),), count=count))
            for i, (kind, count) in enumerate(requests)))], Node(NODE))

    def exists(self, requests: Sequence[tuple[str, int]], taken: tuple[str, ...] = ()) -> bool:
        """Whether distinct devices of the requested kinds fit the counter set together."""
        if not requests:
            return True
        (kind, count), rest = requests[0], requests[1:]
        candidates = sorted(d for d, k in self.kind.items() if k == kind and d not in taken)
        return any(self.fits(taken + chosen) and self.exists(rest, taken + chosen)
                   for chosen in itertools.combinations(candidates, count))

    def check(self, requests: Sequence[tuple[str, int]]) -> bool:
        """The allocator's answer, held to the counters and to the exhaustive search; whether it allocated."""
        outcome = self.allocate(requests)
        assert outcome.kind in (ALLOCATED, UNSATISFIABLE), outcome.error
        possible = self.exists(list(requests))
        if outcome.kind == UNSATISFIABLE:
            assert not possible, f"{requests}: unsatisfiable, but a set of devices fits the counters"
            return False
        [allocation] = outcome.allocations
        names = [r.device for r in allocation.devices]
        assert len(names) == len(set(names)), f"{requests}: a device twice: {names}"
        assert self.fits(names), f"{requests}: {names} exceed the GPU's counter set"
        assert not (FULL_GPU in {self.kind[n] for n in names} and len(names) > 1), \
            f"{requests}: the full GPU allocated beside {names}"
        by_request = Counter(r.request for r in allocation.devices)
        assert by_request == Counter({f"r{i}": count for i, (_, count) in enumerate(requests)})
        for result in allocation.devices:
            assert self.kind[result.device] == requests[int(result.request[1:])][0]
        return True


def _selector(kind: str) -> str:
    attributes = f"device.attributes['{NVIDIA_DRIVER}']"
    if kind == FULL_GPU:
        return f"{attributes}.type == 'gpu'"
    return f"{attributes}.type == 'mig' && {attributes}.profile == '{kind}'"


_NODES = {"A100": a100, "H100": lambda: load("h100-80gb-hbm3-mig-profiles"), "H200": h200}
_PREDICTED: dict[str, Predicted] = {}


def predicted(name: str) -> Predicted:
    if name not in _PREDICTED:
        _PREDICTED[name] = Predicted(slices(_NODES[name]()))
    return _PREDICTED[name]


@pytest.mark.parametrize("gpu", ["H100", "H200"])
def test_the_full_gpu_is_never_allocated_with_any_mig_device_of_it(gpu):
    node = predicted(gpu)

    assert node.check([(FULL_GPU, 1)])
    for profile in node.profiles:
        assert node.check([(profile, 1)]), profile
        assert not node.check([(FULL_GPU, 1), (profile, 1)]), profile


def test_an_a100_in_dynamic_mig_publishes_no_full_gpu_to_allocate():
    """An Ampere is MIG-capable only while MIG mode is on, and then without its full GPU (nvlib.go)."""
    assert FULL_GPU not in predicted("A100").kinds


@pytest.mark.parametrize("gpu", ["A100", "H100", "H200"])
def test_each_profile_allocates_as_many_placements_as_fit_side_by_side_and_no_more(gpu):
    node = predicted(gpu)

    for profile in node.profiles:
        most = max(n for n in range(1, 8) if node.exists([(profile, n)]))
        assert node.check([(profile, most)]), profile
        if most < sum(1 for k in node.kind.values() if k == profile):
            assert not node.check([(profile, most + 1)]), profile


@pytest.mark.parametrize("gpu", ["A100", "H100", "H200"])
def test_every_two_profiles_allocate_together_exactly_when_two_placements_do_not_overlap(gpu):
    node = predicted(gpu)

    verdicts = {(p, q): node.check([(p, 1), (q, 1)]) for p, q in itertools.combinations_with_replacement(node.profiles, 2)}

    [whole] = [p for p in node.profiles if p.startswith("7g.")]  # every memory slice: nothing beside it
    assert not any(v for (p, q), v in verdicts.items() if whole in (p, q))
    assert any(verdicts.values())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_mixes_of_full_gpus_and_mig_profiles_never_exceed_the_counter_set(data):
    # The H200 is a real recording in ../shared; without it, the A100 and H100 fixtures.
    gpu = data.draw(st.sampled_from(sorted(_NODES) if SHARED_NVML.is_dir() else ["A100", "H100"]), label="gpu")
    node = predicted(gpu)
    requests = data.draw(st.lists(st.tuples(st.sampled_from(node.kinds), st.integers(1, 3)), min_size=1, max_size=3),
                         label="requests")

    node.check(requests)
