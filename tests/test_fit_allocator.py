"""migrate --cluster/--from-cluster and the webhook's unsatisfiableClaims judge a claim with the
structured allocator over the cluster profile's slices (kubectl_gpu/cluster/fit.py, unsatisfiable):
a device a taint keeps away, or a whole GPU and a MIG slice of it on one counter set, is not
offered (issue 24)."""

from __future__ import annotations

from kubectl_gpu.cluster import build_profile, unsatisfiable
from kubectl_gpu.core import ApiVersion, ClaimObject
from tests.builders import NVIDIA, gpu_device, gpu_slice
from tests.builders import dynamic_mig_slices


def gpu_claim(name: str, *requests: dict) -> ClaimObject:
    return ClaimObject("ResourceClaimTemplate", name, ApiVersion.V1, {"devices": {"requests": list(requests)}})


WHOLE = {"name": "gpu", "exactly": {"deviceClassName": NVIDIA, "count": 1}}
MIG = {"name": "mig", "exactly": {"deviceClassName": "mig.nvidia.com", "count": 1}}


def test_a_claim_no_device_can_take_because_of_a_taint_is_unsatisfiable() -> None:
    device = gpu_device("node-1", 0)
    device["taints"] = [{"key": "maintenance", "effect": "NoExecute"}]
    profile = build_profile("test", objects=[gpu_slice("node-1", devices=[device])], kubernetes_minor=36)
    assert "gpu" in unsatisfiable([gpu_claim("gpu", WHOLE)], profile)
    untainted = build_profile("test", objects=[gpu_slice("node-1", gpus=1)], kubernetes_minor=36)
    assert unsatisfiable([gpu_claim("gpu", WHOLE)], untainted) == {}


def test_a_gpu_and_a_mig_slice_of_it_on_one_counter_set_are_unsatisfiable_together() -> None:
    profile = build_profile("test", objects=dynamic_mig_slices(), kubernetes_minor=36)
    assert unsatisfiable([gpu_claim("whole", WHOLE), gpu_claim("slice", MIG)], profile) == {}
    assert "both" in unsatisfiable([gpu_claim("both", WHOLE, MIG)], profile)
