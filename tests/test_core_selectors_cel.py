"""Every device selector the core writes compiles in the DRA CEL environment and picks the
devices a person would expect, on devices shaped like the NVIDIA driver's."""

from __future__ import annotations

import pytest

from kubectl_gpu.cel import compile_selector
from kubectl_gpu.dra.devices import devices_from_slice
from kubectl_gpu.core import TranslateOptions, translate_pod_template

SLICE = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "node-a-gpu"},
    "spec": {"driver": "gpu.nvidia.com", "nodeName": "node-a",
             "pool": {"name": "node-a", "generation": 1, "resourceSliceCount": 1},
             "devices": [
                 {"name": "gpu-0", "attributes": {"type": {"string": "gpu"},
                                                  "productName": {"string": "NVIDIA A100-SXM4-40GB"},
                                                  "architecture": {"string": "Ampere"}},
                  "capacity": {"memory": {"value": "40Gi"}}},
                 {"name": "gpu-1-mig-0", "attributes": {"type": {"string": "mig"},
                                                        "productName": {"string": "NVIDIA A100-SXM4-40GB"},
                                                        "profile": {"string": "1g.5gb"}},
                  "capacity": {"memory": {"value": "4864Mi"}}},
                 {"name": "gpu-2", "attributes": {"type": {"string": "gpu"},
                                                  "productName": {"string": "NVIDIA H100 80GB HBM3"},
                                                  "architecture": {"string": "Hopper"}},
                  "capacity": {"memory": {"value": "81559Mi"}}},
                 # A device without the attributes: the guards must make it a non-match, not an error.
                 {"name": "bare", "attributes": {}, "capacity": {}},
             ]}}
DEVICES = devices_from_slice(SLICE)


def matching(node_selector=None, annotations=None, limits=None):
    template = {"metadata": {"annotations": annotations or {}},
                "spec": {"nodeSelector": node_selector or {},
                         "containers": [{"name": "c", "resources": {"limits": limits or {"nvidia.com/gpu": 1}}}]}}
    (claim,) = translate_pod_template(template, TranslateOptions()).claims
    exactly = claim.claim_spec["devices"]["requests"][0]["exactly"]
    selectors = [compile_selector(s["cel"]["expression"]) for s in exactly.get("selectors", [])]
    return {d.name for d in DEVICES if all(s.matches(d) for s in selectors)}


@pytest.mark.parametrize("node_selector, expected", [
    ({"nvidia.com/gpu.product": "A100-SXM4-40GB"}, {"gpu-0", "gpu-1-mig-0"}),
    ({"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}, {"gpu-0", "gpu-1-mig-0"}),
    ({"nvidia.com/gpu.memory": "40960"}, {"gpu-0"}),
    ({"nvidia.com/gpu.family": "hopper"}, {"gpu-2"}),
    ({"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"}, {"gpu-2"}),
    ({"nvidia.com/gpu.product": "A100-SXM4-40GB-MIG-1g.5gb"}, {"gpu-1-mig-0"}),
])
def test_node_label_selectors_pick_the_devices_the_label_meant(node_selector, expected):
    assert matching(node_selector) == expected


def test_mig_profile_selector_picks_only_that_profile():
    assert matching(limits={"nvidia.com/mig-1g.5gb": 1}) == {"gpu-1-mig-0"}


def test_hami_card_type_matches_case_insensitively_like_hami():
    assert matching(annotations={"nvidia.com/use-gputype": "h100"}) == {"gpu-2"}
