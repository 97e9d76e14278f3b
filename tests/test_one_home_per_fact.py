"""A fact kubectl-gpu keeps in one table is not spelled again in the product: the DeviceClass
names of NVIDIA's driver and the resource.k8s.io versions live in kubectl_gpu/dra/facts.py, and a
module that needs one imports it (adding a version or a class is then one edit).  Upstream class
names: deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-*.yaml
(kubernetes-sigs/dra-driver-nvidia-gpu)."""

from __future__ import annotations

import ast
from pathlib import Path

from kubectl_gpu.dra import facts

ROOT = Path(__file__).resolve().parent.parent
HOME = ROOT / "kubectl_gpu" / "dra" / "facts.py"

DEVICE_CLASSES = {facts.GPU_DEVICE_CLASS, facts.MIG_DEVICE_CLASS, facts.VFIO_DEVICE_CLASS, facts.TPU_DEVICE_CLASS,
                  *facts.COMPUTE_DOMAIN_DEVICE_CLASSES}


def _string_constants(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)}
    return {node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings}


def _spelled_outside_home(values: set[str]) -> dict[str, set[str]]:
    found = {}
    for package in ("kubectl_gpu", "webhook"):
        for path in (ROOT / package).rglob("*.py"):
            if path != HOME and (hits := _string_constants(path) & values):
                found[str(path.relative_to(ROOT))] = hits
    return found


def test_the_device_class_names_are_the_drivers():
    assert facts.GPU_DEVICE_CLASS == "gpu.nvidia.com"
    assert facts.MIG_DEVICE_CLASS == "mig.nvidia.com"
    assert facts.VFIO_DEVICE_CLASS == "vfio.gpu.nvidia.com"
    assert set(facts.DEVICE_CLASS_OF_TYPE.values()) == set(facts.GPU_ALLOCATING_DEVICE_CLASSES)


def test_device_class_names_are_spelled_only_in_the_facts():
    # "gpu.nvidia.com" is also the driver's name: that too is spelled once (NVIDIA_DRIVER).
    assert _spelled_outside_home(DEVICE_CLASSES) == {}


def test_resource_k8s_io_versions_are_spelled_only_in_the_facts():
    versions = {v.name for v in facts.DRA_API_VERSIONS}
    # Bare "v1" is every group's GA version (Pods, apps/v1...): only the group-qualified one counts.
    bare = versions - {"v1"}
    assert _spelled_outside_home(bare | {f"{facts.DRA_GROUP}/{v}" for v in versions}) == {}


def test_no_other_module_quotes_a_beta_version_even_in_its_prose():
    """A quoted "v1beta1" in a docstring reads as a fact too, and goes stale the same way."""
    import re

    quoted = re.compile(r"[\"']v1beta[12][\"']")
    found = [str(p.relative_to(ROOT)) for package in ("kubectl_gpu", "webhook") for p in (ROOT / package).rglob("*.py")
             if p != HOME and quoted.search(p.read_text(encoding="utf-8"))]
    assert found == []


def test_the_device_plugins_gpu_resource_is_spelled_only_in_the_facts():
    """`nvidia.com/gpu` (NVIDIA's device plugin: a whole GPU; HAMi's plugin advertises its vGPUs
    under the same name) and Kubernetes' older `alpha.kubernetes.io/nvidia-gpu` are read, counted
    and kept in a dozen places: each imports the one spelling."""
    assert (facts.DEVICE_PLUGIN_GPU, facts.ALPHA_NVIDIA_GPU) == ("nvidia.com/gpu", "alpha.kubernetes.io/nvidia-gpu")
    assert _spelled_outside_home({facts.DEVICE_PLUGIN_GPU, facts.ALPHA_NVIDIA_GPU}) == {}
