"""The cluster profile says whether HAMi's DRA driver runs in the cluster (``publishes_hami``), which
`--target-driver auto` reads, from HAMi's fake published slices, in files (`kubectl get resourceslices -o yaml`)
or read live.  (HAMi's DeviceClass alone, and NVIDIA's objects: tests/test_core_hami_target.py.)"""

from __future__ import annotations

from pathlib import Path

import yaml

from kubectl_gpu.cluster import load_profile_files, read_live_profile
from kubectl_gpu.dra import hami
from kubectl_gpu.k8s import Client
from kubectl_gpu.k8s.rest import get_json
from tests.k8sdouble import K8sDouble

SLICES = Path(__file__).parent / "data" / "slices"
HAMI_NODE = SLICES / "hami-h100-node.yaml"


def named(path: Path) -> list[dict]:
    """The slices of ``path`` with the names the API server gives them."""
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    return [{**d, "metadata": {"name": d["metadata"]["generateName"] + "x7k2p"}} for d in docs]


def test_files_with_hamis_slices_say_its_driver_publishes():
    profile = load_profile_files([str(HAMI_NODE)])
    assert profile.publishes_hami
    assert [d.driver for d in profile.devices] == [hami.HAMI_DRIVER]


def test_a_live_cluster_publishing_hamis_slices_is_read_as_running_its_driver():
    with K8sDouble(kubernetes_version="1.34") as api:
        api.seed(*named(HAMI_NODE))
        client = Client(api.api_client().configuration)
        profile = read_live_profile(lambda path, query: get_json(client, path, query), "double")
    assert profile.publishes_hami
    # The slice proves DRAConsumableCapacity on (the API server drops allowMultipleAllocations while it is off).
    assert profile.gate("DRAConsumableCapacity")
    [device] = profile.shareable_devices(hami.HAMI_DRIVER)
    assert device.name == "hami-gpu-0"
