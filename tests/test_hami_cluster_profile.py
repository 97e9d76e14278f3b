"""The cluster profile says whether HAMi's DRA driver runs in the cluster (``publishes_hami``), which
`--target-driver auto` reads: a current ResourceSlice of hami-core-gpu.project-hami.io, or HAMi's DeviceClass
(its chart installs it: chart/hami-dra-driver/templates/deviceclass-hami-gpu.yaml at ebeaad97), from files
(`kubectl get resourceslices,deviceclasses -o yaml`) or read live."""

from __future__ import annotations

from pathlib import Path

import yaml

from kubectl_gpu.cluster import build_profile, load_profile_files, read_live_profile
from kubectl_gpu.dra import hami
from kubectl_gpu.k8s import Client
from kubectl_gpu.k8s.rest import get_json
from tests import builders as b
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


def test_hamis_device_class_alone_says_its_driver_is_installed():
    device_class = b.device_class(hami.HAMI_DEVICE_CLASS, hami.HAMI_DEVICE_CLASS_SELECTOR)
    assert build_profile("files", objects=[device_class]).publishes_hami


def test_nvidias_slices_and_classes_say_nothing_of_hami():
    profile = load_profile_files([str(SLICES / "nvidia-h100-node.yaml"), str(SLICES / "nvidia-consumable-memory.yaml")])
    assert profile.devices and not profile.publishes_hami
    assert not build_profile("files", objects=b.nvidia_device_classes()).publishes_hami


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
