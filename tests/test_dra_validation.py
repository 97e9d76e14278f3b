"""Specification: ResourceClaims and ResourceClaimTemplates are checked at admission.

The API server stores NVIDIA opaque configs unread and cannot know the driver's rules; CEL
selectors that the driver cannot satisfy, or configs naming missing requests, would surface
only as pods stuck on a node.  The webhook denies them up front, naming the field to change.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Callable

import kubernetes_validate
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.corpus import claim_fixture, corpus_files, corpus_params, requires_corpus
from webhook.dra_validation import MAX_WARNING_LENGTH, ValidationResult, validate_dra_object

NVIDIA_DEMO = "kubernetes-sigs__dra-driver-nvidia-gpu__demo_specs_"
CLAIM_KINDS = ("ResourceClaim", "ResourceClaimTemplate")
SUPPORTED = ("resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1")


def _documents(path: Path) -> Iterator[Mapping[str, Any]]:
    for document in yaml.safe_load_all(path.read_text()):
        if isinstance(document, Mapping):
            yield from (document.get("items") or []) if document.get("kind") == "List" else [document]


def _corpus_claims(api_versions: tuple[str, ...]) -> list[Any]:
    found = []
    for path in corpus_files("dra"):
        for document in _documents(path):
            if document.get("kind") in CLAIM_KINDS and document.get("apiVersion") in api_versions:
                name = f"{path.stem[:70]}:{document['kind']}/{document['metadata']['name']}"
                found.append(pytest.param(copy.deepcopy(dict(document)), id=name))
    return found


def _fixture_object(fixture: str, name: str) -> dict[str, Any]:
    path = claim_fixture(fixture)
    [document] = [d for d in _documents(path) if d.get("kind") in CLAIM_KINDS and d["metadata"]["name"] == name]
    return copy.deepcopy(dict(document))


def _api_server_accepts(obj: Mapping[str, Any]) -> bool:
    """The object has a shape Kubernetes 1.34 serves (opaque parameters are free-form there)."""
    try:
        kubernetes_validate.validate(obj, "1.34", strict=True)
    except kubernetes_validate.ValidationError:
        return False
    return True


def two_gpus_template() -> dict[str, Any]:
    """v1 ResourceClaimTemplate with a TimeSlicing request 'ts-gpu' and an MPS request 'mps-gpu'."""
    return _fixture_object("gpu-test5-multiple-gpus", "multiple-gpus")


def v1beta1_template() -> dict[str, Any]:
    return _fixture_object("gpu-test8-double-gpu-v1beta1", "double-gpu")


TS = "spec.spec.devices.config[0].opaque.parameters"
MPS = "spec.spec.devices.config[1].opaque.parameters"


def _ts(template: dict[str, Any]) -> dict[str, Any]:
    return template["spec"]["spec"]["devices"]["config"][0]["opaque"]["parameters"]


def _mps(template: dict[str, Any]) -> dict[str, Any]:
    return template["spec"]["spec"]["devices"]["config"][1]["opaque"]["parameters"]


def _paths(result: ValidationResult) -> list[str]:
    return [f.path for f in result.errors]


def _denied_at(obj: dict[str, Any], path: str) -> str:
    """Assert the object is denied with exactly one finding, at ``path``; return its message."""
    result = validate_dra_object(obj)
    assert not result.allowed
    assert _paths(result) == [path], result.message()
    return result.errors[0].message


# --- the real manifests --------------------------------------------------------------------


@pytest.mark.parametrize("obj", corpus_params(_corpus_claims(SUPPORTED)))
def test_every_served_claim_and_template_in_the_corpus_is_allowed(obj: dict[str, Any]) -> None:
    assert _api_server_accepts(obj)
    result = validate_dra_object(obj)
    assert result.allowed, result.message()
    assert all(len(w) <= MAX_WARNING_LENGTH for w in result.warnings)


@requires_corpus
def test_the_corpus_covers_the_nvidia_opaque_configs() -> None:
    nvidia = [p for p in _corpus_claims(SUPPORTED) if "nvidia.com/v1beta1" in repr(p.values[0])]
    assert len(nvidia) >= 3


@pytest.mark.parametrize("obj", corpus_params(_corpus_claims(("resource.k8s.io/v1alpha2", "resource.k8s.io/v1alpha3"))))
def test_retired_alpha_claims_are_denied_as_unsupported_api_versions(obj: dict[str, Any]) -> None:
    message = _denied_at(obj, "apiVersion")
    assert message.startswith("unsupported apiVersion resource.k8s.io/v1alpha")
    assert "resource.k8s.io/v1" in message


def test_a_v1alpha3_claim_is_denied_as_an_unsupported_api_version() -> None:
    claim = v1beta1_template()
    claim["apiVersion"] = "resource.k8s.io/v1alpha3"
    assert "unsupported apiVersion resource.k8s.io/v1alpha3" in _denied_at(claim, "apiVersion")


def test_v1beta2_has_the_v1_shape_and_is_validated_the_same_way() -> None:
    template = two_gpus_template()
    template["apiVersion"] = "resource.k8s.io/v1beta2"
    assert _api_server_accepts(template)
    assert validate_dra_object(template).allowed
    _ts(template)["sharing"]["strategy"] = "RoundRobin"
    _denied_at(template, f"{TS}.sharing.strategy")


def test_a_claim_using_a_removed_nvidia_attribute_is_allowed_with_a_warning() -> None:
    template = _fixture_object("gpu-test6-a100-index", "a100")  # selects on ...index == 0
    result = validate_dra_object(template)
    assert result.allowed
    [warning] = [w for w in result.warnings if "'index'" in w]
    assert warning.startswith("requests[0].exactly.selectors[0]")
    assert "v25.8.0" in warning


# --- NVIDIA opaque configs ------------------------------------------------------------------


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """A mutation setting a dotted path inside the TimeSlicing config's parameters."""
    def mutate(template: dict[str, Any]) -> None:
        node = _ts(template) if path.startswith("ts.") else _mps(template)
        *parents, leaf = path.split(".")[1:]
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    return mutate


BROKEN_CONFIGS = [
    # (mutation, field path of the finding, words the message must contain)
    (_set("ts.sharing.strategy", "Timeslicing"), f"{TS}.sharing.strategy", ["TimeSlicing", "MPS"]),
    (_set("ts.sharing.strategy", "Fabric"), f"{TS}.sharing.strategy", ["not enabled"]),
    (_set("ts.sharing.timeSlicingConfig.interval", "VeryLong"), f"{TS}.sharing.timeSlicingConfig.interval",
     ["Default, Short, Medium, Long"]),
    (_set("mps.sharing.mpsConfig.defaultActiveThreadPercentage", 150),
     f"{MPS}.sharing.mpsConfig.defaultActiveThreadPercentage", ["0 to 100"]),
    (_set("mps.sharing.mpsConfig.defaultActiveThreadPercentage", -1),
     f"{MPS}.sharing.mpsConfig.defaultActiveThreadPercentage", ["0 to 100"]),
    (_set("mps.sharing.mpsConfig.defaultActiveThreadPercentage", "50"),
     f"{MPS}.sharing.mpsConfig.defaultActiveThreadPercentage", ["whole number"]),
    (_set("mps.sharing.mpsConfig.defaultActiveThreadPercentage", 50.5),
     f"{MPS}.sharing.mpsConfig.defaultActiveThreadPercentage", ["whole number"]),
    (_set("mps.sharing.mpsConfig.defaultPinnedDeviceMemoryLimit", "10 GB"),
     f"{MPS}.sharing.mpsConfig.defaultPinnedDeviceMemoryLimit", ["quantity", "10Gi"]),
    (_set("mps.sharing.mpsConfig.defaultPinnedDeviceMemoryLimit", "512Ki"),
     f"{MPS}.sharing.mpsConfig.defaultPinnedDeviceMemoryLimit", ["1Mi"]),
    (_set("mps.sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit", {"0": "1Gi", "first": "1Gi"}),
     f"{MPS}.sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit[first]", ["index", "UUID"]),
    (_set("mps.sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit", {"GPU-4f3b": "lots"}),
     f"{MPS}.sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit[GPU-4f3b]", ["quantity"]),
    (_set("ts.sharing.mpsConfig", {"defaultActiveThreadPercentage": 10}), f"{TS}.sharing.mpsConfig",
     ["TimeSlicing", "strategy: MPS"]),
    (_set("mps.sharing.timeSlicingConfig", {"interval": "Short"}), f"{MPS}.sharing.timeSlicingConfig",
     ["MPS", "strategy: TimeSlicing"]),
    (_set("ts.sharing.timeslicingConfig", {"interval": "Long"}), f"{TS}.sharing.timeslicingConfig",
     ["did you mean 'timeSlicingConfig'", "valid fields: strategy, timeSlicingConfig, mpsConfig"]),
    (_set("mps.sharing.mpsConfig.activeThreadPercentage", 20), f"{MPS}.sharing.mpsConfig.activeThreadPercentage",
     ["unknown field", "defaultActiveThreadPercentage"]),
    (_set("ts.metadata", {"name": "x"}), f"{TS}.metadata", ["unknown field", "apiVersion, kind, sharing"]),
    (_set("ts.apiVersion", "gpu.resource.nvidia.com/v1alpha1"), f"{TS}.apiVersion",
     ["resource.nvidia.com/v1beta1"]),
    (_set("ts.kind", "GPUConfig"), f"{TS}.kind", ["GpuConfig, MigDeviceConfig, VfioDeviceConfig"]),
    (_set("ts.kind", "ComputeDomainChannelConfig"), f"{TS}.kind", ["compute-domain.nvidia.com"]),
    (_set("ts.sharing", {"timeSlicingConfig": {"interval": "Long"}}), f"{TS}.sharing.strategy",
     ["required"]),
]


@pytest.mark.parametrize(("mutate", "path", "words"), BROKEN_CONFIGS,
                         ids=[f"{p.rsplit('.', 1)[-1]}-{i}" for i, (_, p, _) in enumerate(BROKEN_CONFIGS)])
def test_broken_nvidia_configs_are_denied_at_the_field_to_change(
        mutate: Callable[[dict[str, Any]], None], path: str, words: list[str]) -> None:
    template = two_gpus_template()
    mutate(template)
    assert _api_server_accepts(template), "the API server alone would store this"
    message = _denied_at(template, path)
    for word in words:
        assert word in message


def test_parameters_that_are_not_an_object_are_denied() -> None:
    template = two_gpus_template()
    template["spec"]["spec"]["devices"]["config"][0]["opaque"]["parameters"] = "TimeSlicing"
    assert "GpuConfig" in _denied_at(template, TS)


def test_every_problem_in_one_object_is_reported_at_once() -> None:
    template = two_gpus_template()
    _ts(template)["sharing"]["timeSlicingConfig"]["interval"] = "long"
    _mps(template)["sharing"]["mpsConfig"]["defaultActiveThreadPercentage"] = 101
    result = validate_dra_object(template)
    assert _paths(result) == [f"{TS}.sharing.timeSlicingConfig.interval",
                              f"{MPS}.sharing.mpsConfig.defaultActiveThreadPercentage"]
    assert result.message().count("; spec.spec.devices") == 1


@pytest.mark.parametrize("sharing", [
    {"strategy": "TimeSlicing"},
    {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Default"}},
    {"strategy": "MPS"},
    {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 0, "defaultPinnedDeviceMemoryLimit": "1Mi",
                                      "defaultPerDevicePinnedMemoryLimit": {"0": "4Gi", "GPU-8a1b2c3d": 2147483648}}},
])
def test_valid_gpu_sharing_settings_are_allowed(sharing: dict[str, Any]) -> None:
    template = two_gpus_template()
    _ts(template)["sharing"] = sharing
    assert validate_dra_object(template).allowed


def _mig_claim(parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "mig", "namespace": "team-a"},
        "spec": {"devices": {
            "requests": [{"name": "mig", "exactly": {"deviceClassName": "mig.nvidia.com", "selectors": [
                {"cel": {"expression": "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}}]}}],
            "config": [{"requests": ["mig"], "opaque": {"driver": "gpu.nvidia.com", "parameters": {
                "apiVersion": "resource.nvidia.com/v1beta1", "kind": "MigDeviceConfig", **parameters}}}],
        }},
    }


def test_mig_devices_take_time_slicing_or_mps_but_no_time_slice_interval() -> None:
    assert validate_dra_object(_mig_claim({"sharing": {"strategy": "TimeSlicing"}})).allowed
    assert validate_dra_object(_mig_claim({"sharing": {"strategy": "MPS", "mpsConfig": {
        "defaultActiveThreadPercentage": 25}}})).allowed

    claim = _mig_claim({"sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Short"}}})
    assert _api_server_accepts(claim)
    message = _denied_at(claim, "spec.devices.config[0].opaque.parameters.sharing.timeSlicingConfig")
    assert "remove timeSlicingConfig" in message


def test_a_config_kind_that_does_not_fit_the_device_class_is_a_warning() -> None:
    claim = _mig_claim({})
    claim["spec"]["devices"]["config"][0]["opaque"]["parameters"]["kind"] = "GpuConfig"
    result = validate_dra_object(claim)
    assert result.allowed
    assert any("ignores a GpuConfig for mig.nvidia.com request 'mig'; use MigDeviceConfig" in w
               for w in result.warnings)


@pytest.mark.parametrize(("iommu", "ok"), [
    (None, True), ({"backendPolicy": "PreferIommuFD", "enableAPIDevice": True}, True),
    ({"backendPolicy": "IommuFD"}, False), ({"enableAPIDevice": True}, False),
])
def test_vfio_passthrough_configs_follow_the_driver(iommu: dict[str, Any] | None, ok: bool) -> None:
    claim = _mig_claim({})
    parameters = claim["spec"]["devices"]["config"][0]["opaque"]["parameters"]
    parameters["kind"] = "VfioDeviceConfig"
    if iommu is not None:
        parameters["iommu"] = iommu
    result = validate_dra_object(claim)
    assert result.allowed is ok
    if not ok:
        assert _paths(result) == ["spec.devices.config[0].opaque.parameters.iommu.backendPolicy"]


def test_other_drivers_opaque_configs_are_left_to_their_driver() -> None:
    claim = _mig_claim({"anything": {"goes": True}})
    claim["spec"]["devices"]["config"][0]["opaque"]["driver"] = "gpu.example.com"
    assert validate_dra_object(claim).allowed


# --- sharing that will not share --------------------------------------------------------------


def test_sharing_in_a_template_warns_that_each_pod_gets_its_own_gpu_and_a_claim_does_not() -> None:
    template = two_gpus_template()
    warnings = validate_dra_object(template).warnings
    assert "config[0]: TimeSlicing in a template shares a GPU only inside one pod; " \
           "to share across pods use a ResourceClaim" in warnings

    claim = {"apiVersion": template["apiVersion"], "kind": "ResourceClaim",
             "metadata": {"name": "shared"}, "spec": template["spec"]["spec"]}
    assert _api_server_accepts(claim)
    assert not [w for w in validate_dra_object(claim).warnings if "shares a GPU" in w]


def test_mps_multi_user_is_admitted_with_a_warning_that_released_drivers_refuse_it() -> None:
    """mpsConfig.multiUser shipped in driver v0.5.0 (sharing.go, 421c0f49); v0.4.1's
    kubelet plugin decodes opaque configs strictly (cmd/gpu-kubelet-plugin/device_state.go,
    configapi.StrictDecoder), so there the pod would sit in ContainerCreating.  The claim is
    valid for v0.5.0, so it is admitted, with a warning saying so."""
    template = two_gpus_template()
    _mps(template).setdefault("sharing", {}).setdefault("mpsConfig", {})["multiUser"] = True
    result = validate_dra_object(template)
    assert result.allowed
    (warning,) = [w for w in result.warnings if "multiUser" in w]
    assert "config[1]" in warning and "v0.5.0+" in warning and "v0.4.1 and older" in warning
    assert len(warning) <= 120

    assert not [w for w in validate_dra_object(two_gpus_template()).warnings if "multiUser" in w]


# --- request names in configs and constraints -------------------------------------------------


def test_a_config_naming_a_missing_request_is_denied_with_the_valid_names() -> None:
    template = two_gpus_template()
    template["spec"]["spec"]["devices"]["config"][1]["requests"] = ["mps-gpu", "mps_gpu"]
    message = _denied_at(template, "spec.spec.devices.config[1].requests[1]")
    assert "'mps_gpu'" in message and "mps-gpu, ts-gpu" in message


def test_a_constraint_naming_a_missing_request_is_denied() -> None:
    template = _fixture_object("gpu-test4-mig-devices", "mig-devices")
    template["spec"]["spec"]["devices"]["constraints"][0]["requests"] = ["mig-1g-5gb-0", "mig-4g-20gb"]
    _denied_at(template, "spec.spec.devices.constraints[0].requests[1]")


def test_configs_may_name_a_first_available_alternative() -> None:
    template = _fixture_object("prioritized-gpu", "prioritized-gpu")
    request = template["spec"]["spec"]["devices"]["requests"][0]
    alternative = request["firstAvailable"][0]["name"]
    config = {"requests": [f"{request['name']}/{alternative}"], "opaque": {"driver": "gpu.nvidia.com", "parameters": {
        "apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig", "sharing": {"strategy": "MPS"}}}}
    template["spec"]["spec"]["devices"]["config"] = [config]
    assert validate_dra_object(template).allowed
    config["requests"] = [f"{request['name']}/no-such-alternative"]
    _denied_at(template, "spec.spec.devices.config[0].requests[0]")


# --- version shapes ------------------------------------------------------------------------------


def test_a_v1_request_written_in_the_flat_v1beta1_shape_is_denied_with_the_move_to_make() -> None:
    template = v1beta1_template()
    template["apiVersion"] = "resource.k8s.io/v1"
    message = _denied_at(template, "spec.spec.devices.requests[0].deviceClassName")
    assert "under 'exactly:'" in message and "deviceClassName, count" in message


def test_a_v1beta1_request_using_exactly_is_denied() -> None:
    template = two_gpus_template()
    template["apiVersion"] = "resource.k8s.io/v1beta1"
    result = validate_dra_object(template)
    assert "spec.spec.devices.requests[0].exactly" in _paths(result)
    assert "move its fields up" in result.errors[0].message


def test_a_v1_request_needs_exactly_or_first_available() -> None:
    template = two_gpus_template()
    del template["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert "firstAvailable" in _denied_at(template, "spec.spec.devices.requests[0].exactly")


# --- CEL selectors ---------------------------------------------------------------------------------


def _with_selectors(template: dict[str, Any], *expressions: str) -> dict[str, Any]:
    template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [
        {"cel": {"expression": e}} for e in expressions]
    return template


def test_selectors_in_the_dra_cel_environment_are_allowed() -> None:
    template = _with_selectors(
        two_gpus_template(),
        'device.driver == "gpu.nvidia.com"',
        'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0',
        'device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("550.0.0"))',
    )
    assert validate_dra_object(template).allowed


def test_a_selector_that_does_not_compile_is_denied_with_its_position() -> None:
    template = _with_selectors(two_gpus_template(), 'device.driver == "gpu.nvidia.com"',
                               'device.attributes["gpu.nvidia.com"].productName ==')
    message = _denied_at(template, "spec.spec.devices.requests[0].exactly.selectors[1].cel.expression")
    assert re.search(r"at line 1, column \d+", message)
    assert message.endswith("fix the expression")


def test_the_position_of_an_error_in_a_multi_line_selector_names_its_line() -> None:
    template = _with_selectors(two_gpus_template(), 'device.driver == "gpu.nvidia.com" &&\n  gpu.memory > 1')
    assert "at line 2, column 3" in _denied_at(
        template, "spec.spec.devices.requests[0].exactly.selectors[0].cel.expression")


def test_a_selector_that_is_not_a_boolean_is_denied() -> None:
    template = _with_selectors(two_gpus_template(), 'device.driver')  # a string; attributes are dyn
    assert "bool" in _denied_at(template, "spec.spec.devices.requests[0].exactly.selectors[0].cel.expression")


def test_v1beta1_and_first_available_selectors_are_compiled_too() -> None:
    template = v1beta1_template()
    template["spec"]["spec"]["devices"]["requests"][0]["selectors"] = [{"cel": {"expression": "device.driver =="}}]
    _denied_at(template, "spec.spec.devices.requests[0].selectors[0].cel.expression")

    template = _fixture_object("prioritized-gpu", "prioritized-gpu")
    template["spec"]["spec"]["devices"]["requests"][0]["firstAvailable"][1]["selectors"] = [
        {"cel": {"expression": "device.nope"}}]
    _denied_at(template, "spec.spec.devices.requests[0].firstAvailable[1].selectors[0].cel.expression")


@pytest.mark.parametrize("expression", [
    "device.attributes['gpu.nvidia.com'].minor == 0",
    'device.attributes["gpu.nvidia.com"]["index"] < 4',
])
def test_removed_nvidia_attributes_warn_and_other_domains_do_not(expression: str) -> None:
    result = validate_dra_object(_with_selectors(two_gpus_template(), expression))
    assert result.allowed
    assert [w for w in result.warnings if "was removed in driver v25.8.0" in w]

    other = expression.replace("gpu.nvidia.com", "gpu.example.com")
    assert not [w for w in validate_dra_object(_with_selectors(two_gpus_template(), other)).warnings
                if "removed" in w]


# --- bad input never crashes ---------------------------------------------------------------------


@pytest.mark.parametrize(("obj", "path"), [
    (None, ""),
    ({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass"}, "kind"),
    ({"apiVersion": "v1", "kind": "ResourceClaim"}, "apiVersion"),
    ({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "spec": {}}, "spec.spec"),
    ({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "spec": {"devices": {"requests": "gpu"}}},
     "spec.devices.requests"),
])
def test_malformed_objects_get_a_finding_not_an_exception(obj: Any, path: str) -> None:
    result = validate_dra_object(obj)
    assert not result.allowed
    assert _paths(result) == [path]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["name", "exactly", "selectors", "cel", "expression", "config", "opaque", "driver",
                         "parameters", "sharing", "strategy", "mpsConfig", "requests", "firstAvailable"]),
        inner, max_size=4),
    max_leaves=12,
)
_paths_into_template = st.sampled_from([
    ("spec", "spec", "devices"), ("spec", "spec", "devices", "requests", 0),
    ("spec", "spec", "devices", "requests", 0, "exactly"), ("spec", "spec", "devices", "config", 0),
    ("spec", "spec", "devices", "config", 1, "opaque", "parameters"),
    ("spec", "spec", "devices", "config", 1, "opaque", "parameters", "sharing", "mpsConfig"),
])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(where=_paths_into_template, junk=_json)
def test_any_junk_anywhere_in_a_claim_yields_findings_or_a_pass_never_an_exception(
        where: tuple[Any, ...], junk: Any) -> None:
    template = two_gpus_template()
    node: Any = template
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = junk
    result = validate_dra_object(template)
    assert isinstance(result.allowed, bool)
    assert all(f.path and f.message for f in result.errors)
    assert all(len(w) <= MAX_WARNING_LENGTH for w in result.warnings)
