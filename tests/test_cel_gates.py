"""Feature gates shape the DRA CEL environment, as in Kubernetes.

Upstream: kubernetes/kubernetes staging/src/k8s.io/dynamic-resource-allocation/cel/compile.go
(``Features{EnableConsumableCapacity, EnableListTypeAttributes}``; NewExpressions picks the device
type the gates enable, StoredExpressions the newest one) and the versioned feature-gate defaults
(``defaultVersionedKubernetesFeatureGates``: DRAConsumableCapacity alpha 1.34, beta on 1.36;
DRAListTypeAttributes alpha 1.36).
"""

import pytest

from kubectl_gpu.cel import CelCompileError, compile_selector
from kubectl_gpu.dra.devices import make_device
from kubectl_gpu.dra.gates import default_gates, kubernetes_minor

MULTI = "device.allowMultipleAllocations"


@pytest.mark.parametrize("version, enabled", [("1.34", False), ("1.35", False), ("1.36", True), ("v1.37.1", True)])
def test_consumable_capacity_is_on_by_default_from_136(version, enabled):
    assert ("DRAConsumableCapacity" in default_gates(version)) is enabled


def test_list_type_attributes_stay_off_by_default_through_137():
    assert all("DRAListTypeAttributes" not in default_gates(minor) for minor in range(32, 38))


def test_dra_itself_is_on_by_default_from_134():
    assert "DynamicResourceAllocation" not in default_gates(33)
    assert "DynamicResourceAllocation" in default_gates(34)


@pytest.mark.parametrize("version", ["1.31", "1.39", "banana", ""])
def test_unsupported_versions_are_refused_with_the_supported_range(version):
    with pytest.raises(ValueError, match=r"1\.(MINOR|32 to 1\.38)"):
        kubernetes_minor(version)


def test_allow_multiple_allocations_is_a_compile_error_without_consumable_capacity():
    with pytest.raises(CelCompileError, match="undefined field 'allowMultipleAllocations'"):
        compile_selector(MULTI, gates=default_gates("1.35"))


def test_allow_multiple_allocations_compiles_with_consumable_capacity():
    selector = compile_selector(MULTI, gates={"DRAConsumableCapacity"})
    assert selector.matches(make_device("gpu.nvidia.com", "gpu-0", allow_multiple_allocations=True))
    assert not selector.matches(make_device("gpu.nvidia.com", "gpu-1"))


def test_a_stored_expression_keeps_compiling_after_the_gate_is_turned_off():
    """StoredExpressions ignores FeatureEnabled: the scheduler still runs the stored selector."""
    compile_selector(MULTI, gates=frozenset(), stored=True)


def test_gates_may_be_given_as_a_mapping_of_names_to_booleans():
    compile_selector(MULTI, gates={"DRAConsumableCapacity": True})
    with pytest.raises(CelCompileError):
        compile_selector(MULTI, gates={"DRAConsumableCapacity": False})


def test_includes_needs_list_type_attributes():
    expression = 'device.attributes["dra.example.com"].models.includes("a")'
    with pytest.raises(CelCompileError, match="undeclared reference to 'includes'"):
        compile_selector(expression, gates=default_gates("1.36"))
    compile_selector(expression, gates={"DRAListTypeAttributes"})


def _claim(expression, **meta):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"namespace": "ml", "name": "c", **meta},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu.nvidia.com", "selectors": [{"cel": {"expression": expression}}]}}]}}}


def test_explain_compiles_a_new_claim_under_the_gates_and_a_stored_one_as_the_scheduler_does():
    """A claim from a file is created under the cluster's gates (NewExpressions); one the API
    server already holds (it has a uid) is compiled by the scheduler as a stored expression."""
    from kubectl_gpu.explain import explain_objects

    slice_obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
                 "spec": {"driver": "gpu.nvidia.com", "nodeName": "n", "pool": {"name": "n"},
                          "devices": [{"name": "gpu-0", "allowMultipleAllocations": True,
                                       "attributes": {"type": {"string": "gpu"}}}]}}
    gates = default_gates("1.35")
    new = explain_objects(claims=[_claim(MULTI)], slices=[slice_obj], gates=gates).items[0]
    assert "undefined field 'allowMultipleAllocations'" in new.verdict
    stored = explain_objects(claims=[_claim(MULTI, uid="0b7c")], slices=[slice_obj], gates=gates).items[0]
    assert stored.allocatable, stored.verdict
