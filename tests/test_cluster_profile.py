"""migrate fitted to the target cluster: the API version it serves, the gates it runs, the GPUs it has.

Sources: Kubernetes' feature gate table (kubernetes/kubernetes pkg/features/kube_features.go,
defaultVersionedKubernetesFeatureGates); the resource.k8s.io versions per release (v1beta1 in 1.32,
v1beta2 in 1.33, v1 GA in 1.34); the Kubernetes API reference for DeviceCapacity.requestPolicy
("If unset, ... If request is also unset, default is the full capacity value"); NVIDIA's driver
(kubernetes-sigs/dra-driver-nvidia-gpu cmd/gpu-kubelet-plugin/consumable_shares.go: in its
`unlimited` and `N` modes the memory requestPolicy default is 0).
"""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from click.testing import CliRunner

from kubectl_gpu.dra.gates import default_gates
from kubectl_gpu.cli.main import main
from kubectl_gpu.cluster import ProfileError, build_profile, parse_feature_gates, load_profile_files, read_live_profile
from kubectl_gpu.explain import explain_objects
from kubectl_gpu.k8s import Client
from kubectl_gpu.k8s.rest import get_json
from tests.k8sdouble import K8sDouble

DATA = Path(__file__).parent / "data"
SHARES = DATA / "cluster" / "h100-unlimited-shares.yaml"
H100_NODE = DATA / "slices" / "nvidia-h100-node.yaml"
A100_MIG_V1BETA1 = DATA / "slices" / "nvidia-a100-mig-v1beta1.yaml"

HALF_GPU_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: notebook, namespace: ml}
spec:
  selector: {matchLabels: {app: notebook}}
  template:
    metadata: {labels: {app: notebook}}
    spec:
      containers:
      - name: main
        image: jupyter
        resources:
          limits: {nvidia.com/gpumem: "20000", nvidia.com/gpu: "1"}
"""

WHOLE_GPU_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: ml}
spec:
  containers:
  - name: main
    image: trainer
    resources:
      limits: {nvidia.com/gpu: "%s"}
"""

L40S_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: render, namespace: ml}
spec:
  nodeSelector: {nvidia.com/gpu.product: NVIDIA-L40S}
  containers:
  - name: main
    image: render
    resources:
      limits: {nvidia.com/gpu: "1"}
"""


def migrate(text: str, *options: str):
    result = CliRunner().invoke(main, ["migrate", *options, "-"], input=text)
    docs = [d for d in yaml.safe_load_all(result.stdout) if d is not None] if result.exit_code in (0, 3) else []
    return result, docs


def claims_of(docs):
    return [d for d in docs if d["kind"] in ("ResourceClaimTemplate", "ResourceClaim")]


def request_of(claim):
    spec = claim["spec"]["spec"] if claim["kind"] == "ResourceClaimTemplate" else claim["spec"]
    [request] = spec["devices"]["requests"]
    return request


def assert_valid_for(obj, versions):
    for version in versions:
        kubernetes_validate.validate(obj, version, strict=True)


# --- feature gates ------------------------------------------------------------------------------


def test_gate_defaults_follow_kubernetes_feature_gate_table() -> None:
    assert "DRAPrioritizedList" not in default_gates(33)  # alpha in 1.33
    assert "DRAPrioritizedList" in default_gates(34)  # beta, on by default
    for minor in (34, 35):  # alpha: off
        assert not {"DRAConsumableCapacity", "DRAExtendedResource"} & default_gates(minor)
    assert {"DRAConsumableCapacity", "DRAExtendedResource", "DRADeviceTaints"} <= default_gates(36)
    assert "DynamicResourceAllocation" not in default_gates(33) and "DynamicResourceAllocation" in default_gates(34)


def test_feature_gate_overrides_use_kube_apiserver_syntax_and_name_what_is_wrong() -> None:
    assert parse_feature_gates("DRAConsumableCapacity=true, DRAPrioritizedList=false") == {
        "DRAConsumableCapacity": True, "DRAPrioritizedList": False}
    with pytest.raises(ProfileError, match="NAME=true or NAME=false"):
        parse_feature_gates("DRAConsumableCapacity")
    with pytest.raises(ProfileError, match="not a DRA gate"):
        parse_feature_gates("DRAConsumableCapacty=true")


# --- profile from files ---------------------------------------------------------------------------


def test_profile_files_give_the_served_version_and_prove_consumable_capacity_on() -> None:
    profile = load_profile_files([str(SHARES)])
    assert profile.served_versions == ("v1",) and profile.kubernetes_minor == 34
    # 1.34's default has the gate off, but the API server drops allowMultipleAllocations while it is
    # off, so a slice carrying it proves it on.
    assert profile.gate("DRAConsumableCapacity")
    assert [c["metadata"]["name"] for c in profile.device_classes] == ["gpu.nvidia.com"]
    assert len(profile.devices) == 2


def test_a_profile_of_nothing_usable_is_a_usage_error_saying_what_to_pass(tmp_path) -> None:
    empty = tmp_path / "pods.yaml"
    empty.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n")
    result, _ = migrate(WHOLE_GPU_POD % 1, "--cluster", str(empty))
    assert result.exit_code == 2 and "kubectl get resourceslices,deviceclasses -o yaml" in result.stderr
    result, _ = migrate(WHOLE_GPU_POD % 1, "--cluster", str(tmp_path / "missing.yaml"))
    assert result.exit_code == 2 and "no such file or directory" in result.stderr
    result, _ = migrate(WHOLE_GPU_POD % 1, "--feature-gates", "DRAPrioritizedList=true")
    assert result.exit_code == 2 and "add --cluster" in result.stderr


def test_a_v1beta1_cluster_gets_v1beta1_claims_valid_for_1_32() -> None:
    result, docs = migrate(WHOLE_GPU_POD % 1, "--cluster", str(A100_MIG_V1BETA1))
    [claim] = claims_of(docs)
    assert result.exit_code == 0, result.stderr
    assert claim["apiVersion"] == "resource.k8s.io/v1beta1"
    assert request_of(claim)["deviceClassName"] == "gpu.nvidia.com"  # flat v1beta1 request
    assert_valid_for(claim, ["1.32", "1.33"])
    assert "v1beta1, the newest resource.k8s.io version the cluster serves" in result.stderr


# --- every claim is checked against the devices ---------------------------------------------------


def test_a_claim_no_device_can_satisfy_is_an_error_with_explains_reason_and_the_pod_is_left_alone() -> None:
    result, docs = migrate(L40S_POD, "--cluster", str(H100_NODE))
    assert result.exit_code == 3
    assert "no device in the cluster can satisfy it" in result.stderr
    assert "productName" in result.stderr and "matches none of 8 device(s)" in result.stderr
    [pod] = docs
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert not claims_of(docs)


def test_more_gpus_than_any_node_has_is_an_error() -> None:
    result, _ = migrate(WHOLE_GPU_POD % 9, "--cluster", str(H100_NODE))
    assert result.exit_code == 3 and "needs 9 devices" in result.stderr
    ok, docs = migrate(WHOLE_GPU_POD % 8, "--cluster", str(H100_NODE))
    assert ok.exit_code == 0 and claims_of(docs)


# --- --sharing auto --------------------------------------------------------------------------------


def test_sharing_auto_without_a_profile_gives_whole_gpus_and_says_why() -> None:
    result, docs = migrate(HALF_GPU_DEPLOYMENT)
    [claim] = claims_of(docs)
    assert "capacity" not in request_of(claim)["exactly"]
    assert "--sharing auto without a cluster profile" in result.stderr


def test_sharing_auto_on_gpus_without_multiple_allocations_gives_whole_gpus_and_says_why() -> None:
    result, docs = migrate(HALF_GPU_DEPLOYMENT, "--cluster", str(H100_NODE))
    [claim] = claims_of(docs)
    assert "capacity" not in request_of(claim)["exactly"]
    assert "no NVIDIA GPU in the cluster advertises allowMultipleAllocations" in result.stderr


def test_sharing_auto_where_the_gate_is_off_gives_whole_gpus(tmp_path) -> None:
    result, docs = migrate(HALF_GPU_DEPLOYMENT, "--cluster", str(SHARES), "--feature-gates",
                           "DRAConsumableCapacity=false")
    assert "DRAConsumableCapacity feature gate is off" in result.stderr
    assert "capacity" not in request_of(claims_of(docs)[0])["exactly"]


def test_sharing_auto_on_shareable_gpus_gives_a_memory_share_and_names_the_driver_requirements() -> None:
    result, docs = migrate(HALF_GPU_DEPLOYMENT, "--cluster", str(SHARES))
    assert result.exit_code == 0, result.stderr
    [claim] = claims_of(docs)
    assert request_of(claim)["exactly"]["capacity"] == {"requests": {"memory": "20000Mi"}}
    assert "ConsumableShares feature gate" in result.stderr and "not enforced" in result.stderr
    assert_valid_for(claim, ["1.34", "1.35", "1.36", "1.37"])


def test_whole_gpu_claims_stay_whole_on_gpus_whose_shares_default_to_nothing() -> None:
    """In the driver's unlimited mode a claim without a capacity request consumes 0 memory, so two
    whole-GPU claims would stack on one GPU; asking for the GPU's full memory takes all of it."""
    result, docs = migrate(WHOLE_GPU_POD % 1, "--cluster", str(SHARES))
    assert result.exit_code == 0, result.stderr
    [claim] = claims_of(docs)
    assert request_of(claim)["exactly"]["capacity"] == {"requests": {"memory": "81559Mi"}}
    assert_valid_for(claim, ["1.34", "1.37"])
    # Allocated to gpu-0, it leaves nothing of gpu-0 for another whole-GPU claim.
    first = yaml.safe_load(yaml.safe_dump(claim))
    first.update(kind="ResourceClaim", spec=claim["spec"]["spec"])
    first["metadata"]["name"] = "first"
    first["status"] = {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "shares-node-1", "device": "gpu-0",
         "consumedCapacity": {"memory": "81559Mi"}}]}}}
    second = {**first, "metadata": {"name": "second", "namespace": "ml"}}
    second.pop("status")
    profile = load_profile_files([str(SHARES)])
    report = explain_objects([second], profile.resource_slices, profile.device_classes, allocated_claims=[first])
    [alternative] = report.items[0].requests[0].alternatives
    gpu0 = next(d for d in alternative.device_results if d.device.endswith("/gpu-0"))
    assert not gpu0.free and alternative.free == 1


def test_sharing_timeslicing_report_says_one_claim_pins_every_replica_to_its_node_and_needs_the_gate() -> None:
    result, _ = migrate(HALF_GPU_DEPLOYMENT, "--sharing", "timeslicing")
    assert "TimeSlicingSettings" in result.stderr
    assert "all such pods run on the node holding it" in result.stderr


# --- the live cluster -------------------------------------------------------------------------------


def slices_as(path: Path, version: str) -> list[dict]:
    """The fixture's slices as the API server of that version stores them (v1beta2 has v1's shape)."""
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    return [{**d, "apiVersion": f"resource.k8s.io/{version}"} for d in docs] if version == "v1beta2" else docs


@pytest.mark.parametrize("minor, disabled, slices, gpus, expected", [
    ("1.32", ["resource.k8s.io/v1", "resource.k8s.io/v1beta2"], (A100_MIG_V1BETA1, "v1beta1"), 1, "v1beta1"),
    ("1.33", ["resource.k8s.io/v1"], (H100_NODE, "v1beta2"), 2, "v1beta2"),
    ("1.34", [], (H100_NODE, "v1"), 2, "v1"),
])
def test_from_cluster_writes_the_version_the_api_server_serves(minor, disabled, slices, gpus, expected) -> None:
    with K8sDouble(kubernetes_version=minor, disabled_group_versions=disabled) as api:
        api.seed(*slices_as(*slices))
        result = CliRunner(env={"KUBECONFIG": api.kubeconfig_path()}).invoke(
            main, ["migrate", "--from-cluster", "-"], input=WHOLE_GPU_POD % gpus)
    assert result.exit_code == 0, result.stderr
    [claim] = claims_of([d for d in yaml.safe_load_all(result.stdout) if d])
    assert claim["apiVersion"] == f"resource.k8s.io/{expected}"
    assert_valid_for(claim, [minor])
    assert f"Kubernetes {minor}" in result.stderr


def test_live_profile_reads_version_and_devices_through_any_json_getter() -> None:
    with K8sDouble(kubernetes_version="1.33", disabled_group_versions=["resource.k8s.io/v1"]) as api:
        api.seed(*slices_as(H100_NODE, "v1beta2"))
        client = Client(api.api_client().configuration)
        profile = read_live_profile(lambda path, query: get_json(client, path, query), "double")
    assert profile.kubernetes_minor == 33 and profile.served_versions == ("v1beta2", "v1beta1")
    assert profile.api_version.value == "resource.k8s.io/v1beta2" and len(profile.devices) == 8
    assert not profile.gate("DRAPrioritizedList")


# kube-apiserver /metrics, as a 1.35 server scrapes (component-base metrics/prometheus/feature/metrics.go:
# gauge kubernetes_feature_enabled, labels name and stage, 1 or 0; other series around it).
APISERVER_METRICS = """\
# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",verb="GET"} 4012
# HELP kubernetes_feature_enabled [BETA] This metric records the data about the stage and enablement of a k8s feature.
# TYPE kubernetes_feature_enabled gauge
kubernetes_feature_enabled{name="DRAConsumableCapacity",stage="ALPHA"} 1
kubernetes_feature_enabled{name="DRAPrioritizedList",stage="BETA"} 0
kubernetes_feature_enabled{stage="",name="DynamicResourceAllocation"} 1
kubernetes_feature_enabled{name="InPlacePodVerticalScaling",stage="BETA"} 1
"""


def test_feature_metrics_are_read_as_the_api_server_reports_them() -> None:
    from kubectl_gpu.cluster.profile import parse_feature_metrics

    assert parse_feature_metrics(APISERVER_METRICS) == {
        "DRAConsumableCapacity": True, "DRAPrioritizedList": False, "DynamicResourceAllocation": True,
        "InPlacePodVerticalScaling": True}


def test_from_cluster_takes_the_gates_from_the_api_servers_metrics() -> None:
    """A 1.35 API server with DRAConsumableCapacity turned on and DRAPrioritizedList off: the
    version's defaults say the opposite of both, /metrics says what the server runs with."""
    with K8sDouble(kubernetes_version="1.35") as api:
        api.seed(*slices_as(H100_NODE, "v1"))
        api.set_feature_gates({"DRAConsumableCapacity": True}, stage="ALPHA")
        api.set_feature_gates({"DRAPrioritizedList": False, "DynamicResourceAllocation": True})
        client = Client(api.api_client().configuration)
        profile = read_live_profile(lambda path, query: get_json(client, path, query), "double",
                                    fetch_text=client.get_text)
        result = CliRunner(env={"KUBECONFIG": api.kubeconfig_path()}).invoke(
            main, ["migrate", "--from-cluster", "-"], input=WHOLE_GPU_POD % 1)
    assert profile.gate("DRAConsumableCapacity") and not profile.gate("DRAPrioritizedList")
    assert "the API server's /metrics for 3 DRA gate(s)" in profile.gates_source
    assert result.exit_code == 0, result.stderr
    assert "the API server's /metrics" in result.stderr


def test_from_cluster_without_metrics_permission_keeps_the_defaults_and_says_so() -> None:
    """RBAC: /metrics is a nonResourceURL; without `get` on it the API server answers 403."""
    with K8sDouble(kubernetes_version="1.35") as api:
        api.seed(*slices_as(H100_NODE, "v1"))
        api.set_feature_gates({"DRAPrioritizedList": False})
        api.forbid_path("/metrics")
        result = CliRunner(env={"KUBECONFIG": api.kubeconfig_path()}).invoke(
            main, ["migrate", "--from-cluster", "-"], input=WHOLE_GPU_POD % 1)
    assert result.exit_code == 0, result.stderr
    assert "defaults of Kubernetes 1.35 (/metrics is forbidden: grant get on nonResourceURL /metrics" in result.stderr
    assert "DRAPrioritizedList" in result.stderr.split("DRA gates on")[1].split(";")[0], "1.35 default kept"


def test_from_cluster_that_cannot_be_reached_exits_4_without_a_traceback(tmp_path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    with K8sDouble() as api:
        kubeconfig.write_text(Path(api.kubeconfig_path()).read_text())
    result = CliRunner(env={"KUBECONFIG": str(kubeconfig)}).invoke(main, ["migrate", "--from-cluster", "-"],
                                                             input=WHOLE_GPU_POD % 1)
    assert result.exit_code == 4 and "cannot read the cluster profile" in result.stderr  # unreachable
    assert "Traceback" not in result.stderr


def test_build_profile_from_objects_without_dra_objects_serves_nothing() -> None:
    profile = build_profile("nothing", objects=[{"apiVersion": "v1", "kind": "Node"}])
    assert profile.api_version is None and profile.devices == ()


def test_live_explain_compiles_under_the_clusters_gates() -> None:
    """k8s.io/dynamic-resource-allocation/cel (compile.go, Features.EnableConsumableCapacity):
    device.allowMultipleAllocations is declared only with DRAConsumableCapacity, off by default in
    1.34-1.35.  A pod's ResourceClaimTemplate becomes a claim on CREATE, which the API server compiles
    as new expressions under its gates (pkg/apis/resource/validation ValidateResourceClaim, stored=false).
    Live `explain POD` compiles as that API server would: its own gates from /metrics, else its
    version's defaults (not kubectl-gpu's newest release)."""
    template = yaml.safe_load(SHARED_ONLY_CLAIM)
    template = {**template, "kind": "ResourceClaimTemplate", "spec": {"spec": template["spec"]}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
           "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "shared-only"}],
                    "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}]}}

    def explain(api, *args):
        return CliRunner(env={"KUBECONFIG": api.kubeconfig_path()}).invoke(main, ["explain", *args, "-n", "ml"])

    with K8sDouble(kubernetes_version="1.35") as api:
        api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
                 *slices_as(H100_NODE, "v1"), template, pod)
        api.forbid_path("/metrics")
        off = explain(api, "p")
        assert "compile" in off.stdout and "allowMultipleAllocations" in off.stdout, off.stdout
    with K8sDouble(kubernetes_version="1.35") as api:
        api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
                 *slices_as(H100_NODE, "v1"), template, pod)
        api.set_feature_gates({"DRAConsumableCapacity": True}, stage="ALPHA")
        on = explain(api, "p")
        assert "compile" not in on.stdout, on.stdout
        flagged = explain(api, "p", "--feature-gates", "DRAConsumableCapacity=false")
        assert "compile" in flagged.stdout


# --- DRA's own fallbacks: firstAvailable ------------------------------------------------------------


def a100_mig_cluster(tmp_path: Path, version: str) -> str:
    """The A100 static-MIG node as a 1.33+/1.34+ API server serves it (v1beta2/v1 drop `basic:`)."""
    objects = []
    for doc in yaml.safe_load_all(A100_MIG_V1BETA1.read_text()):
        if not doc:
            continue
        devices = [{"name": d["name"], **d["basic"]} for d in doc["spec"]["devices"]]
        objects.append({**doc, "apiVersion": f"resource.k8s.io/{version}", "spec": {**doc["spec"], "devices": devices}})
    path = tmp_path / f"a100-{version}.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    return str(path)


SMALL_SHARE_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: infer, namespace: ml}
spec:
  containers:
  - name: main
    image: infer
    resources:
      limits: {nvidia.com/gpumem: "4000", nvidia.com/gpu: "1"}
"""


def test_prioritized_list_tries_the_smallest_mig_that_holds_the_memory_then_a_whole_gpu(tmp_path) -> None:
    cluster = a100_mig_cluster(tmp_path, "v1")
    result, docs = migrate(SMALL_SHARE_POD, "--cluster", cluster, "--kubernetes-version", "1.34")
    assert result.exit_code == 0, result.stderr
    [claim] = claims_of(docs)
    request = request_of(claim)
    assert [s["name"] for s in request["firstAvailable"]] == ["mig", "whole"]
    mig, whole = request["firstAvailable"]
    assert mig["deviceClassName"] == "mig.nvidia.com" and '"1g.5gb"' in mig["selectors"][0]["cel"]["expression"]
    assert whole["deviceClassName"] == "gpu.nvidia.com"
    assert "first available of: MIG 1g.5gb (4864Mi), else a whole GPU" in result.stderr
    assert_valid_for(claim, ["1.34", "1.35", "1.36", "1.37"])
    # explain: the scheduler would take the MIG device, on the A100 node.
    profile = load_profile_files([cluster])
    [item] = explain_objects([claim], profile.resource_slices, profile.device_classes).items
    assert item.allocatable and item.requests[0].chosen.endswith("/mig") and item.node == "a100-node-1"


def test_prioritized_list_on_shareable_gpus_offers_mig_then_a_share_then_a_whole_gpu(tmp_path) -> None:
    mixed = yaml.safe_load(SHARES.read_text())["items"] + list(yaml.safe_load_all(
        Path(a100_mig_cluster(tmp_path, "v1")).read_text()))
    path = tmp_path / "mixed.yaml"
    path.write_text(yaml.safe_dump_all(mixed))
    result, docs = migrate(SMALL_SHARE_POD, "--cluster", str(path), "--sharing", "consumable")
    assert result.exit_code == 0, result.stderr
    request = request_of(claims_of(docs)[0])
    assert [s["name"] for s in request["firstAvailable"]] == ["mig", "share", "whole"]
    assert request["firstAvailable"][1]["capacity"] == {"requests": {"memory": "4000Mi"}}


def test_no_prioritized_list_where_the_gate_is_off(tmp_path) -> None:
    cluster = a100_mig_cluster(tmp_path, "v1beta2")  # 1.33: DRAPrioritizedList is alpha, off
    result, docs = migrate(SMALL_SHARE_POD, "--cluster", cluster)
    assert "firstAvailable" not in request_of(claims_of(docs)[0])
    on, docs = migrate(SMALL_SHARE_POD, "--cluster", cluster, "--feature-gates", "DRAPrioritizedList=true")
    [claim] = claims_of(docs)
    assert claim["apiVersion"] == "resource.k8s.io/v1beta2" and "firstAvailable" in request_of(claim)
    assert_valid_for(claim, ["1.33"])


HALF_GPU_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: half, namespace: ml}
spec:
  containers:
  - name: main
    image: cuda
    resources:
      limits: {nvidia.com/gpu: 500m}
"""
A100_MIG_NODE = DATA / "driver" / "a100-mig.yaml"


def test_half_a_gpu_on_an_all_mig_cluster_says_how_to_size_it() -> None:
    """A GPU in MIG mode is not published itself (the driver's nvlib.go GetPerGpuAllocatableDevices),
    so nothing in the profile says how much memory half a GPU is: the warning names the one flag that
    lets the share be matched to a published MIG profile."""
    result, _ = migrate(HALF_GPU_POD, "--cluster", str(A100_MIG_NODE))
    assert result.exit_code == 3
    assert "--gpu-memory" in result.stderr and "MIG profile" in result.stderr


def test_half_a_gpu_is_the_mig_profile_nvidia_sells_as_half(tmp_path) -> None:
    """NVIDIA's 3g.40gb is half an A100-80GB (4 of its 8 memory slices: memorySlice0-3 in the fixture)
    but publishes 40192Mi, under half of 80Gi: a fraction is sized from a nominal GPU memory, so it
    matches a MIG profile within the memory window the translation uses for GPU sizes (95%).  A memory
    figure the legacy request stated itself is still matched only by a profile that holds all of it."""
    result, docs = migrate(HALF_GPU_POD, "--cluster", str(A100_MIG_NODE), "--gpu-memory", "80Gi")
    assert result.exit_code == 0, result.stderr
    [claim] = claims_of(docs)
    mig, whole = request_of(claim)["firstAvailable"]
    assert '"3g.40gb"' in mig["selectors"][0]["cel"]["expression"] and whole["name"] == "whole"
    profile = load_profile_files([str(A100_MIG_NODE)])
    [item] = explain_objects([claim], profile.resource_slices, profile.device_classes).items
    assert item.allocatable and item.requests[0].chosen.endswith("/mig")

    stated = HALF_GPU_POD.replace("{nvidia.com/gpu: 500m}", '{nvidia.com/gpumem: "40960", nvidia.com/gpu: "1"}')
    strict, docs = migrate(stated, "--cluster", str(A100_MIG_NODE))
    assert "MIG 3g.40gb" not in strict.stderr and "first available" not in strict.stderr


# --- KEP-5004 DeviceClasses ---------------------------------------------------------------------------

MIG_PODS = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: small, namespace: ml}
spec:
  selector: {matchLabels: {app: small}}
  template:
    metadata: {labels: {app: small}}
    spec:
      containers:
      - name: main
        image: cuda
        resources:
          limits: {nvidia.com/mig-1g.10gb.me: "1"}
---
apiVersion: v1
kind: Pod
metadata: {name: big, namespace: ml}
spec:
  containers:
  - name: main
    image: cuda
    resources:
      limits: {nvidia.com/mig-3g.40gb: "2"}
"""


def test_device_classes_map_each_requested_mig_resource_to_the_drivers_profile() -> None:
    """NVIDIA's own example (dra-driver-nvidia-gpu demo/specs/extended-resources/mig-1g-12gb.yaml):
    class mig-1g-12gb.gpu.nvidia.com, type == 'mig' and profile == '1g.12gb', extendedResourceName
    nvidia.com/mig-1g.12gb.  The device plugin spells `1g.10gb+me` as `nvidia.com/mig-1g.10gb.me`."""
    result, docs = migrate(MIG_PODS, "--device-classes")
    assert result.exit_code == 0, result.stderr
    classes = {d["metadata"]["name"]: d for d in docs if d["kind"] == "DeviceClass"}
    assert set(classes) == {"mig-1g-10gb-me.gpu.nvidia.com", "mig-3g-40gb.gpu.nvidia.com"}
    me = classes["mig-1g-10gb-me.gpu.nvidia.com"]
    assert me["spec"]["extendedResourceName"] == "nvidia.com/mig-1g.10gb.me"
    assert "profile == '1g.10gb+me'" in me["spec"]["selectors"][0]["cel"]["expression"]
    for obj in classes.values():
        assert_valid_for(obj, ["1.34", "1.35", "1.36", "1.37"])
    assert "nvidia.com/mig-1g.10gb.me (1 pod template(s))" in result.stderr
    assert "left as they are" in result.stderr and "DRAExtendedResource" in result.stderr
    assert [d["kind"] for d in docs][:2] == ["DeviceClass", "DeviceClass"]  # before the manifests


def test_mig_requests_the_emitted_classes_serve_are_left_for_the_scheduler() -> None:
    """KEP-5004 (kubernetes/enhancements keps/sig-scheduling/5004-dra-extended-resource): "All devices
    matched by the device class can be used to satisfy the extended resource requests in pod's spec"
    for the class whose extendedResourceName is the requested name; the pod is not modified.  The gate
    DRAExtendedResource (kep.yaml: alpha v1.34, beta v1.36; kube-apiserver, kube-scheduler, kubelet)."""
    result, docs = migrate(MIG_PODS, "--device-classes")
    assert result.exit_code == 0, result.stderr
    assert not claims_of(docs)
    requested = {k for d in docs if d["kind"] in ("Deployment", "Pod")
                 for k in (d["spec"]["template"]["spec"] if d["kind"] == "Deployment" else d["spec"])
                 ["containers"][0]["resources"]["limits"]}
    assert requested == {"nvidia.com/mig-1g.10gb.me", "nvidia.com/mig-3g.40gb"}
    served = {d["spec"]["extendedResourceName"] for d in docs if d["kind"] == "DeviceClass"}
    assert requested <= served, "each request is served by a class of exactly its name"
    assert "off by default in 1.34-1.35, on by default from 1.36" in result.stderr
    assert "nvidia.com/mig-1g.10gb.me: 1 left as it is" in result.stderr


def test_an_emitted_class_selects_exactly_the_mig_devices_of_its_profile() -> None:
    """tests/data/driver/a100-mig.yaml, as NVIDIA's driver v25.12.0 publishes static MIG: the scheduler
    allocates from the class's devices, so the class must match the two `1g.10gb+me` slices only."""
    result, docs = migrate(MIG_PODS, "--device-classes")
    me_class = next(d for d in docs if d["kind"] == "DeviceClass" and d["metadata"]["name"] == "mig-1g-10gb-me.gpu.nvidia.com")
    profile = load_profile_files([str(DATA / "driver" / "a100-mig.yaml")])
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "ml"},
             "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": me_class["metadata"]["name"],
                                                                          "allocationMode": "All"}}]}}}
    [item] = explain_objects([claim], profile.resource_slices, [*profile.device_classes, me_class]).items
    assert item.allocatable, item.verdict
    [request] = item.requests
    matched = {d.device.rsplit("/", 1)[-1] for a in request.alternatives for d in a.device_results if d.result == "matched"}
    assert matched == {"gpu-0-mig-1g10gb-me-20-6", "gpu-1-mig-1g10gb-me-20-2"}


def test_with_a_cluster_whose_extended_resource_gate_is_off_mig_requests_are_still_rewritten() -> None:
    cluster = str(DATA / "driver" / "a100-mig.yaml")
    off, docs = migrate(MIG_PODS, "--device-classes", "--cluster", cluster, "--kubernetes-version", "1.35")
    assert "kgpu-mig-1g.10gb-me" in " ".join(c["metadata"]["name"] for c in claims_of(docs)), off.stderr
    assert "still rewritten: DRAExtendedResource is off" in off.stderr
    on, docs = migrate(MIG_PODS, "--device-classes", "--cluster", cluster, "--kubernetes-version", "1.36")
    assert not claims_of(docs) and "left as they are" in on.stderr


def test_mig_requests_the_clusters_own_classes_serve_are_left_without_device_classes(tmp_path) -> None:
    """A cluster that already has a KEP-5004 MIG class, with DRAExtendedResource on (1.36 default):
    migrate --cluster leaves the requests it serves, and says so."""
    from kubectl_gpu.cluster.device_classes import mig_device_class

    cluster = tmp_path / "cluster.yaml"
    cluster.write_text((DATA / "driver" / "a100-mig.yaml").read_text() + "---\n"
                       + yaml.safe_dump(mig_device_class("3g.40gb")))
    pod = MIG_PODS.split("---\n")[1].replace('"2"', '"1"')
    result, docs = migrate(pod, "--cluster", str(cluster), "--kubernetes-version", "1.36")
    assert result.exit_code == 0, result.stderr
    assert not claims_of(docs)
    assert "the cluster's DeviceClasses serve nvidia.com/mig-3g.40gb" in result.stderr
    rewritten, docs = migrate(pod, "--cluster", str(cluster), "--kubernetes-version", "1.35")
    assert claims_of(docs), rewritten.stderr


def test_a_mig_request_whose_node_constraints_need_a_selector_is_rewritten_with_classes_too() -> None:
    pinned = MIG_PODS.replace("  containers:\n  - name: main", "  nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n"
                              "  containers:\n  - name: main", 1)
    assert pinned != MIG_PODS
    result, docs = migrate(pinned, "--device-classes")
    assert result.exit_code == 0, result.stderr
    assert len(claims_of(docs)) == 1 and "KEP-5004 has none" in result.stderr


def test_device_classes_cover_the_mig_profiles_a_cluster_publishes_and_go_to_a_file_with_output_dir(tmp_path) -> None:
    manifests = tmp_path / "in" / "pods.yaml"
    manifests.parent.mkdir()
    manifests.write_text(MIG_PODS)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["migrate", "--device-classes", "--cluster", a100_mig_cluster(tmp_path, "v1"),
                                       "--output-dir", str(out), str(manifests)])
    classes = list(yaml.safe_load_all((out / "device-classes.yaml").read_text()))
    names = {c["spec"]["extendedResourceName"] for c in classes}
    assert {"nvidia.com/mig-1g.5gb", "nvidia.com/mig-2g.10gb", "nvidia.com/mig-3g.20gb",
            "nvidia.com/mig-1g.10gb.me", "nvidia.com/mig-3g.40gb"} <= names, result.stderr


# --- explain compiles new claims under the profile's gates ---------------------------------------------

SHARED_ONLY_CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shared-only, namespace: ml}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.nvidia.com
        selectors:
        - cel: {expression: device.allowMultipleAllocations}
"""


def test_explain_compiles_a_new_claim_under_the_gates_the_slices_and_flags_describe(tmp_path) -> None:
    """k8s.io/dynamic-resource-allocation/cel: device.allowMultipleAllocations is declared only with
    DRAConsumableCapacity; a new claim using it where the gate is off does not compile."""
    claim = tmp_path / "claim.yaml"
    claim.write_text(SHARED_ONLY_CLAIM)

    def explain(*args: str):
        result = CliRunner().invoke(main, ["explain", "-f", str(claim), "-o", "json", *args])
        return result, yaml.safe_load(result.stdout) if result.stdout.strip() else None

    # H100 slices at resource.k8s.io/v1 without allowMultipleAllocations: 1.34 defaults, gate off.
    off, data = explain("--slices", str(H100_NODE))
    assert "compile" in off.stdout and "allowMultipleAllocations" in off.stdout
    # Slices carrying allowMultipleAllocations prove the gate on: the selector compiles and matches.
    on, data = explain("--slices", str(SHARES))
    assert on.exit_code == 0, on.stdout
    forced, _ = explain("--slices", str(H100_NODE), "--feature-gates", "DRAConsumableCapacity=true")
    assert "compile error" not in forced.stdout
    bad, _ = explain("--slices", str(H100_NODE), "--feature-gates", "DRAConsumableCapacity")
    assert bad.exit_code == 2 and "NAME=true or NAME=false" in bad.stderr
