"""`-n NAMESPACE` picks what a fleet command moves, not what the cluster holds: the GPUs other
namespaces' pods and claims hold are still taken (the scheduler sees every namespace), so a plan
for one namespace never promises devices another namespace already has.  With kubectl's default
scope (the context's namespace), this is what `migrate --from-cluster` does without -A."""
from __future__ import annotations

from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from tests.fleet_cluster import device_class, node, pod, resource_slice, template, workload
from tests.k8sdouble import K8sDouble
from tests.test_fleet_plan import allocated_claim


def cluster() -> list[dict]:
    """One DRA node of 2 GPUs, both held by a claim of namespace `research`; namespace `ml` runs one
    single-GPU Deployment on a legacy node, and a bare legacy pod of `research` runs beside it."""
    train = template("train")
    deployment = workload("Deployment", "train", "ml", train, 1)
    other = template("notebook")
    return [node("dra-1", dra=True), resource_slice("dra-1", gpus=2), device_class(), node("legacy-1", gpus=4),
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "research"}},
            allocated_claim("native", "research", "dra-1", "gpu-0", "gpu-1"),
            deployment, pod("train-0", "ml", train, "legacy-1", deployment),
            pod("notebook", "research", other, "legacy-1")]


def run(api: K8sDouble, *args: str) -> str:
    result = CliRunner().invoke(main, list(args), env=api.kubectl_env(), catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return result.output


def test_one_namespaces_plan_counts_the_devices_other_namespaces_hold():
    with K8sDouble() as api:
        api.seed(*cluster())
        whole = run(api, "migrate", "--from-cluster", "-A")
        scoped = run(api, "migrate", "--from-cluster", "-n", "ml")
    assert "Deployment/ml/train: waits: its pods do not fit on the DRA nodes yet" in whole
    assert "Deployment/ml/train: waits: its pods do not fit on the DRA nodes yet" in scoped
    assert "would apply" not in scoped  # nothing moves into devices research holds


def test_one_namespaces_run_moves_only_its_own_bare_pods():
    with K8sDouble() as api:
        api.seed(*cluster())
        scoped = run(api, "migrate", "--from-cluster", "-n", "ml")
    assert "research" not in scoped.replace("reading", "")
