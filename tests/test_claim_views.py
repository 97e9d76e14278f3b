"""ResourceClaims read into the views describe and doctor show (kubectl_gpu/inspect/claims_model.py):
every field set however little the claim says, and the API's own values, not defaults."""

from __future__ import annotations

import dataclasses

from kubectl_gpu.inspect.claims_model import AllocatedDevice, ClaimView, read_claim
from kubectl_gpu.inspect.devices import DeviceKey
from kubectl_gpu.inspect.holders import Holder, holders_by_device
from tests import builders as b


def test_a_bare_claim_reads_as_an_unallocated_view_with_every_field():
    view = read_claim({"metadata": {"name": "c", "namespace": "ml"}})
    assert dataclasses.asdict(view) == {
        "namespace": "ml", "name": "c", "uid": "", "spec": {}, "allocated": (), "allocation_node": None,
        "reserved_for": (), "labels": {}, "annotations": {}, "owner_pod": None, "deleting": False}
    assert view.requests == ()


def test_an_allocated_claim_reads_its_results_consumers_and_owner():
    raw = b.claim("share-1", "ml", allocated=[("gpu", "gpu-0")], node_name="node-a", reserved_for=["p"],
                  owner_pod="p", consumed={"memory": "8Gi"}, share_id="b", labels={"team": "x"})
    view = read_claim(raw)
    assert {f.name for f in dataclasses.fields(ClaimView)} == set(view.__dict__) - {"requests"}
    assert (view.ref, view.allocation_node, view.reserved_for, view.owner_pod) == ("ml/share-1", "node-a", ("p",), "p")
    assert view.labels == {"team": "x"} and view.annotations == {"resource.kubernetes.io/pod-claim-name": "gpu"}
    [allocated] = view.allocated
    assert allocated == AllocatedDevice("gpu", DeviceKey("gpu.nvidia.com", "node-a", "gpu-0"), {"memory": "8Gi"}, "b")
    assert holders_by_device([raw, b.claim("unallocated", "ml")]) == {DeviceKey("gpu.nvidia.com", "node-a", "gpu-0"): [
        Holder("ml/share-1", "gpu", ("ml/p",), {"memory": "8Gi"}, "b", False)]}
