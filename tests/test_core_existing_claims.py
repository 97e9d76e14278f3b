"""A legacy GPU beside a GPU claim in one container: refused by the core, so migrate and the
webhook give the same verdict in the same words.

Upstream facts the tests are built on:
* kubernetes-sigs/dra-driver-nvidia-gpu deployments/helm/dra-driver-nvidia-gpu/templates/
  deviceclass-{gpu,mig,vfio-gpu}.yaml: the classes whose devices are GPUs; demo/specs/
  extended-resources/mig-1g-12gb.yaml names a per-profile class `mig-1g-12gb.gpu.nvidia.com`.
* The same chart's deviceclass-compute-domain-{daemon,default-channel}.yaml and
  cmd/compute-domain-controller/computedomain.go: IMEX channels and daemons, not GPUs;
  cmd/compute-domain-controller/resourceclaimtemplate.go: a ComputeDomain makes the
  ResourceClaimTemplate named in spec.channel.resourceClaimTemplate.name, in its namespace, with
  the class compute-domain-default-channel.nvidia.com.
* GoogleCloudPlatform/container-engine-accelerators gpudirect-rdma/nccl-test-a4x-max-jobset.yaml
  (in ../shared/corpus): whole GPUs through the device plugin beside an IMEX channel and RDMA NICs
  through DRA claims, the pattern that must keep working.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from kubectl_gpu.core import (IntegerGpuMode, KnownClaim, Severity, TranslateOptions, claim_spec_requests_gpus,
                              gpus_asked_twice, known_claims, translate_pod_template)
from kubectl_gpu.dra.facts import allocates_gpus, selects_nvidia_gpus
from tests.corpus import corpus_file, requires_corpus

DATA = Path(__file__).parent / "data" / "manifests"


def claim_template(name: str, device_class: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name},
            "spec": {"spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": device_class}}]}}}}


def pod(claim_entry: dict, legacy: dict | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"resourceClaims": [claim_entry],
                     "containers": [{"name": "main", "image": "cuda", "resources": {
                         "limits": legacy if legacy is not None else {"nvidia.com/gpu": 1},
                         "claims": [{"name": claim_entry["name"]}]}}]}}


def migrate(*documents: dict):
    text = yaml.safe_dump_all(documents, sort_keys=False)
    return CliRunner().invoke(main, ["migrate", "-"], input=text)


@pytest.mark.parametrize("device_class, gpus", [
    ("gpu.nvidia.com", True), ("mig.nvidia.com", True), ("vfio.gpu.nvidia.com", True),
    ("mig-1g-12gb.gpu.nvidia.com", True),
    ("compute-domain-default-channel.nvidia.com", False), ("compute-domain-channel.nvidia.com", False),
    ("compute-domain-daemon.nvidia.com", False), ("mrdma.google.com", False), ("tpu.google.com", False),
])
def test_which_device_classes_allocate_gpus(device_class: str, gpus: bool) -> None:
    assert allocates_gpus(device_class) is gpus


def device_class(name: str, *expressions: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": e}} for e in expressions]}}


TARGETED = device_class(  # the kueue-operator e2e test's class, one GPU by UUID
    "gpu-targeted.nvidia.com",
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].uuid == 'GPU-4a1c'")


@pytest.mark.parametrize("cls, gpus", [
    (TARGETED, True),
    (device_class("gpu-vfio.nvidia.com",
                  "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'vfio'"), True),
    (device_class("h100", 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"'), True),
    (device_class("big", "device.driver=='gpu.nvidia.com'", "device.capacity['gpu.nvidia.com'].memory.compareTo("
                  "quantity('40Gi')) >= 0"), True),
    (device_class("imex", "device.driver == 'compute-domain.nvidia.com' && "
                  "device.attributes['compute-domain.nvidia.com'].type == 'channel'"), False),
    (device_class("rdma", "device.driver == 'dra.net'"), False),
    (device_class("example", "device.driver == 'gpu.example.com'"), False),
    (device_class("no-selectors"), False),
])
def test_a_device_class_under_any_name_is_a_gpu_class_when_its_selectors_select_the_drivers_gpus(
        cls: dict, gpus: bool) -> None:
    """The driver publishes GPUs, MIG devices and vfio GPUs under its driver name gpu.nvidia.com, which
    is also their attribute domain: a selector that requires either selects only those devices.  A
    class without selectors is not counted (nothing says it is meant for GPUs)."""
    assert selects_nvidia_gpus(cls) is gpus


def test_migrate_refuses_a_legacy_gpu_beside_a_claim_of_a_custom_gpu_class_in_the_input() -> None:
    result = migrate(TARGETED, claim_template("pinned", "gpu-targeted.nvidia.com"),
                     pod({"name": "g", "resourceClaimTemplateName": "pinned"}))
    assert result.exit_code == 3, result.stderr
    assert "asks for GPUs twice, by nvidia.com/gpu and by ResourceClaim 'g'" in result.stderr
    assert "class gpu-targeted.nvidia.com" in result.stderr


def test_a_custom_class_that_selects_no_gpu_keeps_its_claim_beside_a_legacy_gpu() -> None:
    rdma = device_class("rdma", "device.driver == 'dra.net'")
    result = migrate(rdma, claim_template("nic", "rdma"), pod({"name": "n", "resourceClaimTemplateName": "nic"}))
    assert result.exit_code == 0, result.stderr
    assert "asks for GPUs twice" not in result.stderr


@pytest.mark.parametrize("claim_spec", [
    {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}},
    {"devices": {"requests": [{"name": "g", "deviceClassName": "mig.nvidia.com", "count": 2}]}},  # v1beta1
    {"devices": {"requests": [{"name": "g", "firstAvailable": [
        {"name": "small", "deviceClassName": "compute-domain-default-channel.nvidia.com"},
        {"name": "big", "deviceClassName": "gpu.nvidia.com"}]}]}},
])
def test_claims_for_nvidia_gpu_classes_are_gpu_claims_in_every_shape(claim_spec: dict) -> None:
    assert claim_spec_requests_gpus(claim_spec)


def test_migrate_refuses_a_legacy_gpu_beside_a_gpu_claim_of_the_same_input() -> None:
    result = migrate(claim_template("one-gpu", "gpu.nvidia.com"),
                     pod({"name": "g", "resourceClaimTemplateName": "one-gpu"}))
    assert result.exit_code == 3
    assert "container 'main': asks for GPUs twice, by nvidia.com/gpu and by ResourceClaim 'g'" in result.stderr
    assert "keep only the claim" in result.stderr
    [_, migrated] = list(yaml.safe_load_all(result.stdout))
    assert migrated["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 1}, "left as written"


def test_a_shared_resource_claim_in_the_input_counts_too() -> None:
    claim = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim", "metadata": {"name": "shared"},
             "spec": {"devices": {"requests": [{"name": "g", "deviceClassName": "mig.nvidia.com"}]}}}
    translation = translate_pod_template(pod({"name": "s", "resourceClaimName": "shared"}),
                                         TranslateOptions(known_claims=known_claims(claim)))
    assert not translation.patch
    assert [n.severity for n in translation.errors] == [Severity.ERROR]


def test_a_legacy_gpu_beside_the_channel_template_of_a_compute_domain_in_the_input_is_rewritten() -> None:
    compute_domain = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
                      "metadata": {"name": "cd"},
                      "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": "cd-channel"}}}}
    result = migrate(compute_domain, pod({"name": "ch", "resourceClaimTemplateName": "cd-channel"}))
    assert result.exit_code == 0, result.stderr
    assert "asks for GPUs twice" not in result.stderr and "not checked" not in result.stderr
    migrated = [d for d in yaml.safe_load_all(result.stdout) if d["kind"] == "Pod"][0]
    assert migrated["spec"]["containers"][0]["resources"]["claims"][0] == {"name": "ch"}
    assert len(migrated["spec"]["resourceClaims"]) == 2


def test_a_claim_not_in_the_input_is_rewritten_beside_with_a_warning_naming_it() -> None:
    """tests/data's A4X-style JobSet carries the RDMA template but not the ComputeDomain."""
    result = CliRunner().invoke(main, ["migrate", str(DATA / "gpu-beside-dra-claims-jobset.yaml")])
    assert result.exit_code == 0, result.stderr
    assert "claim 'compute-domain-channel' (ResourceClaimTemplate compute-domain-channel)" in result.stderr
    assert "'rdma'" not in result.stderr, "the RDMA template is in the input: checked, no GPU"


@requires_corpus
def test_the_a4x_jobset_of_the_corpus_is_rewritten_without_doubt() -> None:
    path = corpus_file("legacy", "GoogleCloudPlatform__container-engine-accelerators__gpudirect-rdma_nccl-test-a4x-max-jobset.yaml")
    result = CliRunner().invoke(main, ["migrate", str(path)])
    assert result.exit_code == 0, result.stderr
    assert "asks for GPUs twice" not in result.stderr and "not checked" not in result.stderr


def test_a_whole_gpu_the_scheduler_serves_from_dra_is_not_a_device_plugin_request() -> None:
    """KEP-5004: with a DeviceClass extendedResourceName the scheduler serves nvidia.com/gpu from DRA
    devices, so no device plugin hands out the same GPU."""
    template = pod({"name": "g", "resourceClaimTemplateName": "one-gpu"})
    known = known_claims(claim_template("one-gpu", "gpu.nvidia.com"))
    assert gpus_asked_twice(template, known, TranslateOptions(integer_gpus=IntegerGpuMode.EXTENDED_RESOURCE)) == ()
    assert gpus_asked_twice(template, known, TranslateOptions())


def test_a_mig_profile_the_clusters_own_class_serves_from_dra_is_not_a_device_plugin_request() -> None:
    """KEP-5004 for any extended resource: a cluster DeviceClass with extendedResourceName
    nvidia.com/mig-1g.10gb (the driver's demo/specs/extended-resources/mig-1g-12gb.yaml shape)
    has the scheduler serve it from DRA devices, so it is not asked twice beside a GPU claim."""
    template = pod({"name": "g", "resourceClaimTemplateName": "one-gpu"}, {"nvidia.com/mig-1g.10gb": 1})
    known = known_claims(claim_template("one-gpu", "gpu.nvidia.com"))
    served = TranslateOptions(dra_extended_resources=frozenset({"nvidia.com/mig-1g.10gb"}))
    assert gpus_asked_twice(template, known, served) == ()
    assert gpus_asked_twice(template, known, TranslateOptions())


def test_zero_legacy_quantities_and_tpus_are_not_gpu_requests() -> None:
    known = (KnownClaim("ResourceClaimTemplate", "one-gpu", frozenset({"gpu.nvidia.com"})),)
    entry = {"name": "g", "resourceClaimTemplateName": "one-gpu"}
    assert gpus_asked_twice(pod(entry, {"nvidia.com/gpu": 0}), known) == ()
    assert gpus_asked_twice(pod(entry, {"google.com/tpu": 4}), known) == ()


def test_translating_the_output_again_changes_nothing() -> None:
    compute_domain = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain", "metadata": {"name": "cd"},
                      "spec": {"channel": {"resourceClaimTemplate": {"name": "cd-channel"}}}}
    first = migrate(compute_domain, pod({"name": "ch", "resourceClaimTemplateName": "cd-channel"}))
    again = CliRunner().invoke(main, ["migrate", "-"], input=first.stdout)
    assert again.exit_code == 0 and again.stdout == first.stdout


def test_the_webhook_denies_with_the_words_migrate_uses(start_webhook, k8s_double) -> None:
    from tests.conftest import admission_review

    template = claim_template("one-gpu", "gpu.nvidia.com")
    k8s_double.seed({**template, "metadata": {"name": "one-gpu", "namespace": "default"}})
    legacy_pod = pod({"name": "g", "resourceClaimTemplateName": "one-gpu"})
    legacy_pod["metadata"]["namespace"] = "default"
    refused = migrate(template, legacy_pod)
    [reason] = [n.render() for n in translate_pod_template(
        legacy_pod, TranslateOptions(known_claims=known_claims(template))).errors]
    assert reason in refused.stderr
    hook = start_webhook()
    for path in ("/mutate", "/validate"):
        response = hook.review(path, admission_review(legacy_pod))
        assert response["allowed"] is False and response["status"]["code"] == 403
        message = response["status"]["message"]
        if path == "/mutate":
            assert message == "kubectl-gpu: " + reason
        else:  # /validate sees it unrewritten and so unfenced too: that reason comes after the same words
            assert message.startswith("kubectl-gpu: " + reason + "; nothing keeps this pod off DRA nodes")


def test_migrate_from_cluster_checks_the_claims_the_cluster_holds() -> None:
    """The templates a pod names may live only in the cluster (a ComputeDomain's channel template is
    made there by its controller): with --from-cluster they are read and judged like the input's."""
    from tests.k8sdouble import K8sDouble

    gpu = {**claim_template("one-gpu", "gpu.nvidia.com"), "metadata": {"name": "one-gpu", "namespace": "default"}}
    channel = {**claim_template("cd-channel", "compute-domain-default-channel.nvidia.com"),
               "metadata": {"name": "cd-channel", "namespace": "default"}}
    from tests import builders as b

    with K8sDouble() as api:
        api.seed(gpu, channel, b.dra_node("dra-a"), *b.nvidia_device_classes(), b.gpu_slice("dra-a", 2))
        env = {"KUBECONFIG": api.kubeconfig_path()}
        twice = CliRunner(env=env).invoke(main, ["migrate", "--from-cluster", "-"], input=yaml.safe_dump(
            pod({"name": "g", "resourceClaimTemplateName": "one-gpu"})))
        imex = CliRunner(env=env).invoke(main, ["migrate", "--from-cluster", "-"], input=yaml.safe_dump(
            pod({"name": "ch", "resourceClaimTemplateName": "cd-channel"})))
    assert twice.exit_code == 3 and "asks for GPUs twice" in twice.stderr, twice.stderr
    assert imex.exit_code == 0 and "not checked" not in imex.stderr, imex.stderr


def test_migrate_cluster_and_the_webhook_know_the_clusters_custom_gpu_classes(webhook_on) -> None:
    """A class made in the cluster (not in the input) is read from it: migrate --from-cluster, and
    the webhook's /validate and /mutate, which judge pods with the options fitted to the cluster."""
    from tests import builders as b
    from tests.conftest import admission_review
    from tests.k8sdouble import K8sDouble

    template = {**claim_template("pinned", "gpu-targeted.nvidia.com"),
                "metadata": {"name": "pinned", "namespace": "default"}}
    legacy_pod = pod({"name": "g", "resourceClaimTemplateName": "pinned"})
    legacy_pod["metadata"]["namespace"] = "default"
    with K8sDouble(kubernetes_version="1.35") as api:
        api.seed(template, TARGETED, b.dra_node("dra-a"), *b.nvidia_device_classes(), b.gpu_slice("dra-a", 2))
        cli = CliRunner(env={"KUBECONFIG": api.kubeconfig_path()}).invoke(
            main, ["migrate", "--from-cluster", "-"], input=yaml.safe_dump(legacy_pod))
        hook = webhook_on(api)
        verdicts = {path: hook.review(path, admission_review(legacy_pod)) for path in ("/mutate", "/validate")}
    assert cli.exit_code == 3 and "asks for GPUs twice" in cli.stderr, cli.stderr
    for path, response in verdicts.items():
        assert response["allowed"] is False, (path, response)
        assert "asks for GPUs twice" in response["status"]["message"] and "gpu-targeted.nvidia.com" in \
            response["status"]["message"], path
