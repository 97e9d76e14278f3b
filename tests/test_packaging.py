"""What `pip install kubectl-gpu` brings: the kubectl plugin's imports are all declared
dependencies, and the webhook's server stack (TLS certificates, metrics, fast JSON) is the
`webhook` extra, which the image and scripts/bootstrap install.  aiohttp is a base dependency: it
carries the one Kubernetes client (kubectl_gpu/k8s) the plugin and the webhook share."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WEBHOOK_SERVER = "kgpu-webhook"  # the admission webhook server's executable (Dockerfile, chart)
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requirements}


def _third_party_imports(package: str) -> set[str]:
    found: set[str] = set()
    for path in (REPO / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    local = {"kubectl_gpu", "webhook", "tests"}
    return {m for m in found if m not in local and m not in sys.stdlib_module_names}


def _distributions(modules: set[str]) -> set[str]:
    owners = packages_distributions()
    return {d.lower().replace("_", "-") for m in modules for d in owners.get(m, [m])}


def test_every_module_the_plugin_imports_is_a_declared_dependency():
    declared = _names(PROJECT["dependencies"])
    assert _distributions(_third_party_imports("kubectl_gpu")) <= declared


def test_the_webhook_server_stack_is_an_extra_the_plugin_does_not_install():
    base, webhook = _names(PROJECT["dependencies"]), _names(PROJECT["optional-dependencies"]["webhook"])
    assert {"prometheus-client", "cryptography"} <= webhook
    assert "aiohttp" in base  # the client's transport (kubectl_gpu/k8s/client.py)
    assert "orjson" in base  # the client's JSON too (kubectl_gpu/json_codec.py)
    assert not webhook & base
    assert _distributions(_third_party_imports("webhook")) <= base | webhook


def test_image_and_bootstrap_install_the_webhook_extra():
    assert "'.[webhook,test]'" in (REPO / "scripts" / "bootstrap").read_text()
    # The image installs from requirements-webhook.lock (scripts/lock-webhook-deps locks the extra).
    assert "-r requirements-webhook.lock" in (REPO / "Dockerfile").read_text()
    locked = _names([line.split(" ")[0] for line in (REPO / "requirements-webhook.lock").read_text().splitlines()
                     if "==" in line])
    assert _names(PROJECT["optional-dependencies"]["webhook"]) | _names(PROJECT["dependencies"]) <= locked


def test_the_only_executables_kubectl_takes_for_plugins_are_the_plugin_and_its_completion():
    """kubectl runs every executable on PATH named kubectl-* as a plugin (`kubectl plugin list`;
    kubectl_complete-* supplies its completion): a server named kubectl-gpu-webhook would show as
    the command `kubectl gpu webhook`, which it is not."""
    plugins = {name for name in PROJECT["scripts"] if name.startswith(("kubectl-", "kubectl_"))}
    assert plugins == {"kubectl-gpu", "kubectl_complete-gpu"}
    assert PROJECT["scripts"][WEBHOOK_SERVER] == "webhook.cli:main"
