"""The bundled examples/ (what `scripts/demo` migrates) do what their header comments tell a reader.

Each test names the example and asserts the comment's claim on what `kubectl gpu migrate` writes
for it, so an example whose comment stops being true fails here instead of misleading a user.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubectl_gpu.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@dataclass(frozen=True)
class Migrated:
    exit_code: int
    objects: tuple[dict[str, Any], ...]
    text: str
    report: str

    def one(self, kind: str) -> dict[str, Any]:
        [found] = [o for o in self.objects if o["kind"] == kind]
        return found

    def request(self, kind: str = "ResourceClaimTemplate") -> dict[str, Any]:
        claim = self.one(kind)
        spec = claim["spec"]["spec"] if kind == "ResourceClaimTemplate" else claim["spec"]
        [request] = spec["devices"]["requests"]
        return request["exactly"]


SHAREABLE_GPUS = str(Path(__file__).parent / "data" / "slices" / "nvidia-consumable-memory.yaml")


@cache
def migrate(example: str, *options: str, text: str | None = None) -> Migrated:
    args = ["migrate", *options, "-" if text is not None else str(EXAMPLES / example)]
    result = CliRunner().invoke(main, args, input=text)
    objects = tuple(d for d in yaml.safe_load_all(result.stdout) if d is not None)
    return Migrated(result.exit_code, objects, result.stdout, result.stderr)


def pod_spec(workload: dict[str, Any]) -> dict[str, Any]:
    return workload["spec"] if workload["kind"] == "Pod" else workload["spec"]["template"]["spec"]


def test_every_example_migrates_cleanly_and_each_is_tested_here() -> None:
    tested = {"nvidia-gpu-deployment.yaml", "fractional-gpu.yaml", "gfd-node-selector.yaml",
              "hami-deployment.yaml", "mig-job.yaml", "tpu-job.yaml", "vcuda-pod.yaml", "ack-gpushare.yaml"}
    assert {p.name for p in EXAMPLES.iterdir()} == tested
    for name in sorted(tested):
        assert migrate(name).exit_code == 0, (name, migrate(name).report)


def test_whole_gpus_get_one_claim_template_before_the_deployment_and_the_service_is_untouched() -> None:
    m = migrate("nvidia-gpu-deployment.yaml")
    assert [o["kind"] for o in m.objects] == ["ResourceClaimTemplate", "Deployment", "Service"]
    assert m.request() == {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 1}
    [container] = pod_spec(m.one("Deployment"))["containers"]
    assert "nvidia.com/gpu" not in container["resources"]["limits"]
    assert container["resources"]["claims"] == [{"name": "server-gpu"}]
    service = (EXAMPLES / "nvidia-gpu-deployment.yaml").read_text().split("---\n")[1]
    assert m.text.endswith("---\n" + service)


def test_half_a_gpu_the_report_says_what_the_pods_really_get() -> None:
    m = migrate("fractional-gpu.yaml")  # --sharing auto, and no cluster profile says a GPU can be shared
    assert "gets 1 whole GPU(s) instead of 0.5 of a GPU" in m.report and "--cluster" in m.report
    assert "capacity" not in m.request()
    consumable = migrate("fractional-gpu.yaml", "--sharing", "consumable")
    assert "gets 1 whole GPU(s) instead of 0.5 of a GPU" in consumable.report and "--gpu-memory" in consumable.report


def test_half_a_gpu_alternatives_named_in_the_comment() -> None:
    mps = migrate("fractional-gpu.yaml", "--sharing", "mps")
    assert mps.one("ResourceClaim")["spec"]["devices"]["config"][0]["opaque"]["parameters"]["sharing"][
        "strategy"] == "MPS"
    assert migrate("fractional-gpu.yaml", "--sharing", "consumable", "--gpu-memory", "80Gi").request()["capacity"] == {
        "requests": {"memory": "40Gi"}}


def test_gpu_feature_discovery_node_selector_becomes_a_product_name_selector_and_is_recorded() -> None:
    m = migrate("gfd-node-selector.yaml")
    [selector] = m.request()["selectors"]
    assert "productName" in selector["cel"]["expression"] and "H100-80GB-HBM3" in selector["cel"]["expression"]
    pod = m.one("Pod")
    assert "nodeSelector" not in pod["spec"]
    assert '"nodeSelector":{"nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3"}' in pod["metadata"]["annotations"][
        "kubectl-gpu.io/original-resources"]


def test_hami_memory_becomes_consumable_capacity_and_the_card_type_a_selector() -> None:
    m = migrate("hami-deployment.yaml", "--sharing", "consumable")
    request = m.request()
    assert request["capacity"] == {"requests": {"memory": "3000Mi"}}
    [selector] = request["selectors"]
    assert "productName" in selector["cel"]["expression"] and '"A100"' in selector["cel"]["expression"]
    assert "compute limit 30% is not enforced" in m.report


def test_mig_profile_becomes_a_mig_class_claim_selecting_the_profile() -> None:
    request = migrate("mig-job.yaml").request()
    assert request["deviceClassName"] == "mig.nvidia.com"
    [selector] = request["selectors"]
    assert 'profile == "1g.10gb"' in selector["cel"]["expression"]


def test_tpu_becomes_a_tpu_class_claim_and_the_gke_node_selectors_stay() -> None:
    m = migrate("tpu-job.yaml")
    assert m.request()["deviceClassName"] == "tpu.google.com" and m.request()["count"] == 4
    assert pod_spec(m.one("Job"))["nodeSelector"] == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice", "cloud.google.com/gke-tpu-topology": "2x2"}


def test_vcuda_share_becomes_4gi_of_one_gpu_and_150_cores_is_an_error_naming_the_valid_values() -> None:
    # --sharing auto against a cluster whose GPUs advertise consumable memory gives memory shares.
    assert migrate("vcuda-pod.yaml", "--cluster", SHAREABLE_GPUS).request()["capacity"] == {
        "requests": {"memory": "4Gi"}}
    text = (EXAMPLES / "vcuda-pod.yaml").read_text().replace("vcuda-core: 50", "vcuda-core: 150")
    bad = migrate("vcuda-pod.yaml", text=text)
    assert bad.exit_code == 3
    assert "use a value below 100" in bad.report and "a multiple of 100" in bad.report


def test_ack_gpushare_counts_gib_unless_told_mib() -> None:
    assert migrate("ack-gpushare.yaml", "--cluster", SHAREABLE_GPUS).request()["capacity"] == {
        "requests": {"memory": "4Gi"}}
    assert migrate("ack-gpushare.yaml", "--sharing", "consumable", "--aliyun-memory-unit", "MiB").request()["capacity"] == {
        "requests": {"memory": "4Mi"}}
