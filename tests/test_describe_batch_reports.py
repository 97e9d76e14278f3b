"""`describe pod` / `describe claim` without a name report every pod or claim; the batch functions
index claims and devices once and must say exactly what the one-object functions say."""

from __future__ import annotations

from kubectl_gpu.inspect.claims import claim_report, claim_reports
from kubectl_gpu.inspect.devices import current_devices
from kubectl_gpu.inspect.pods import ALLOCATED, MISSING, NOT_CREATED, WAITING, pod_report, pod_reports
from tests import builders as b

TEMPLATE = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]


def _cluster():
    devices = current_devices([b.gpu_slice("node-a", 2), b.gpu_slice("node-b", 2)])
    claims = [
        b.claim("a-gpu", "ml", allocated=[("gpu", "gpu-1")], node_name="node-a", reserved_for=["a"], owner_pod="a"),
        b.claim("b-gpu", "ml", owner_pod="b"),
        # same name in another namespace: must not be mistaken for ml/a-gpu
        b.claim("a-gpu", "team-2", allocated=[("gpu", "gpu-0")], node_name="node-b", reserved_for=["a"]),
        b.claim("gone", "ml", allocated=[("gpu", "gpu-9")], node_name="node-a"),  # no slice publishes gpu-9
    ]
    pods = [
        b.pod("a", "ml", node_name="node-a", claims=TEMPLATE, claim_statuses={"gpu": "a-gpu"}),
        b.pod("b", "ml", phase="Pending", claims=TEMPLATE, claim_statuses={"gpu": "b-gpu"}),
        b.pod("c", "ml", phase="Pending", claims=TEMPLATE),
        b.pod("d", "ml", claims=[{"name": "gpu", "resourceClaimName": "deleted"}]),
        b.pod("a", "team-2", node_name="node-b", claims=TEMPLATE, claim_statuses={"gpu": "a-gpu"}),
        b.pod("legacy", "ml", node_name="node-a", limits={"nvidia.com/gpu": 1}),
    ]
    return pods, claims, devices


def test_every_pod_gets_the_report_describe_pod_name_gives():
    pods, claims, devices = _cluster()
    batch = pod_reports(pods, claims, devices)
    assert [r.to_dict() for r in batch] == [pod_report(p, claims, devices).to_dict() for p in pods]
    states = {r.ref: [c.state for c in r.claims] for r in batch}
    assert states == {"ml/a": [ALLOCATED], "ml/b": [WAITING], "ml/c": [NOT_CREATED], "ml/d": [MISSING],
                      "team-2/a": [ALLOCATED], "ml/legacy": []}
    devices_of = {r.ref: [(d.node, d.device) for c in r.claims for d in c.devices] for r in batch}
    assert devices_of["ml/a"] == [("node-a", "gpu-1")] and devices_of["team-2/a"] == [("node-b", "gpu-0")]
    assert batch[-1].legacy_requests[0].resource == "nvidia.com/gpu"


def test_every_claim_gets_the_report_describe_claim_name_gives():
    _, claims, devices = _cluster()
    batch = claim_reports(claims, devices)
    assert [r.to_dict() for r in batch] == [claim_report(c, devices).to_dict() for c in claims]
    assert [(r.ref, r.node, [d.detail is not None for d in r.devices]) for r in batch] == [
        ("ml/a-gpu", "node-a", [True]), ("ml/b-gpu", None, []), ("team-2/a-gpu", "node-b", [True]),
        ("ml/gone", "node-a", [False])]
