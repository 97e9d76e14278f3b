"""`explain` tells a person why each request of a claim can or cannot be allocated."""

import json
from pathlib import Path

import pytest
import yaml

from kubectl_gpu.dra.devices import devices_from_slice
from kubectl_gpu.explain import ClaimError, ClaimResult, explain_objects, sort_objects
from kubectl_gpu.explain.render import to_dict
from tests.corpus import claim_fixture, corpus_file, corpus_files, requires_corpus

DATA = Path(__file__).parent / "data" / "slices"


def load(path: Path) -> list:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def fixture(name: str) -> list:
    return load(claim_fixture(name))


def corpus(name: str) -> list:
    return load(corpus_file("dra", name))


def nvidia_slices() -> list:
    return [*load(DATA / "nvidia-h100-node.yaml"), *load(DATA / "nvidia-a100-mig-v1beta1.yaml"),
            *load(DATA / "nvidia-consumable-memory.yaml")]


def claim(requests, version="v1", constraints=None, kind="ResourceClaim"):
    spec = {"devices": {"requests": requests, **({"constraints": constraints} if constraints else {})}}
    return {"apiVersion": f"resource.k8s.io/{version}", "kind": kind,
            "metadata": {"namespace": "ml", "name": "c"}, "spec": spec if kind == "ResourceClaim" else {"spec": spec}}


def exactly(name="gpu", cls="gpu.nvidia.com", selectors=(), **extra):
    body = {"deviceClassName": cls, **extra}
    if selectors:
        body["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"name": name, "exactly": body}


def explain_one(claim_obj, slices=None, classes=(), allocations=()):
    result = explain_objects([claim_obj], nvidia_slices() if slices is None else slices, classes, allocations)
    (item,) = result.items
    return item


@requires_corpus
def test_every_corpus_claim_is_explained_against_the_corpus_slices():
    docs = [d for path in corpus_files("dra", "*.yaml") for d in load(path)]
    inputs = sort_objects(docs)
    assert len(inputs.claims) >= 20 and len(inputs.slices) == 3
    classes = [*inputs.classes, *load(DATA / "example-driver-class.yaml")]
    explanation = explain_objects(inputs.claims, inputs.slices, classes)
    assert len(explanation.items) == len(inputs.claims)
    errors = [i for i in explanation.items if isinstance(i, ClaimError)]
    # only the classic-DRA v1alpha2 templates are unexplainable, and they say how to fix them
    assert {e.name for e in errors} == {"inference-gpu", "training-gpu"}
    assert all("rewrite it as resource.k8s.io/v1" in e.error for e in errors)
    json.dumps(to_dict(explanation))  # the whole thing serialises


def test_example_driver_cel_selector_claim_fits_the_readme_slice():
    item = explain_one(corpus("cel-selector")[1], corpus("README.md"), load(DATA / "example-driver-class.yaml"))
    assert item.allocatable and item.node == "dra-example-driver-cluster-worker"
    alternative = item.requests[0].alternatives[0]
    assert (alternative.in_class, alternative.matched, alternative.free) == (8, 8, 8)
    assert [s.matched for s in alternative.selectors] == [8, 8, 8]


def test_prioritized_alternatives_pick_the_first_that_fits():
    docs = corpus("prioritized-alternatives")
    templates = [d for d in docs if d.get("kind") == "ResourceClaimTemplate"]
    result = explain_objects(templates, corpus("README.md"), load(DATA / "example-driver-class.yaml"))
    fallback, preferred = result.items
    assert fallback.requests[0].chosen == "gpu/older-gpu"
    bleeding, huge, _ = fallback.requests[0].alternatives
    assert "rejects 8 of 8" in bleeding.verdict and not bleeding.allocatable
    assert "rejects 8 of 8" in huge.verdict and "compareTo(quantity('1Ti')" in huge.verdict
    assert preferred.requests[0].chosen == "gpu/latest-gpu"


def test_imex_channels_are_not_gpus_for_the_nvidia_gpu_class():
    item = explain_one(fixture("gpu-test1-single-gpu")[1], corpus("imex-resourceslice"))
    alternative = item.requests[0].alternatives[0]
    assert alternative.devices == 20 and alternative.in_class == 0
    assert "no device is in class gpu.nvidia.com" in item.verdict
    assert any("NVIDIA DRA driver's definition" in n for n in item.notes)


def test_removed_index_attribute_is_reported_as_the_scheduler_error():
    """gpu-test6 selects on `index`, which NVIDIA driver v25.8.0 and later no longer publish."""
    template = fixture("gpu-test6-a100-index")[1]
    slices = load(DATA / "nvidia-a100-mig-v1beta1.yaml")
    item = explain_one(template, slices)
    alternative = item.requests[0].alternatives[0]
    assert not item.allocatable and alternative.fatal_error
    assert "claim gpu-test6/a100: selector #0: CEL runtime error: no such key: index" in alternative.fatal_error
    assert "aborts scheduling" in item.verdict
    errored = [d for d in alternative.device_results if d.result == "error"]
    assert [d.device for d in errored] == ["gpu.nvidia.com/a100-node-1/gpu-0"]
    assert errored[0].selectors[-1].message == "no such key: index"


def test_the_hint_for_a_missing_attribute_names_what_the_driver_publishes_instead():
    """The scheduler's "no such key" is a driver change only for the names the driver dropped:
    pcieBusID (replaced by resource.kubernetes.io/pciBusID in v25.12.0, deviceinfo.go) and index
    (v25.8.0); a name it never published is a typo to fix, not the driver's doing."""
    slices = load(DATA / "nvidia-h100-node.yaml")
    renamed = explain_one(claim([exactly(selectors=[
        "device.attributes['gpu.nvidia.com'].pcieBusID == '0000:0f:00.0'"])]), slices)
    assert "stopped publishing pcieBusID in v25.12.0" in renamed.verdict
    assert "resource.kubernetes.io/pciBusID" in renamed.verdict
    removed = explain_one(claim([exactly(selectors=["device.attributes['gpu.nvidia.com'].index == 0"])]), slices)
    assert "stopped publishing index in v25.8.0" in removed.verdict
    typo = explain_one(claim([exactly(selectors=["device.attributes['gpu.nvidia.com'].prodName == 'x'"])]), slices)
    assert "no device in the class publishes 'prodName'" in typo.verdict
    assert "v25" not in typo.verdict  # not blamed on a driver release


def test_the_selector_that_rejects_most_is_named_with_counts():
    item = explain_one(claim([exactly(count=2, selectors=[
        "device.attributes['gpu.nvidia.com'].architecture == 'Ampere'",
        "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0",
    ])]))
    alternative = item.requests[0].alternatives[0]
    # 8 H100 + 1 A100 + 2 shareable H100 are GPUs; only the A100 is Ampere with >= 40Gi
    assert (alternative.in_class, alternative.matched) == (11, 1)
    assert alternative.verdict.startswith("needs 2 devices, 1 matches: selector #0 (device.attributes['gpu.nvidia.com'].architecture == 'Ampere') rejects 10 of 11")
    first, second = alternative.selectors[1:]
    assert (first.matched, first.rejected, second.matched, second.rejected) == (1, 10, 11, 0)


def test_taken_devices_are_not_free_and_claims_need_one_node():
    allocations = load(DATA / "allocated-claims.yaml")
    item = explain_one(claim([exactly(count=7, selectors=["device.attributes['gpu.nvidia.com'].productName.matches('H100')"])]),
                       allocations=allocations)
    alternative = item.requests[0].alternatives[0]
    assert alternative.matched == 10 and alternative.best_node == "h100-node-1" and alternative.best_node_free == 6
    assert not item.allocatable
    assert "2 taken by other claims" in alternative.verdict and "at most 6 free on one node" in alternative.verdict
    taken = [d for d in alternative.device_results if d.taken_by]
    assert {d.taken_by for d in taken} == {("team-a/trainer-gpu:gpu",), ("team-b/notebook-mem:gpu",)}
    # the shareable GPU stays usable by a whole-device request only while nobody consumes it
    shared = next(d for d in taken if d.device.endswith("share-node-1/gpu-0"))
    assert shared.free is True


def test_consumable_capacity_is_checked_against_what_is_left():
    allocations = load(DATA / "allocated-claims.yaml")
    request = exactly(capacity={"requests": {"memory": "30Gi"}},
                      selectors=["device.attributes['gpu.nvidia.com'].uuid.startsWith('GPU-share')"])
    item = explain_one(claim([request]), allocations=allocations)
    alternative = item.requests[0].alternatives[0]
    by_name = {d.device.rsplit("/", 1)[1]: d for d in alternative.device_results}
    assert by_name["gpu-0"].free is False and "needs 30Gi, 20Gi of 80Gi left" in by_name["gpu-0"].capacity
    assert by_name["gpu-1"].free is True
    assert item.allocatable and item.node == "share-node-1"


def test_capacity_requests_round_up_to_the_request_policy_step():
    request = exactly(capacity={"requests": {"memory": "1500Mi"}},
                      selectors=["device.attributes['gpu.nvidia.com'].uuid.startsWith('GPU-share')"])
    item = explain_one(claim([request]))
    device = next(d for d in item.requests[0].alternatives[0].device_results if d.result == "matched")
    assert device.capacity.startswith("memory: 2Gi of 80Gi left")


def test_mig_requests_with_match_attribute_need_distinct_devices_on_one_parent():
    template = fixture("gpu-test4-mig-devices")[1]  # 2x 1g.5gb + 2g.10gb + 3g.20gb, same parentUUID
    item = explain_one(template)
    assert item.allocatable and item.node == "a100-node-1"
    too_many = claim([exactly(f"m{i}", "mig.nvidia.com", ["device.attributes['gpu.nvidia.com'].profile == '1g.5gb'"]) for i in range(4)],
                     constraints=[{"requests": [], "matchAttribute": "gpu.nvidia.com/parentUUID"}])
    item = explain_one(too_many)
    assert all(r.allocatable for r in item.requests)  # each alone fits
    assert not item.allocatable and "together with the same gpu.nvidia.com/parentUUID" in item.verdict


def test_allocation_mode_all_needs_every_matching_device_free():
    template = corpus("GoogleCloudPlatform")[0]  # v1beta1 flat request, allocationMode: All
    free = explain_one(template, load(DATA / "nvidia-h100-node.yaml"))
    assert free.allocatable and free.requests[0].alternatives[0].matched == 8
    busy = explain_one(template, load(DATA / "nvidia-h100-node.yaml"), allocations=load(DATA / "allocated-claims.yaml"))
    assert not busy.allocatable and "every node has a matching device in use" in busy.verdict


def test_count_larger_than_a_node_cannot_fit():
    item = explain_one(fixture("gpu-test8-double-gpu-v1beta1")[1], load(DATA / "nvidia-a100-mig-v1beta1.yaml"))
    assert "needs 2 devices, 1 matches" in item.verdict


@pytest.mark.parametrize(
    "claim_obj, message",
    [
        (claim([{"name": "gpu", "deviceClassName": "gpu.nvidia.com"}]), "move it under exactly:"),
        (claim([exactly()], version="v1beta1"), "exactly: is the resource.k8s.io/v1 shape"),
        (claim([exactly(count=0)]), "count must be a positive integer"),
        (claim([exactly(), exactly()]), "request names must be unique"),
        (claim([exactly(capacity={"requests": {"memory": "4 GB"}})]), "capacity.requests.memory"),
        (claim([{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "selectors": [{"foo": {}}]}}]), "set cel.expression"),
    ],
)
def test_invalid_claims_say_what_to_change(claim_obj, message):
    item = explain_one(claim_obj)
    assert isinstance(item, ClaimError) and message in item.error


def test_selector_compile_errors_are_reported_like_admission():
    item = explain_one(claim([exactly(selectors=["device.attributes['gpu.nvidia.com'].productName == 'x' &&& true"])]))
    assert isinstance(item, ClaimResult) and not item.allocatable
    assert "selector #0: CEL compile error" in item.verdict and "the API server rejects this claim" in item.verdict


def test_unknown_device_class_cannot_be_allocated():
    item = explain_one(claim([exactly(cls="fpga.example.com")]))
    assert "DeviceClass fpga.example.com does not exist" in item.verdict


def test_given_device_class_replaces_the_builtin_one():
    cls = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.nvidia.com"},
           "spec": {"selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].architecture == 'Hopper'"}}]}}
    item = explain_one(claim([exactly()]), classes=[cls])
    alternative = item.requests[0].alternatives[0]
    assert alternative.class_source == "given" and alternative.in_class == 10 and not item.notes


def test_hami_claims_use_their_own_class_and_find_no_hami_devices():
    docs = corpus("HAMi")
    inputs = sort_objects(docs)
    result = explain_objects(inputs.claims, nvidia_slices(), inputs.classes)
    assert len(result.items) == 3
    for item in result.items:
        assert "no device is in class hami-core-gpu.project-hami.io" in item.verdict


def test_explaining_8000_devices_returns_every_device_result():
    template = load(DATA / "nvidia-h100-node.yaml")[0]
    slices = []
    for node in range(1000):
        h100 = {**template, "metadata": {"name": f"node-{node}-gpu.nvidia.com"},  # one name per slice, as in a cluster
                "spec": {**template["spec"], "nodeName": f"node-{node}", "pool": {"name": f"node-{node}"}}}
        slices.append(h100)
    item = explain_one(fixture("gpu-test1-single-gpu")[1], slices)
    alternative = item.requests[0].alternatives[0]
    assert len(alternative.device_results) == 8000 and alternative.free == 8000 and item.allocatable


def test_claims_naming_one_class_share_its_selector_pass_and_report_it_whole(monkeypatch):
    """Class selectors do not depend on the request: three requests over two claims naming
    gpu.nvidia.com evaluate its selector once per device, and each still reports what it would alone."""
    from kubectl_gpu.cel import CompiledSelector
    from kubectl_gpu.explain import BUILTIN_CLASS_SELECTORS

    two_requests = claim([exactly("a", count=1), exactly("b", count=1, selectors=["device.attributes['gpu.nvidia.com'].architecture == 'Ampere'"])])
    other = {**claim([exactly("c", count=2)]), "metadata": {"namespace": "ml", "name": "other"}}
    alone = [explain_one(two_requests), explain_one(other)]
    class_expression = BUILTIN_CLASS_SELECTORS["gpu.nvidia.com"]
    calls = {"class": 0}
    original = CompiledSelector.verdicts  # every device's verdict, in one call

    def counting(self, devices):
        calls["class"] += len(devices) if self.expression == class_expression else 0
        return original(self, devices)

    monkeypatch.setattr(CompiledSelector, "verdicts", counting)
    together = explain_objects([two_requests, other], nvidia_slices()).items
    devices = [d for s in nvidia_slices() for d in devices_from_slice(s)]
    assert calls["class"] == len(devices)
    assert [to_dict_item(i) for i in together] == [to_dict_item(i) for i in alone]
    first_class_selector = together[0].requests[1].alternatives[0].selectors[0]
    assert (first_class_selector.evaluated, first_class_selector.matched) == (len(devices), 11)


def to_dict_item(item):
    from kubectl_gpu.explain.inputs import Explanation

    return to_dict(Explanation((item,), 0, 0, ()))["items"]


def test_devices_from_slice_reads_the_synthetic_v1beta1_mig_slice():
    devices = devices_from_slice(load(DATA / "nvidia-a100-mig-v1beta1.yaml")[0])
    assert [d.attributes["gpu.nvidia.com"]["type"] for d in devices] == ["gpu"] + ["mig"] * 5
    assert devices[1].capacity["gpu.nvidia.com"]["multiprocessors"].value == 14


def test_devices_of_an_older_pool_generation_are_not_counted_as_the_scheduler_ignores_them():
    current = load(DATA / "nvidia-h100-node.yaml")
    stale = json.loads(json.dumps(current))  # same pools, one generation behind, one device more
    for s in stale:
        s["metadata"]["name"] += "-old"
        s["spec"]["pool"]["generation"] = s["spec"]["pool"].get("generation", 1) - 1
        s["spec"]["devices"].append({**s["spec"]["devices"][0], "name": "gone-0"})
    item = explain_one(claim([exactly()]), slices=[*stale, *current])
    baseline = explain_one(claim([exactly()]), slices=current)
    assert item.requests[0].alternatives[0].in_class == baseline.requests[0].alternatives[0].in_class
    assert all(d.device != "gone-0" for d in item.requests[0].alternatives[0].device_results)


def test_the_drivers_vfio_class_is_known_without_being_given():
    """The driver's Helm chart installs vfio.gpu.nvidia.com whenever GPUs are enabled, as it does
    gpu.nvidia.com and mig.nvidia.com (kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 and main 95932046:
    deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-vfio-gpu.yaml, `if .Values.resources.gpus.enabled`;
    since v25.12.0).  Its devices appear only with the PassthroughSupport gate, the class always: a
    claim of it is unallocatable for want of devices, never because the class does not exist."""
    vfio = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "node-1-gpu.nvidia.com-vfio"},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": "node-1",
                     "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-vfio-0",
                                  "attributes": {"type": {"string": "vfio"}, "uuid": {"string": "GPU-vfio-0"},
                                                 "productName": {"string": "NVIDIA H100 80GB HBM3"},
                                                 "deviceID": {"string": "0x2330"}, "vendorID": {"string": "0x10de"},
                                                 "iommuFDEnabled": {"bool": False}},
                                  "capacity": {"addressableMemory": {"value": "80Gi"}}}]}}
    item = explain_one(claim([exactly(cls="vfio.gpu.nvidia.com")]), slices=[*nvidia_slices(), vfio])
    alternative = item.requests[0].alternatives[0]
    assert alternative.class_source == "built-in (NVIDIA driver)" and alternative.in_class == 1
    assert item.allocatable and "does not exist" not in item.verdict
