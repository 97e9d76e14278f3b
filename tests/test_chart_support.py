"""Shared by the chart tests: run the real helm, render the chart, pick objects out of it.

No tests live here.  The helm binary is the one scripts/install-tools puts in .tools/bin (CI
runs scripts/bootstrap first); without it the chart tests are skipped with the reason.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Iterable, Mapping

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
CHART = REPO / "charts" / "kubectl-gpu-webhook"
VALUE_SETS_DIR = REPO / "tests" / "chart_values"
VALUE_SETS = tuple(sorted(p.name for p in VALUE_SETS_DIR.glob("*.yaml")))
RELEASE = "gpu"
NAMESPACE = "gpu-system"
FULLNAME = f"{RELEASE}-kubectl-gpu-webhook"
KUBERNETES_VERSIONS = ("1.34", "1.35")
# Kinds whose schemas live in CRDs (cert-manager, prometheus-operator), not in Kubernetes'
# OpenAPI: kubernetes-validate has no schema for them, so they are checked field by field instead.
CRD_KINDS = frozenset({"Certificate", "Issuer", "ServiceMonitor"})


def helm_binary() -> str | None:
    local = REPO / ".tools" / "bin" / "helm"
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    return shutil.which("helm")


needs_helm = pytest.mark.skipif(
    helm_binary() is None,
    reason="helm is not installed: run scripts/bootstrap (scripts/install-tools puts it in .tools/bin)",
)


class HelmError(Exception):
    def __init__(self, args: Iterable[str], stderr: str) -> None:
        super().__init__(f"helm {' '.join(args)} failed:\n{stderr}")
        self.stderr = stderr


def helm(*args: str, env: Mapping[str, str] | None = None, timeout: float = 120) -> str:
    binary = helm_binary()
    if binary is None:
        pytest.skip("helm is not installed: run scripts/bootstrap")
    base = dict(os.environ if env is None else env)
    # Keep helm away from the developer's own repositories, caches and kube context.
    home = REPO / ".tools" / "helm-home"
    base.setdefault("HELM_CACHE_HOME", str(home / "cache"))
    base.setdefault("HELM_CONFIG_HOME", str(home / "config"))
    base.setdefault("HELM_DATA_HOME", str(home / "data"))
    done = subprocess.run([binary, *args], capture_output=True, text=True, env=base, timeout=timeout)
    if done.returncode != 0:
        raise HelmError(args, done.stderr)
    return done.stdout


def value_args(value_set: str | None, sets: Mapping[str, str] | None = None) -> list[str]:
    args: list[str] = []
    if value_set:
        args += ["-f", str(VALUE_SETS_DIR / value_set)]
    for key, value in (sets or {}).items():
        args += ["--set", f"{key}={value}"]
    return args


def template(value_set: str | None = None, sets: Mapping[str, str] | None = None, *extra: str) -> list[dict[str, Any]]:
    """`helm template` of the chart, as parsed objects (a fresh list each call)."""
    out = helm("template", RELEASE, str(CHART), "--namespace", NAMESPACE, *value_args(value_set, sets), *extra)
    return [doc for doc in yaml.safe_load_all(out) if doc]


@functools.lru_cache(maxsize=None)
def _rendered(value_set: str | None) -> tuple[str, ...]:
    out = helm("template", RELEASE, str(CHART), "--namespace", NAMESPACE, *value_args(value_set))
    return tuple(yaml.safe_dump(doc) for doc in yaml.safe_load_all(out) if doc)


def rendered(value_set: str | None = None) -> list[dict[str, Any]]:
    """Like template() for a value set file, rendered once per test process."""
    return [yaml.safe_load(text) for text in _rendered(value_set)]


def values_of(value_set: str | None) -> dict[str, Any]:
    """The chart defaults merged with a value set, as helm merges them (maps deep, lists replaced)."""
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    if value_set is None:
        return defaults
    return _merge(defaults, yaml.safe_load((VALUE_SETS_DIR / value_set).read_text()) or {})


def _merge(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            out[key] = _merge(base[key], value)
        else:
            out[key] = value
    return out


def find(docs: Iterable[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [d for d in docs if d.get("kind") == kind and (name is None or d["metadata"]["name"] == name)]
    if len(found) != 1:
        raise AssertionError(f"expected one {kind} {name or ''}, found {len(found)}")
    return found[0]


def find_all(docs: Iterable[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d.get("kind") == kind]


def kinds(docs: Iterable[dict[str, Any]]) -> set[str]:
    return {d["kind"] for d in docs}


def webhook_entries(docs: Iterable[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    """The webhooks of the Mutating/ValidatingWebhookConfiguration, by name."""
    return {w["name"]: w for w in find(docs, kind)["webhooks"]}


def config_file(docs: Iterable[dict[str, Any]]) -> str:
    """The server's config file as the chart renders it into the ConfigMap."""
    return find(docs, "ConfigMap", FULLNAME)["data"]["config.yaml"]
