"""The webhook writes claims for HAMi's DRA driver where its configuration says so (translation.targetDriver
hami), or where the cluster publishes HAMi's slices or DeviceClass (auto): shares then ask for the cores and
memory HAMi-core enforces, and the claim is judged against HAMi's published GPUs."""

from __future__ import annotations

import jsonpatch

from kubectl_gpu.dra import facts, hami
from tests.conftest import admission_review, patch_of
from tests.k8sdouble import K8sDouble
from tests.test_core_hami_target import HAMI_CLASS
from tests.test_dra_hami import GIB, hami_device, slice_of
from tests.test_webhook_cluster_profile import H100_NODE, docs, gpu_pod

SHARE = {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "20000", "nvidia.com/gpucores": "30"}


def request_of(double: K8sDouble, response: dict, pod: dict) -> dict:
    assert response["allowed"] is True, response
    patched = jsonpatch.apply_patch(pod, patch_of(response))
    [entry] = patched["spec"]["resourceClaims"]
    stored = double.get("ResourceClaimTemplate", entry["resourceClaimTemplateName"], "default", version="v1")
    assert stored is not None
    [request] = stored["spec"]["spec"]["devices"]["requests"]
    return request["exactly"]


def test_auto_writes_hami_claims_where_the_cluster_publishes_hamis_gpus(webhook_on) -> None:
    pod = gpu_pod(SHARE)
    with K8sDouble() as double:
        double.seed(HAMI_CLASS, slice_of(hami.HAMI_DRIVER, [hami_device(0, "GPU-0", "NVIDIA A100-SXM4-80GB", 80 * GIB)]))
        response = webhook_on(double, translation={"targetDriver": "auto"}).review("/mutate", admission_review(pod))
        exactly = request_of(double, response, pod)
        assert exactly["deviceClassName"] == hami.HAMI_DEVICE_CLASS
        assert exactly["capacity"] == {"requests": {"cores": "30", "memory": "20000Mi"}}
        assert not any("no device in the cluster" in w for w in response.get("warnings", []))
    with K8sDouble() as double:
        double.seed(*docs(H100_NODE))
        response = webhook_on(double, translation={"targetDriver": "auto"}).review("/mutate", admission_review(pod))
        assert request_of(double, response, pod)["deviceClassName"] == facts.GPU_DEVICE_CLASS


def test_a_hami_claim_no_published_gpu_can_hold_is_warned(webhook_on) -> None:
    pod = gpu_pod({"nvidia.com/gpu": "1", "nvidia.com/gpumem": str(100 * 1024)})
    with K8sDouble() as double:
        double.seed(HAMI_CLASS, slice_of(hami.HAMI_DRIVER, [hami_device(0, "GPU-0", "NVIDIA A100-SXM4-80GB", 80 * GIB)]))
        response = webhook_on(double, translation={"targetDriver": "hami"}).review("/mutate", admission_review(pod))
        assert request_of(double, response, pod)["capacity"] == {"requests": {"cores": "0", "memory": "100Gi"}}
        assert any("no device in the cluster can satisfy ResourceClaimTemplate" in w for w in response["warnings"])
