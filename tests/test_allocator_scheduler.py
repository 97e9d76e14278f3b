"""A selector that fails at run time stops the pod's scheduling, as the scheduler's DynamicResources
plugin does: kubernetes/kubernetes pkg/scheduler/framework/plugins/dynamicresources/
dynamicresources_test.go, cases claim-parameters-CEL-runtime-error, class-parameters-CEL-runtime-error,
CEL-runtime-error-for-one-of-two-nodes, CEL-runtime-error-for-one-of-three-nodes and
request-admin-access-without-DRAAdminAccess-featuregate.  Their objects: node "worker" publishes
device instance-1 of driver some-driver with no attributes, "worker-2" and "worker-3" the same
device with healthy=true; the broken selector reads device.attributes["some-driver"].healthy.
The wording is the allocator's at the commit it follows, which names the device
("selector #0 on device ..."); the plugin's test at its older commit omits that part.
"""

from __future__ import annotations

import pytest

from kubectl_gpu.allocator import (
    ALLOCATED,
    ERROR,
    Allocator,
    Claim,
    DeviceClass,
    Features,
    Node,
    Request,
    SubRequest,
    place,
)
from kubectl_gpu.dra.devices import read_slice

BROKEN = 'device.attributes["some-driver"].healthy'
CLAIM = "default/my-pod-my-resource"


def node_slice(node: str, healthy: bool | None) -> dict:
    device: dict = {"name": "instance-1"}
    if healthy is not None:
        device["attributes"] = {"healthy": {"bool": healthy}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-some-driver"},
            "spec": {"driver": "some-driver", "nodeName": node, "pool": {"name": node, "resourceSliceCount": 1},
                     "devices": [device]}}


def claim(selectors: tuple[str, ...] = (), admin_access: bool | None = None) -> Claim:
    return Claim(CLAIM, (Request("req-1", exactly=SubRequest("req-1", "my-resource-class", selectors,
                                                           admin_access=admin_access)),))


def allocator(nodes: dict[str, bool | None], class_selectors: tuple[str, ...] = (),
              features: Features = Features()) -> Allocator:
    return Allocator([read_slice(node_slice(n, h)) for n, h in nodes.items()],
                     {"my-resource-class": DeviceClass("my-resource-class", class_selectors)}, features)


def test_claim_parameters_cel_runtime_error() -> None:
    outcome = allocator({"worker": None}).allocate([claim((BROKEN,))], Node("worker"))
    assert outcome.kind == ERROR and not outcome.node_only
    assert outcome.error == (f"claim {CLAIM}: selector #0 on device some-driver/worker/instance-1: "
                             "CEL runtime error: no such key: healthy")


def test_class_parameters_cel_runtime_error() -> None:
    outcome = allocator({"worker": None}, class_selectors=(BROKEN,)).allocate([claim()], Node("worker"))
    assert outcome.kind == ERROR
    assert outcome.error == ("class my-resource-class: selector #0 on device some-driver/worker/instance-1: "
                             "CEL runtime error: no such key: healthy")


@pytest.mark.parametrize("nodes", [["worker", "worker-2"], ["worker", "worker-2", "worker-3"]],
                         ids=["one-of-two-nodes", "one-of-three-nodes"])
def test_cel_runtime_error_on_one_node_keeps_the_pod_pending(nodes: list[str]) -> None:
    cluster = allocator({n: (None if n == "worker" else True) for n in nodes})
    # The other nodes alone would take the pod...
    assert cluster.allocate([claim((BROKEN,))], Node("worker-2")).kind == ALLOCATED
    # ...but the error on worker is the pod's: it is scheduled nowhere.
    placement = place(cluster, [claim((BROKEN,))], [Node(n) for n in nodes])
    assert placement.chosen is None
    assert placement.error is not None and placement.error.node == "worker"
    assert "CEL runtime error: no such key: healthy" in placement.error.error


def test_admin_access_without_the_feature_gate() -> None:
    outcome = allocator({"worker": None}).allocate([claim(admin_access=True)], Node("worker"))
    assert outcome.kind == ERROR
    assert outcome.error == f"claim {CLAIM}, request req-1: admin access is requested, but the feature is disabled"
