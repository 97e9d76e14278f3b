"""`kubectl gpu rollback` restores a workload from the record migrate left in its pod template
(annotation kubectl-gpu.io/original-resources: the legacy requests by container, the moved
nodeSelector and node affinity).  The annotation lives in the cluster where anyone can edit it: a
record that is not what migrate writes stops the rollback of that workload with a message naming
it, never with a traceback, and nothing is written."""

from __future__ import annotations

import json

import pytest

from kubectl_gpu.core.constants import ORIGINAL_RESOURCES_ANNOTATION
from kubectl_gpu.fleet.apply import RollbackError, rollback_config


def deployment(record: str) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "infer", "namespace": "ml"},
            "spec": {"template": {"metadata": {"annotations": {ORIGINAL_RESOURCES_ANNOTATION: record}},
                                  "spec": {"containers": [{"name": "main", "image": "x"}]}}}}


def test_the_record_migrate_writes_restores_the_legacy_limit() -> None:
    record = json.dumps({"containers": {"main": {"limits": {"nvidia.com/gpu": "1"}}},
                         "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}})
    config = rollback_config(deployment(record))
    assert config["spec"]["template"]["spec"]["containers"] == [
        {"name": "main", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]
    assert config["spec"]["template"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}


@pytest.mark.parametrize("record", [
    '"nvidia.com/gpu: 1"',
    "[1, 2]",
    '{"containers": ["main"]}',
    '{"containers": {"main": ["limits"]}}',
    '{"containers": {"main": {"limits": "nvidia.com/gpu=1"}}}',
    '{"containers": {"main": {"limits": {"nvidia.com/gpu": {"n": 1}}}}}',
    '{"nodeSelector": "gpu"}',
    '{"nodeSelector": {"nvidia.com/gpu.product": 7}}',
])
def test_a_record_that_is_not_what_migrate_writes_is_named(record: str) -> None:
    with pytest.raises(RollbackError, match=f"Deployment/infer: the {ORIGINAL_RESOURCES_ANNOTATION} annotation at "
                                            "/spec/template is not the record kubectl-gpu writes"):
        rollback_config(deployment(record))
