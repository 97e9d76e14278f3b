"""scripts/release builds the archive krew/gpu.yaml points at, for this host: the files the
manifest names are in it, its sha256 is written beside it and into the manifest, and the plugin
runs from the archive installed the way krew installs it (extracted, bin symlinked elsewhere) with
nothing but python3 on PATH.  The webhook's chart is released pinned to the image the release
pushed: its digest, read from what `docker buildx build --push --metadata-file` wrote."""

from __future__ import annotations

import hashlib
import json
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
# What `docker buildx build --push --metadata-file meta.json` writes for the pushed image (buildx's
# metadata file: docs.docker.com/reference/cli/docker/buildx/build/#metadata-file).
IMAGE_DIGEST = "sha256:" + "4f2a" * 16
BUILDX_METADATA = {"containerimage.digest": IMAGE_DIGEST,
                   "image.name": "ghcr.io/kubectl-gpu/kubectl-gpu-webhook:v0"}


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    if platform.system().lower() not in ("linux", "darwin"):
        pytest.skip("release archives are built for linux and darwin")
    out = tmp_path_factory.mktemp("dist")
    metadata = tmp_path_factory.mktemp("image") / "meta.json"
    metadata.write_text(json.dumps(BUILDX_METADATA))
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "release"), "--out", str(out),
                             "--image-metadata", str(metadata)], capture_output=True, text=True, timeout=900)
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


def test_the_released_chart_pins_the_pushed_image_by_digest(release, tmp_path):
    """A tag can be moved to another image; the released chart installs exactly the image the
    release pushed.  The source chart leaves image.digest empty (no image exists for it yet)."""
    out, _ = release
    (chart,) = out.glob("kubectl-gpu-webhook-*.tgz")
    with tarfile.open(chart) as tar:
        values_text = tar.extractfile("kubectl-gpu-webhook/values.yaml").read().decode()
        tar.extractall(tmp_path, filter="data")
    values = yaml.safe_load(values_text)
    assert values["image"]["digest"] == IMAGE_DIGEST
    source = (REPO / "charts" / "kubectl-gpu-webhook" / "values.yaml").read_text()
    assert yaml.safe_load(source)["image"]["digest"] == ""
    # Only the digest line changed: the comments that explain the values ship with the chart.
    changed = [(a, b) for a, b in zip(source.splitlines(), values_text.splitlines()) if a != b]
    assert changed == [('  digest: ""', f'  digest: "{IMAGE_DIGEST}"')]
    helm = REPO / ".tools" / "bin" / "helm"
    if helm.exists():
        shown = subprocess.run([str(helm), "template", "gpu", str(tmp_path / "kubectl-gpu-webhook")],
                               capture_output=True, text=True, check=True)
        assert f"image: ghcr.io/kubectl-gpu/kubectl-gpu-webhook@{IMAGE_DIGEST}" in shown.stdout


def _release(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts" / "release"), "--out", str(tmp_path / "dist"), *args],
                          capture_output=True, text=True, timeout=120)


def test_a_release_without_the_image_digest_is_refused_before_anything_is_built(tmp_path):
    result = _release(tmp_path=tmp_path)
    assert result.returncode == 2
    assert "--image-metadata" in result.stderr and "--image-digest" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "dist").exists() or not any((tmp_path / "dist").iterdir())


@pytest.mark.parametrize("metadata, said", [
    ("{}", "has no containerimage.digest"),
    ("not json", "is not JSON"),
    ('{"containerimage.digest": "latest"}', "is not a sha256 digest"),
])
def test_unusable_image_metadata_is_refused_saying_what_to_change(tmp_path, metadata, said):
    path = tmp_path / "meta.json"
    path.write_text(metadata)
    result = _release("--image-metadata", str(path), tmp_path=tmp_path)
    assert result.returncode == 2 and said in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_a_bad_digest_on_the_command_line_is_refused(tmp_path):
    result = _release("--image-digest", "sha256:abc", tmp_path=tmp_path)
    assert result.returncode == 2 and "is not a sha256 digest" in result.stderr
