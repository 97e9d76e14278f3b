"""Kubernetes 1.38 is supported, and no longer serves resource.k8s.io/v1beta1 (as issue 25 records
the beta's removal): what kubectl-gpu writes for a 1.38 cluster is never v1beta1, whatever the files
describing that cluster were written in."""

from __future__ import annotations

import json

from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from kubectl_gpu.cluster.profile import build_profile
from kubectl_gpu.core import ApiVersion
from kubectl_gpu.dra import facts
from kubectl_gpu.dra.gates import default_gates, kubernetes_minor

V1BETA1_CLASS = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "DeviceClass", "metadata": {"name": "gpu.nvidia.com"},
                 "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]}}


V1BETA1_SLICE = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", "metadata": {"name": "n1-gpu"},
                 "spec": {"driver": "gpu.nvidia.com", "nodeName": "n1",
                          "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                          "devices": [{"name": "gpu-0", "basic": {
                              "attributes": {"type": {"string": "gpu"}, "productName": {"string": "NVIDIA H100"}},
                              "capacity": {"memory": {"value": "80Gi"}}}}]}}


def test_1_38_is_supported_and_serves_v1_and_v1beta2_only():
    assert kubernetes_minor("v1.38.0") == 38
    assert facts.served_dra_versions(38) == ("v1", "v1beta2")
    assert facts.served_dra_versions(37) == ("v1", "v1beta2", "v1beta1")
    assert facts.dra_version_for(38) == "v1"


def test_1_38_keeps_the_dra_gate_defaults_of_1_37_until_a_release_changes_one():
    """dra/gates.py replays each gate's history: no 1.38 transition is recorded."""
    assert default_gates(38) == default_gates(37)


def test_a_1_38_profile_read_from_v1beta1_files_writes_v1():
    profile = build_profile("files", objects=[V1BETA1_CLASS], kubernetes_minor=38)

    assert profile.served_versions == ("v1",)
    assert profile.api_version is ApiVersion.V1
    assert "v1beta1 not served by Kubernetes 1.38" in profile.describe()


def test_migrate_for_a_1_38_cluster_never_writes_v1beta1(tmp_path):
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [V1BETA1_CLASS, V1BETA1_SLICE]}))
    pod = tmp_path / "pod.yaml"
    pod.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n"
                   "    image: cuda\n    resources: {limits: {nvidia.com/gpu: 1}}\n")

    result = CliRunner().invoke(main, ["migrate", str(pod), "--cluster", str(cluster), "--kubernetes-version", "1.38"])

    assert result.exit_code == 0, result.output
    assert "resource.k8s.io/v1beta1" not in result.stdout and "apiVersion: resource.k8s.io/v1\n" in result.stdout
