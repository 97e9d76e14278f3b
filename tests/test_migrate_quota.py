"""`kubectl gpu migrate` carries ResourceQuotas' GPU caps over to DRA, in files as a person wrote
them: comments kept, nothing changed twice, a report line per quota."""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import yaml
from click.testing import CliRunner

from kubectl_gpu.cli.main import main

QUOTA = """\
# the tenant's share of the GPU pool
apiVersion: v1
kind: ResourceQuota
metadata:
  name: gpus
  namespace: team-a
spec:
  hard:
    requests.nvidia.com/gpu: "4"  # four GPUs, agreed with finance
    requests.cpu: "64"
---
apiVersion: v1
kind: ResourceQuota
metadata:
  name: shared
  namespace: team-b
spec:
  hard:
    requests.nvidia.com/gpumem: "40000"
"""


def migrate(*args: str, stdin: str | None = None):
    return CliRunner().invoke(main, ["migrate", *args], input=stdin)


def test_a_quota_gets_the_dra_entry_with_its_comments_kept(tmp_path: Path) -> None:
    path = tmp_path / "quota.yaml"
    path.write_text(QUOTA)
    result = migrate(str(path))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("# the tenant's share of the GPU pool\n")
    assert 'requests.nvidia.com/gpu: "4"  # four GPUs, agreed with finance\n' in out
    first, second = list(yaml.safe_load_all(out))
    assert first["spec"]["hard"] == {"requests.nvidia.com/gpu": "4", "requests.cpu": "64",
                                     "gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "4"}
    assert second["spec"]["hard"] == {"requests.nvidia.com/gpumem": "40000"}
    for doc in (first, second):
        kubernetes_validate.validate(doc, "1.34", strict=True)
    report = result.stderr
    assert "ResourceQuota team-a/gpus" in report
    assert "quota: added gpu.nvidia.com.deviceclass.resource.k8s.io/devices: 4" in report
    assert "ResourceQuota team-b/shared" in report and "quota: not changed" in report
    assert "requests.nvidia.com/gpumem: 40000 caps the memory of shared GPUs" in report
    assert "1 quota object(s) given DRA caps" in report


def test_migrating_the_output_again_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "quota.yaml"
    path.write_text(QUOTA)
    assert migrate("--in-place", str(path)).exit_code == 0
    once = path.read_text()
    again = migrate("--in-place", str(path))
    assert again.exit_code == 0 and path.read_text() == once
    assert "quota object(s) given DRA caps" not in again.stderr
    assert "gpu.nvidia.com.deviceclass.resource.k8s.io/devices is already set (4)" in again.stderr


def test_a_quota_read_back_from_a_cluster_loses_what_the_server_set() -> None:
    live = yaml.safe_load(QUOTA.split("---")[0])
    live["metadata"].update(uid="0c8f", resourceVersion="812")
    live["status"] = {"hard": live["spec"]["hard"], "used": {"requests.nvidia.com/gpu": "4"}}
    result = migrate("-", stdin=yaml.safe_dump(live))
    assert result.exit_code == 0, result.output
    out = yaml.safe_load(result.stdout)
    assert "status" not in out and "uid" not in out["metadata"] and "resourceVersion" not in out["metadata"]
    assert out["spec"]["hard"]["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"] == "4"
