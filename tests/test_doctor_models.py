"""What `doctor` finds, computed from API objects alone (no server)."""

from __future__ import annotations


import yaml

from kubectl_gpu.inspect.doctor import DoctorInputs, run_doctor
from kubectl_gpu.inspect.doctor.selectors import attribute_references
from tests import builders as b
from tests.corpus import claim_fixture, corpus_file

ALL_VERSIONS = ("v1", "v1beta2", "v1beta1")


def _fixture(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(claim_fixture(name).read_text()) if d]


def _corpus(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(corpus_file("dra", name).read_text()) if d]


def _doctor(**objects):
    objects.setdefault("served_dra_versions", ALL_VERSIONS)
    return run_doctor(DoctorInputs(**{k: tuple(v) if isinstance(v, list) else v for k, v in objects.items()}))


def _codes(report) -> list[tuple[str, str]]:
    return [(f.code, f.subject) for f in report.findings if f.severity.value != "info"]


def _healthy_webhook() -> dict:
    return dict(mutating_webhooks=[b.webhook_configuration("MutatingWebhookConfiguration")],
                validating_webhooks=[b.webhook_configuration("ValidatingWebhookConfiguration")],
                services=[b.service()], endpoints=[b.endpoints(ready=2)])


def test_a_clean_cluster_is_healthy():
    report = _doctor(nodes=[b.dra_node("dra-1")], resource_slices=[b.gpu_slice("dra-1")],
                     device_classes=b.nvidia_device_classes(), **_healthy_webhook())
    assert report.healthy, report.findings
    assert {c.status for c in report.checks} == {"ok"}


def test_double_counting_node_fails_with_a_fix():
    report = _doctor(nodes=[b.dra_node("dra-1", legacy={"nvidia.com/gpu": "8"})],
                     resource_slices=[b.gpu_slice("dra-1")])
    assert ("double-counting", "node/dra-1") in _codes(report)
    assert not report.healthy
    assert all(f.fix for f in report.findings)


def test_a_dra_node_that_volcano_or_koordinator_also_shares_out_is_double_counting():
    """volcano.sh/gpu-number (Volcano's GPU share) and koordinator.sh/gpu-core (Koordinator's device share)
    hand out the same GPUs the DRA driver publishes on that node."""
    for legacy in ({"volcano.sh/gpu-number": "8"}, {"koordinator.sh/gpu-core": "800"}):
        report = _doctor(nodes=[b.dra_node("dra-1", legacy=legacy)], resource_slices=[b.gpu_slice("dra-1")])
        assert ("double-counting", "node/dra-1") in _codes(report), legacy


def test_selector_on_index_which_the_nvidia_driver_no_longer_publishes():
    tpl = b.template("pinned", "ml", requests=[b.exact_request(
        selectors=["device.attributes['gpu.nvidia.com'].index == 0"])])
    report = _doctor(resource_slices=[b.gpu_slice("dra-1")], resource_claim_templates=[tpl],
                     device_classes=b.nvidia_device_classes())
    (finding,) = [f for f in report.findings if f.code == "unpublished-attribute"]
    assert finding.subject == "resourceclaimtemplate/ml/pinned"
    assert "runtime error" in finding.message
    assert "uuid" in finding.fix and "v25.8.0" in finding.fix


def test_selector_on_the_drivers_own_pcie_bus_id_is_sent_to_the_standard_attribute():
    """Drivers up to v25.8.1 published the PCI address as `pcieBusID` in their own domain; v25.12.0
    replaced it with the standard `resource.kubernetes.io/pciBusID` (kubernetes-sigs/dra-driver-nvidia-gpu
    cmd/gpu-kubelet-plugin/deviceinfo.go: `"pcieBusID": {StringValue: &d.pcieBusID}` at v25.8.1,
    `pciBusIDAttrName` = deviceattribute.StandardDeviceAttributePrefix + "pciBusID" at v25.12.0, and
    `d.pciBusIDAttr` from deviceattribute at v0.4.1 and main).  A selector written for the old driver
    is a runtime error on every device now; the fix names the attribute that replaced it."""
    tpl = b.template("pinned", "ml", requests=[b.exact_request(
        selectors=["device.attributes['gpu.nvidia.com'].pcieBusID == '0000:65:00.0'"])])
    report = _doctor(resource_slices=[b.gpu_slice("dra-1")], resource_claim_templates=[tpl],
                     device_classes=b.nvidia_device_classes())
    (finding,) = [f for f in report.findings if f.code == "unpublished-attribute"]
    assert "runtime error" in finding.message
    assert "v25.12.0" in finding.fix and "resource.kubernetes.io/pciBusID" in finding.fix


def test_selector_on_index_is_fine_where_the_driver_still_publishes_it():
    tpl = b.template("pinned", "ml", requests=[b.exact_request(
        selectors=['device.attributes["gpu.nvidia.com"]["index"] == 0'])])
    report = _doctor(resource_slices=[b.gpu_slice("dra-1", with_index=True)],
                     resource_claim_templates=[tpl], device_classes=b.nvidia_device_classes())
    assert _codes(report) == []


def test_guarded_attribute_references_are_not_errors():
    assert attribute_references("'index' in device.attributes['gpu.nvidia.com'] && "
                                "device.attributes['gpu.nvidia.com'].index == 0") == []
    refs = attribute_references("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0")
    assert [(r.kind, r.qualified) for r in refs] == [("capacity", "gpu.nvidia.com/memory")]


def test_corpus_mig_selectors_match_published_mig_profiles():
    docs = _fixture("gpu-test4-mig-devices")
    templates = [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
    gpu_test4 = [b.mig_device("a100", 0, slot, profile)
                 for slot, profile in enumerate(("1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"))]
    report = _doctor(resource_slices=[b.gpu_slice("a100", devices=gpu_test4)], resource_claim_templates=templates,
                     device_classes=b.nvidia_device_classes())
    assert _codes(report) == []


def test_a_template_no_node_can_allocate_even_with_every_device_free_is_named():
    """doctor judges claims with Kubernetes' structured allocator: gpu-test4's four MIG devices
    on one parent GPU (matchAttribute parentUUID) against a node publishing one 1g.5gb device."""
    docs = _fixture("gpu-test4-mig-devices")
    templates = [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
    slices = [b.gpu_slice("a100", devices=[b.mig_device("a100", 0, 0, "1g.5gb")])]
    report = _doctor(resource_slices=slices, resource_claim_templates=templates,
                     device_classes=b.nvidia_device_classes())
    assert _codes(report) == [("unsatisfiable-claim", "resourceclaimtemplate/gpu-test4/mig-devices")]
    (finding,) = [f for f in report.findings if f.code == "unsatisfiable-claim"]
    assert "cannot be allocated" in finding.message and "kubectl gpu explain" in finding.fix


def test_a_whole_gpu_and_a_mig_slice_of_it_in_one_template_are_never_allocated_together():
    """DynamicMIG (KEP-4815 partitionable devices): the whole GPU and its MIG placements draw on
    one counter set, so one claim asking for both cannot be allocated (upstream allocatortesting
    partitionable-devices cases); a per-device check would call each request satisfiable."""
    both = b.template("both", "ml", requests=[b.exact_request("gpu"), b.exact_request("mig", "mig.nvidia.com")])
    either = b.template("either", "ml", requests=[b.exact_request("mig", "mig.nvidia.com")])
    report = _doctor(resource_slices=b.dynamic_mig_slices("dra-1"), resource_claim_templates=[both, either],
                     device_classes=b.nvidia_device_classes())
    assert _codes(report) == [("unsatisfiable-claim", "resourceclaimtemplate/ml/both")]


def test_request_for_a_device_class_that_does_not_exist():
    docs = _corpus("kubernetes-sigs__dra-example-driver__demo_examples_cel-selector_cel-selector.yaml")
    templates = [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
    report = _doctor(resource_claim_templates=templates, device_classes=b.nvidia_device_classes())
    (finding,) = [f for f in report.findings if f.code == "device-class-missing"]
    assert "gpu.example.com" in finding.message and "gpu.nvidia.com" in finding.fix


def test_corpus_extended_resource_class_overlapping_a_device_plugin_resource():
    docs = _fixture("mig-1g-12gb-extended-resource")
    classes = [d for d in docs if d["kind"] == "DeviceClass"]
    plugin_node = b.node("gh200-1", legacy={"nvidia.com/mig-1g.12gb": "7"})
    report = _doctor(device_classes=classes, nodes=[plugin_node])
    (finding,) = [f for f in report.findings if f.code == "extended-resource-overlap"]
    assert finding.subject == "deviceclass/mig-1g-12gb.gpu.nvidia.com"
    assert "gh200-1" in finding.message
    # Without a device plugin advertising the name, the mapping is exactly what KEP-5004 is for.
    assert _doctor(device_classes=classes, nodes=[b.dra_node("gh200-1")]).healthy


def test_extended_resource_for_memory_and_ambiguous_mappings():
    classes = [b.device_class("a", "true", extended_resource_name="nvidia.com/gpumem"),
               b.device_class("b", "true", extended_resource_name="nvidia.com/gpumem")]
    codes = {f.code for f in _doctor(device_classes=classes).findings}
    assert {"extended-resource-not-a-count", "extended-resource-ambiguous"} <= codes


def test_webhook_not_installed_is_information_not_failure():
    report = _doctor()
    assert report.healthy
    assert [f.code for f in report.findings] == ["webhook-not-installed"]


def test_suggested_helm_commands_name_the_chart_as_users_install_it():
    """Not a path inside this repository (a user reading doctor's output has no checkout), and only
    an address something publishes: the chart archive of this release (tests/test_release.py
    checks that scripts/release builds it)."""
    from importlib.metadata import version

    chart = (f"https://github.com/kubectl-gpu/kubectl-gpu/releases/download/v{version('kubectl-gpu')}/"
             f"kubectl-gpu-webhook-{version('kubectl-gpu')}.tgz")
    (finding,) = _doctor().findings
    assert f"helm install kubectl-gpu {chart} --namespace kubectl-gpu --create-namespace" in finding.fix
    no_ca = _healthy_webhook() | {"mutating_webhooks": [
        b.webhook_configuration("MutatingWebhookConfiguration", ca_bundle="")]}
    (ca,) = [f for f in _doctor(**no_ca).findings if f.code == "webhook-ca-bundle-empty"]
    assert ca.fix.endswith(f"helm upgrade --install kubectl-gpu {chart} --namespace kubectl-gpu --reuse-values")
    assert " charts/" not in finding.fix + ca.fix


def test_webhook_without_ready_endpoints_rejects_pods():
    plumbing = _healthy_webhook()
    plumbing["endpoints"] = [b.endpoints(ready=0, not_ready=2)]
    report = _doctor(**plumbing)
    findings = [f for f in report.findings if f.code == "webhook-not-ready"]
    assert len(findings) == 2  # the mutating and the validating configuration
    assert all(f.severity.value == "error" and "REJECTED" in f.message for f in findings)
    assert "kubectl -n kubectl-gpu get pods" in findings[0].fix


def test_webhook_failing_open_is_a_warning_and_endpoint_slices_are_read():
    plumbing = _healthy_webhook()
    plumbing["mutating_webhooks"] = [b.webhook_configuration("MutatingWebhookConfiguration",
                                                             failure_policy="Ignore")]
    plumbing["validating_webhooks"] = []
    plumbing["endpoint_slices"] = ({"metadata": {"name": "x", "namespace": "kubectl-gpu",
                                                 "labels": {"kubernetes.io/service-name": "kubectl-gpu-webhook"}},
                                    "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": False}}]},)
    (finding,) = _doctor(**plumbing).findings
    assert finding.code == "webhook-not-ready" and finding.severity.value == "warning"
    assert "WITHOUT conversion" in finding.message


def test_webhook_service_missing_wrong_port_and_empty_ca_bundle():
    missing = _healthy_webhook() | {"services": []}
    assert "webhook-service-missing" in {f.code for f in _doctor(**missing).findings}
    wrong_port = _healthy_webhook() | {"services": [b.service(port=8443)]}
    assert "webhook-service-port" in {f.code for f in _doctor(**wrong_port).findings}
    config = b.webhook_configuration("MutatingWebhookConfiguration", ca_bundle="")
    config["metadata"]["annotations"] = {"cert-manager.io/inject-ca-from": "kubectl-gpu/kubectl-gpu-webhook"}
    no_ca = _healthy_webhook() | {"mutating_webhooks": [config]}
    (finding,) = [f for f in _doctor(**no_ca).findings if f.code == "webhook-ca-bundle-empty"]
    assert "cert-manager" in finding.fix


def test_managed_template_nobody_uses():
    used = b.template("kubectl-gpu-used", "ml", managed=True)
    unused = b.template("kubectl-gpu-orphan", "ml", managed=True)
    mine = b.template("hand-written", "ml")
    report = _doctor(resource_claim_templates=[used, unused, mine],
                     workloads=[b.deployment("web", "ml", template_name="kubectl-gpu-used", replicas=0)],
                     device_classes=b.nvidia_device_classes())
    assert _codes(report) == [("unused-managed-object", "resourceclaimtemplate/ml/kubectl-gpu-orphan")]
    assert report.findings[0].fix == "delete it if its workload is gone: kubectl -n ml delete resourceclaimtemplate kubectl-gpu-orphan"


def test_cluster_without_dra_v1_and_without_dra():
    old = _doctor(served_dra_versions=("v1beta1",), **_healthy_webhook())
    (finding,) = old.findings
    assert finding.code == "dra-v1-not-served" and "--api-version v1beta1" in finding.fix
    none = _doctor(served_dra_versions=())
    assert ("dra-not-served", "apigroup/resource.k8s.io") in _codes(none)


def test_a_check_that_cannot_read_its_objects_is_skipped_and_fails():
    report = _doctor(unavailable={"mutatingwebhookconfigurations": "HTTP 403 forbidden"})
    (check,) = [c for c in report.checks if c.name == "webhook"]
    assert check.status == "skipped"
    assert not report.healthy
    assert "get/list on mutatingwebhookconfigurations" in check.findings[0].fix


def test_missing_attribute_behind_a_false_condition_is_not_an_error():
    # CEL's && absorbs the error when the left side is false: GPUs are never asked for `profile`.
    docs = _fixture("mig-1g-12gb-extended-resource")
    classes = [d for d in docs if d["kind"] == "DeviceClass"]
    report = _doctor(resource_slices=[b.gpu_slice("dra-1")], device_classes=classes)
    assert _codes(report) == []


def test_request_selector_is_evaluated_only_on_its_class_devices():
    mixed = b.gpu_slice("a100", devices=[b.gpu_device("a100", 0), b.mig_device("a100", 1, 0, "1g.10gb")])
    by_profile = b.template("mig", "ml", requests=[b.exact_request(
        device_class="mig.nvidia.com", selectors=["device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"])])
    on_gpus = b.template("gpu", "ml", requests=[b.exact_request(
        selectors=["device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"])])
    report = _doctor(resource_slices=[mixed], resource_claim_templates=[by_profile, on_gpus],
                     device_classes=b.nvidia_device_classes())
    assert _codes(report) == [("unpublished-attribute", "resourceclaimtemplate/ml/gpu")]
    assert "1 of the 1 device(s)" in report.findings[0].message


def test_selectors_are_checked_on_the_devices_the_scheduler_sees():
    """A driver upgraded to v25.8.0 (no `index`) republishes its pool with a higher
    pool.generation; the scheduler ignores the older slices (ResourceSlice API: "Whenever the
    driver updates its pool, it must increment the generation... consumers must ignore slices
    of an older generation"), so doctor counts the errors on the current ones only."""
    tpl = b.template("pinned", "ml", requests=[b.exact_request(
        selectors=["device.attributes['gpu.nvidia.com'].index == 0"])])
    before_upgrade = b.gpu_slice("dra-1", 8, generation=1, with_index=True)
    after_upgrade = b.gpu_slice("dra-1", 8, generation=2)
    report = _doctor(resource_slices=[before_upgrade, after_upgrade], resource_claim_templates=[tpl],
                     device_classes=b.nvidia_device_classes())
    (finding,) = [f for f in report.findings if f.code == "unpublished-attribute"]
    assert "8 of the 8 device(s)" in finding.message


def test_every_extended_resource_a_dra_node_advertises_is_listed_and_unknown_ones_are_questioned():
    # A device plugin that renames what it advertises (resources.gpus[].name, time-slicing rename,
    # RESOURCE_PREFIX) hides double counting from the known names: doctor lists every extended
    # resource a DRA node offers, so an operator can tell.
    nodes = [b.dra_node("dra-1", legacy={"nvidia.com/a100": "8", "example.com/fpga": "2"}),
             b.dra_node("dra-2", legacy={"nvidia.com/a100": "8"}),
             b.node("plain-1", legacy={"nvidia.com/a100": "8"})]
    slices = [b.gpu_slice("dra-1"), b.gpu_slice("dra-2")]
    report = _doctor(nodes=nodes, resource_slices=slices)
    [check] = [c for c in report.checks if c.name == "dra-node-resources"]
    assert "nvidia.com/a100 (2 nodes)" in check.summary and "example.com/fpga (1 node)" in check.summary
    unknown = [f for f in check.findings if f.code == "unknown-extended-resource-on-dra-node"]
    assert [f.subject for f in unknown] == ["resource/example.com/fpga", "resource/nvidia.com/a100"]
    # Information only: RDMA, FPGA and other device plugins run on GPU nodes too.
    assert all(f.severity.value == "info" and "extraLegacyResources" in f.fix for f in unknown)
    # Declared as the webhook's extraLegacyResources, a renamed GPU on a DRA node is double counting.
    declared = _doctor(nodes=nodes, resource_slices=slices, extra_legacy_resources=frozenset({"nvidia.com/a100"}))
    [check] = [c for c in declared.checks if c.name == "dra-node-resources"]
    [error] = [f for f in check.findings if f.severity.value == "error"]
    assert error.subject == "resource/nvidia.com/a100" and "dra-1, dra-2" in error.message
    assert not declared.healthy


def test_a_dra_node_advertising_only_standard_resources_lists_nothing():
    report = _doctor(nodes=[b.dra_node("dra-1")], resource_slices=[b.gpu_slice("dra-1")])
    [check] = [c for c in report.checks if c.name == "dra-node-resources"]
    assert check.findings == () and "no extended resource" in check.summary
