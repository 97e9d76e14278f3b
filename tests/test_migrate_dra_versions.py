"""migrate rewrites the input's own DRA objects (ResourceClaims, ResourceClaimTemplates, DeviceClasses)
written in a resource.k8s.io version the target cluster no longer serves (v1beta1 from Kubernetes
1.38: dra/facts.py DRA_API_VERSIONS) to the newest version it serves, as the API server converts
them: kubernetes/kubernetes pkg/apis/resource/v1beta1/conversion.go at
2e0908106e4420a601e50d6edfd41475de87a3e1 (``Convert_v1beta1_DeviceRequest_To_resource_DeviceRequest``:
the request fields of ``hasAnyMainRequestFieldsSet`` move under ``exactly``; ``firstAvailable`` stays).
Pods hold no DRA object of their own (``spec.resourceClaims`` names claims), so nothing inside a pod
spec is rewritten.  Without a cluster profile the target is unknown and nothing is rewritten.
"""

from __future__ import annotations

import copy
import json

import pytest
import yaml
from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from kubectl_gpu.dra.conversion import conversion_patch
from kubectl_gpu.manifests.tree_patch import apply_patch
from tests.strict_validation import assert_strictly_valid

SELECTOR = {"cel": {"expression": 'device.attributes["driver-a"].exists'}}

# TestConversion of pkg/apis/resource/v1beta1/conversion_test.go at 63595963cfefff52da6a74f5e05678e4d466d914,
# transcribed as data: the v1beta1 request, and the request of the served version (v1: the internal
# type's shape, which v1 shares field for field).
UPSTREAM_CASES = {
    "v1beta1 to internal without alternatives": (
        {"name": "foo", "deviceClassName": "class-a", "selectors": [SELECTOR], "allocationMode": "ExactCount",
         "count": 2},
        {"name": "foo", "exactly": {"deviceClassName": "class-a", "selectors": [SELECTOR],
                                    "allocationMode": "ExactCount", "count": 2}},
    ),
    "v1beta1 to internal with alternatives": (
        {"name": "foo", "firstAvailable": [
            {"name": "sub-1", "deviceClassName": "class-a", "selectors": [SELECTOR], "allocationMode": "ExactCount",
             "count": 2},
            {"name": "sub-2", "deviceClassName": "class-a", "selectors": [SELECTOR], "allocationMode": "ExactCount",
             "count": 1}]},
        None,  # unchanged: subrequests have one shape in every version
    ),
}


def claim(requests: list[dict], version: str = "v1beta1") -> dict:
    return {"apiVersion": f"resource.k8s.io/{version}", "kind": "ResourceClaim", "metadata": {"name": "c"},
            "spec": {"devices": {"requests": requests}}}


@pytest.mark.parametrize("case", list(UPSTREAM_CASES))
def test_a_v1beta1_request_converts_as_the_api_server_converts_it(case):
    before, after = UPSTREAM_CASES[case]
    obj = claim([copy.deepcopy(before)])

    conversion = conversion_patch(obj, "v1")
    assert conversion is not None
    apply_patch(obj, conversion.operations)

    assert obj == claim([after or before], "v1")
    assert_strictly_valid(obj, ("1.34", "1.35", "1.36", "1.37"))


def test_every_exact_field_moves_and_a_request_with_none_keeps_its_shape():
    """hasAnyMainRequestFieldsSet: deviceClassName, selectors, allocationMode, count, adminAccess,
    tolerations and capacity; a request naming none of them gets no `exactly`."""
    full = {"name": "r", "deviceClassName": "gpu.nvidia.com", "selectors": [SELECTOR], "allocationMode": "ExactCount",
            "count": 1, "adminAccess": True, "tolerations": [{"key": "k", "operator": "Exists"}],
            "capacity": {"requests": {"memory": "10Gi"}}}
    obj = claim([copy.deepcopy(full), {"name": "bare"}])

    conversion = conversion_patch(obj, "v1beta2")
    apply_patch(obj, conversion.operations)

    assert obj["spec"]["devices"]["requests"] == [
        {"name": "r", "exactly": {k: v for k, v in full.items() if k != "name"}}, {"name": "bare"}]
    assert obj["apiVersion"] == "resource.k8s.io/v1beta2" and conversion.requests_wrapped == 1


def test_a_request_that_already_holds_exactly_keeps_everything_it_holds():
    """v1beta1 has no `exactly`: a request carrying one beside flat fields (written half by hand) is
    not what the API server converts, and the rewrite must not replace what is under it."""
    obj = claim([{"name": "r", "deviceClassName": "x", "exactly": {"count": 2}}])
    conversion = conversion_patch(obj, "v1")
    apply_patch(obj, conversion.operations)
    assert obj["spec"]["devices"]["requests"] == [{"name": "r", "deviceClassName": "x", "exactly": {"count": 2}}]
    assert conversion.requests_wrapped == 0


def test_objects_in_a_served_or_other_version_and_other_kinds_are_not_converted():
    assert conversion_patch(claim([{"name": "r", "exactly": {}}], "v1"), "v1") is None
    assert conversion_patch({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}, "v1") is None
    assert conversion_patch({**claim([]), "kind": "ResourceSlice"}, "v1") is None
    # To an older shape is never asked for; it would be wrong to relabel only.
    assert conversion_patch(claim([{"name": "r", "exactly": {"deviceClassName": "x"}}], "v1beta2"), "v1beta1") is None


# --- through migrate -----------------------------------------------------------------------------

CLUSTER = {"apiVersion": "v1", "kind": "List", "items": [
    {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.nvidia.com"},
     "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "n1-gpu"},
     "spec": {"driver": "gpu.nvidia.com", "nodeName": "n1", "pool": {"name": "n1", "generation": 1,
                                                                       "resourceSliceCount": 1},
              "devices": [{"name": f"gpu-{i}", "attributes": {"type": {"string": "gpu"}},
                           "capacity": {"memory": {"value": "80Gi"}}} for i in range(2)]}}]}

MANIFESTS = """\
# Shared by the training job (kept as written)
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaimTemplate
metadata:
  name: two-gpus
  namespace: ml
spec:
  spec:
    devices:
      requests:
      # the GPUs themselves
      - name: gpus
        deviceClassName: gpu.nvidia.com
        allocationMode: ExactCount
        count: 2  # one per rank
---
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata:
  name: any-gpu
  namespace: ml
spec:
  devices:
    requests:
    - name: gpu
      firstAvailable:
      - name: big
        deviceClassName: gpu.nvidia.com
        selectors:
        - cel:
            expression: device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) >= 0
      - name: any
        deviceClassName: gpu.nvidia.com
---
apiVersion: resource.k8s.io/v1beta1
kind: DeviceClass
metadata:
  name: team-gpus
spec:
  selectors:
  - cel:
      expression: device.driver == 'gpu.nvidia.com'
"""


def migrate(tmp_path, *args: str, text: str = MANIFESTS):
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps(CLUSTER))
    manifests = tmp_path / "dra.yaml"
    manifests.write_text(text)
    return CliRunner().invoke(main, ["migrate", str(manifests), "--cluster", str(cluster), *args])


def test_for_a_1_38_cluster_the_inputs_v1beta1_objects_are_rewritten_to_v1_with_their_comments(tmp_path):
    result = migrate(tmp_path, "--kubernetes-version", "1.38")

    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "resource.k8s.io/v1beta1" not in out
    assert "# Shared by the training job (kept as written)" in out and "# the GPUs themselves" in out
    assert "count: 2 # one per rank" in out  # a moved key keeps the comment on its line
    template, any_gpu, device_class = list(yaml.safe_load_all(out))
    assert template["apiVersion"] == "resource.k8s.io/v1"
    assert template["spec"]["spec"]["devices"]["requests"] == [
        {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 2}}]
    assert any_gpu["apiVersion"] == "resource.k8s.io/v1"
    assert any_gpu["spec"] == yaml.safe_load(MANIFESTS.split("---\n")[1])["spec"]  # firstAvailable as it was
    assert device_class == {**yaml.safe_load(MANIFESTS.split("---\n")[2]), "apiVersion": "resource.k8s.io/v1"}
    for obj in (template, any_gpu, device_class):
        assert_strictly_valid(obj, ("1.34", "1.35", "1.36", "1.37"))
    # One report line per object, saying why.
    assert result.stderr.count("apiVersion: resource.k8s.io/v1beta1 -> resource.k8s.io/v1") == 3
    assert "Kubernetes 1.38 does not serve v1beta1" in result.stderr
    assert "3 DRA object(s) rewritten to a served version" in result.stderr


def test_the_rewrite_is_idempotent(tmp_path):
    once = migrate(tmp_path, "--kubernetes-version", "1.38").stdout

    again = migrate(tmp_path, "--kubernetes-version", "1.38", "--check", text=once)

    assert again.exit_code == 0, again.output


def test_check_reports_that_the_v1beta1_objects_would_be_rewritten(tmp_path):
    result = migrate(tmp_path, "--kubernetes-version", "1.38", "--check")

    assert result.exit_code == 1 and "(would be migrated)" in result.stderr


def test_a_release_that_still_serves_v1beta1_leaves_them_as_written(tmp_path):
    result = migrate(tmp_path, "--kubernetes-version", "1.37")

    assert result.exit_code == 0, result.output
    assert result.stdout == MANIFESTS and "->" not in result.stderr


def test_without_a_cluster_profile_nothing_is_rewritten(tmp_path):
    manifests = tmp_path / "dra.yaml"
    manifests.write_text(MANIFESTS)

    result = CliRunner().invoke(main, ["migrate", str(manifests)])

    assert result.exit_code == 0 and result.stdout == MANIFESTS


def test_a_pod_needing_the_same_claim_template_as_a_rewritten_one_finds_it_present(tmp_path):
    """The pre-scan knows the input's claims by their rewritten specs: a v1beta1 template equal to what
    migrate would write is not reported as different."""
    first = migrate(tmp_path, "--kubernetes-version", "1.38", text=(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ml}\nspec:\n  containers:\n  - name: c\n"
        "    image: cuda\n    resources: {limits: {nvidia.com/gpu: 1}}\n"))
    written = [d for d in yaml.safe_load_all(first.stdout) if d["kind"] == "ResourceClaimTemplate"][0]
    request = written["spec"]["spec"]["devices"]["requests"][0]
    flat = {**written, "apiVersion": "resource.k8s.io/v1beta1"}
    flat["spec"]["spec"]["devices"]["requests"] = [{"name": request["name"], **request["exactly"]}]
    pod = first.stdout.split("---\n")[-1]

    result = migrate(tmp_path, "--kubernetes-version", "1.38", text=yaml.safe_dump(flat) + "---\n" + pod)

    assert result.exit_code == 0, result.output
    assert "different spec" not in result.stderr


def test_api_version_v1beta1_for_a_1_38_cluster_is_an_error_saying_what_to_change(tmp_path):
    result = migrate(tmp_path, "--kubernetes-version", "1.38", "--api-version", "v1beta1")

    assert result.exit_code == 2
    assert "--api-version v1beta1: Kubernetes 1.38 no longer serves resource.k8s.io/v1beta1" in result.stderr
    assert "use --api-version v1 or v1beta2, or leave --api-version out" in result.stderr
    assert "Traceback" not in result.output


def test_api_version_v1beta1_for_a_1_37_cluster_is_still_written(tmp_path):
    result = migrate(tmp_path, "--kubernetes-version", "1.37", "--api-version", "v1beta1")

    assert result.exit_code == 0, result.output


def test_the_inputs_dra_objects_follow_the_api_version_asked_for_when_the_target_serves_it(tmp_path):
    """--api-version says which version the emitted claims use; the input's own claims that must move
    (v1beta1 on 1.38) move to the same one, so one run never writes two versions for one cluster."""
    result = migrate(tmp_path, "--kubernetes-version", "1.38", "--api-version", "v1beta2")
    assert result.exit_code == 0, result.output
    versions = {d["apiVersion"] for d in yaml.safe_load_all(result.stdout) if d and d["kind"].startswith("Resource")}
    assert versions == {"resource.k8s.io/v1beta2"}
