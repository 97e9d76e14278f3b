"""Which pods hold device-plugin GPUs (kubectl_gpu/inspect/legacy.py `legacy_pod`): every container
field the core reads (containers and initContainers, limits and requests), and nothing else."""

from __future__ import annotations

import pytest

from kubectl_gpu.core import legacy_requests
from kubectl_gpu.inspect.legacy import legacy_pod


def pod(**spec):
    return {"metadata": {"name": "p", "namespace": "ml"}, "spec": spec, "status": {"phase": "Running"}}


@pytest.mark.parametrize(("spec", "held"), [
    ({"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}, [("c", "nvidia.com/gpu", "2")]),
    ({"initContainers": [{"name": "i", "resources": {"requests": {"nvidia.com/mig-1g.10gb": "1"}}}],
      "containers": [{"name": "c"}]}, [("i", "nvidia.com/mig-1g.10gb", "1")]),
    ({"containers": [{"name": "c", "resources": {"limits": {" nvidia.com/gpu ": "1", "cpu": "2"}}}]},
     [("c", "nvidia.com/gpu", "1")]),
    ({"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "0"}}}]}, []),
    ({"containers": [{"name": "c", "resources": {"claims": [{"name": "gpu"}]}}]}, []),
    ({"containers": [{"name": "c", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}, []),
    ({"containers": "not a list"}, []),
    ({}, []),
])
def test_a_pod_holds_what_the_core_reads_from_its_containers(spec, held):
    found = legacy_pod(pod(**spec))
    assert ([(r.container, r.resource.strip(), r.amount) for r in found.requests] if found else []) == held
    assert bool(found) == any(r.amount > 0 for r in legacy_requests(pod(**spec)))
