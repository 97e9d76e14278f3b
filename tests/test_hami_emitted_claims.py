"""Every claim the translation emits for HAMi's DRA driver (--target-driver auto over a cluster that publishes
HAMi's slices) is allocatable on the fake HAMi nodes, and never on a GPU without the cores or memory it asks for:
judged by Kubernetes' structured allocator through explain, as the scheduler would judge it."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from kubectl_gpu.cluster import load_profile_files
from kubectl_gpu.cluster.fit import fit_options
from kubectl_gpu.core import TargetDriver, TranslateOptions, translate_pod_template
from kubectl_gpu.dra import hami
from kubectl_gpu.dra.quantity import format_bytes, parse_quantity
from kubectl_gpu.explain import explain_objects
from tests.test_hami_allocation import holding

SLICES = Path(__file__).parent / "data" / "slices"
NODES = [SLICES / f"hami-{gpu}-node.yaml" for gpu in ("a100", "h100", "h200")]

# One container's legacy requests per fractional family, and whole GPUs.
LEGACY = {
    "hami": {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "4000", "nvidia.com/gpucores": "30"},
    "hami-percentage": {"nvidia.com/gpu": "1", "nvidia.com/gpumem-percentage": "50", "nvidia.com/gpucores": "20"},
    "gpu-manager": {"tencent.com/vcuda-core": "50", "tencent.com/vcuda-memory": "20"},
    "aliyun": {"aliyun.com/gpu-mem": "8"},
    "volcano": {"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory": "4096", "volcano.sh/vgpu-cores": "25"},
    "whole": {"nvidia.com/gpu": "1"},
}


def slices(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def emitted(node: Path, limits: dict[str, str]) -> list[dict]:
    """The claim templates migrate writes for a pod with ``limits``, fitted to the node's cluster."""
    fitted = fit_options(TranslateOptions(target_driver=TargetDriver.AUTO), load_profile_files([str(node)]),
                         api_version_given=False)
    assert fitted.options.target_driver is TargetDriver.HAMI, fitted.notes
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "main", "resources": {"limits": limits}}]}}
    result = translate_pod_template(pod, fitted.options)
    assert not result.errors and result.claims, result.notes
    return [claim.manifest("ml") for claim in result.claims]


def capacity_requests(template: dict) -> dict[str, str]:
    [request] = template["spec"]["spec"]["devices"]["requests"]
    return (request["exactly"].get("capacity") or {}).get("requests") or {}


def allocatable(template: dict, node_slices: list[dict], held: list[dict] = ()) -> bool:
    [item] = explain_objects([template], node_slices, (), list(held)).items
    return item.allocatable


def with_capacity(node_slices: list[dict], name: str, amount: int) -> list[dict]:
    """The node's GPU as if ``name`` held ``amount`` in all (its request policy's default and maximum too)."""
    changed = copy.deepcopy(node_slices)
    capacity = changed[0]["spec"]["devices"][0]["capacity"][name]
    text = format_bytes(amount) if name == hami.MEMORY.name else str(amount)
    capacity["value"] = capacity["requestPolicy"]["default"] = capacity["requestPolicy"]["validRange"]["max"] = text
    return changed


def held_as(template: dict, name: str, node_slices: list[dict]) -> dict:
    """A pod's claim from ``template``, allocated on the node's GPU (tests.test_hami_allocation.holding)."""
    claim_obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                 "metadata": {"namespace": "ml", "name": name}, "spec": template["spec"]["spec"]}
    return holding(claim_obj, node_slices[0]["spec"]["pool"]["name"])


@pytest.mark.parametrize("node", NODES, ids=lambda p: p.stem)
@pytest.mark.parametrize("family", LEGACY)
def test_every_emitted_claim_is_allocatable_on_each_fake_hami_node(family, node):
    for template in emitted(node, LEGACY[family]):
        assert allocatable(template, slices(node)), (family, template)


@pytest.mark.parametrize("family", [f for f in LEGACY if f != "whole"])
def test_a_share_is_allocatable_exactly_while_the_gpu_has_what_it_asks_for(family):
    node = slices(NODES[1])
    [template] = emitted(NODES[1], LEGACY[family])
    asked = capacity_requests(template)
    assert set(asked) == {hami.CORES.name, hami.MEMORY.name}
    for name, text in asked.items():
        amount = int(parse_quantity(text))
        if amount == 0:
            continue  # cores 0: HAMi-core limits nothing, and nothing is consumed
        step = next(c.step for c in hami.CAPACITIES if c.name == name)
        assert allocatable(template, with_capacity(node, name, amount)), (name, text)
        assert not allocatable(template, with_capacity(node, name, amount - step)), (name, text)


def test_a_whole_gpu_is_never_allocatable_beside_any_share():
    """A whole GPU asks for no capacity, so it consumes the policies' defaults: all cores and memory."""
    node = slices(NODES[1])
    [template] = emitted(NODES[1], LEGACY["whole"])
    assert capacity_requests(template) == {}
    assert allocatable(template, node)
    [share] = emitted(NODES[1], LEGACY["hami"])
    assert not allocatable(template, node, [held_as(share, "other", node)])


def test_shares_of_one_family_fill_one_gpu_until_its_memory_runs_out():
    """ACK's 8 GiB shares on the H100's 81559Mi: nine fit beside each other, a tenth does not."""
    node = slices(NODES[1])
    [template] = emitted(NODES[1], LEGACY["aliyun"])
    held: list[dict] = []
    for n in range(20):  # bounded: more than any GPU here holds
        if not allocatable(template, node, held):
            break
        held.append(held_as(template, f"share-{n}", node))
    assert len(held) == 9


def test_preview_migrate_and_explain_a_node_moving_to_hamis_driver(tmp_path):
    """The whole story at the command line: preview the node's HAMi slice from its NVML recording, migrate a
    gpu-manager workload with --target-driver auto against it, and explain the claim on the preview: it fits."""
    from click.testing import CliRunner

    from kubectl_gpu.cli.main import main
    from tests.hami_slices import NODES as HAMI_NODES, recording_with_sysfs

    def run(*args: str):
        result = CliRunner().invoke(main, list(args), catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result

    preview = run("inventory", "--target-driver", "hami", "--nvml-recording",
                  str(recording_with_sysfs(HAMI_NODES[1], tmp_path)), "--node-name", "node-1", "-o", "yaml")
    (tmp_path / "slices.yaml").write_text(preview.stdout)
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "ml"},
                  "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
                      "metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{
                          "name": "infer", "image": "x", "resources": {"limits": LEGACY["gpu-manager"]}}]}}}}
    (tmp_path / "web.yaml").write_text(yaml.safe_dump(deployment))
    migrated = run("migrate", str(tmp_path / "web.yaml"), "--target-driver", "auto",
                   "--cluster", str(tmp_path / "slices.yaml"))
    (tmp_path / "out.yaml").write_text(migrated.stdout)
    explained = run("explain", "-f", str(tmp_path / "out.yaml"), "--slices", str(tmp_path / "slices.yaml"), "-o", "json")
    [item] = json.loads(explained.stdout)["items"]
    assert item["kind"] == "ResourceClaimTemplate" and item["allocatable"] is True and item["node"] == "node-1"
