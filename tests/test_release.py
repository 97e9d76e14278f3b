"""scripts/release builds the archive krew/gpu.yaml points at, for this host: the files the
manifest names are in it, its sha256 is written beside it and into the manifest, and the plugin
runs from the archive installed the way krew installs it (extracted, bin symlinked elsewhere) with
nothing but python3 on PATH."""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
# The interpreter without this virtualenv's packages: the archive must bring its own.
BASE_PYTHON = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    if platform.system().lower() not in ("linux", "darwin"):
        pytest.skip("release archives are built for linux and darwin")
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "release"), "--out", str(out)],
                            capture_output=True, text=True, timeout=900)
    if result.returncode != 0 and "Could not find a version" in result.stderr:
        pytest.skip("the package index is not reachable to fetch the plugin's dependencies")
    assert result.returncode == 0, result.stderr
    (archive,) = out.glob("kubectl-gpu_v*.tar.gz")
    return out, archive


def test_the_manifest_points_at_the_built_archive_with_its_digest(release):
    out, archive = release
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    assert (out / f"{archive.name}.sha256").read_text() == f"{digest}  {archive.name}\n"
    manifest = yaml.safe_load((out / "gpu.yaml").read_text())
    committed = yaml.safe_load((REPO / "krew" / "gpu.yaml").read_text())
    (entry,) = [p for p in manifest["spec"]["platforms"] if p["uri"].endswith("/" + archive.name)]
    assert entry["sha256"] == digest
    assert [p["uri"] for p in manifest["spec"]["platforms"]] == [p["uri"] for p in committed["spec"]["platforms"]]
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
    assert {f["from"] for f in entry["files"]} <= names and entry["bin"] in names
    assert "LICENSE" in names and any(n.startswith("lib/kubectl_gpu/") for n in names)
    assert not any(n.startswith("lib/bin/") or "__pycache__" in n for n in names)


@pytest.mark.skipif(not BASE_PYTHON.exists(), reason="no base python3 to run the archive's launcher with")
def test_the_archive_runs_installed_the_way_krew_installs_it(release, tmp_path):
    _, archive = release
    store, bin_dir = tmp_path / "store", tmp_path / "bin"
    store.mkdir()
    bin_dir.mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(store, filter="data")
    for name in ("kubectl-gpu", "kubectl_complete-gpu"):
        (bin_dir / name).symlink_to(store / name)
    (bin_dir / "python3").symlink_to(BASE_PYTHON)
    env = {"PATH": os.pathsep.join([str(bin_dir), "/usr/bin", "/bin"]), "HOME": str(tmp_path)}
    example = REPO / "examples" / "fractional-gpu.yaml"
    migrated = subprocess.run(["kubectl-gpu", "migrate", str(example)], env=env, capture_output=True,
                              text=True, timeout=120)
    assert migrated.returncode == 0, migrated.stderr
    assert "kind: ResourceClaimTemplate" in migrated.stdout
    completed = subprocess.run(["kubectl_complete-gpu", "des"], env=env, capture_output=True, text=True, timeout=120)
    assert completed.stdout.splitlines()[-1] == ":4" and completed.stdout.startswith("describe\t")


def test_the_chart_doctor_suggests_is_published_with_the_release(release):
    """doctor and describe tell a person to `helm install kubectl-gpu <CHART_REFERENCE>`: that
    archive must be among the files the release publishes, at the same address as the plugin's
    archives, and helm must read it as the chart."""
    from kubectl_gpu.inspect.doctor.webhooks import CHART_REFERENCE

    out, _ = release
    base, _, name = CHART_REFERENCE.rpartition("/")
    chart = out / name
    assert chart.is_file(), f"{name} is not built by scripts/release"
    digest = hashlib.sha256(chart.read_bytes()).hexdigest()
    assert (out / f"{name}.sha256").read_text() == f"{digest}  {name}\n"
    committed = yaml.safe_load((REPO / "krew" / "gpu.yaml").read_text())
    assert all(p["uri"].rpartition("/")[0] == base for p in committed["spec"]["platforms"])
    with tarfile.open(chart) as tar:
        names = set(tar.getnames())
    assert "kubectl-gpu-webhook/Chart.yaml" in names and "kubectl-gpu-webhook/values.schema.json" in names
    assert not any(n.endswith(".helmignore") for n in names)
    helm = REPO / ".tools" / "bin" / "helm"
    if helm.exists():
        shown = subprocess.run([str(helm), "show", "chart", str(chart)], capture_output=True, text=True, check=True)
        assert "name: kubectl-gpu-webhook" in shown.stdout
