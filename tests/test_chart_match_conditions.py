"""The rendered matchConditions (CEL), evaluated with cel-python on real manifests.

Only GPU pods may reach the webhook, so that its outage never blocks ordinary pods: every pod
(and workload pod template) of ../shared/corpus/legacy must match exactly when the translation
core finds a non-zero legacy GPU request in it (or it carries a DRA claim), and plain pods must not.
The API server hands `object` to CEL with quantities as strings (or ints/doubles as written), and
an evaluation error would reject the request under failurePolicy Fail: both are exercised.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

import celpy
import pytest
import yaml

from kubectl_gpu.core.constants import FAMILIES
# The core's table of exact legacy names (it has no public name yet; MIG names go by prefix).
from kubectl_gpu.core.families import LEGACY_RESOURCE_NAMES as CORE_RESOURCE_NAMES
from kubectl_gpu.core.families import family_of, has_legacy_gpu_request
from kubectl_gpu.manifests.locate import find_pod_sites
from kubectl_gpu.manifests.tree_patch import resolve
from tests.corpus import SHARED_CORPUS, requires_corpus
from tests.test_chart_support import (
    NAMESPACE,
    REPO,
    VALUE_SETS,
    config_file,
    needs_helm,
    rendered,
    template,
    webhook_entries,
)

pytestmark = needs_helm
CORPUS = SHARED_CORPUS
LEGACY = CORPUS / "legacy"
TEMPLATE_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"}
BUILTIN_GROUPS = {"apps", "batch", "extensions"}


# --- evaluating the rendered expressions ----------------------------------------------------


@lru_cache(maxsize=None)
def _program(expression: str):
    env = celpy.Environment()
    return env.program(env.compile(expression))


def evaluate(expression: str, obj: dict[str, Any], operation: str = "CREATE", old: dict[str, Any] | None = None) -> bool:
    """As the API server evaluates matchConditions: ``object``, ``oldObject`` (null on CREATE)
    and ``request`` (the AdmissionRequest) are bound."""
    activation = {"object": celpy.json_to_cel(obj), "oldObject": celpy.json_to_cel(old),
                  "request": celpy.json_to_cel({"operation": operation})}
    try:
        result = _program(expression).evaluate(activation)
    except celpy.CELEvalError as err:  # would reject the request under failurePolicy Fail
        raise AssertionError(f"matchCondition raised {err} on {json.dumps(obj)[:300]}") from None
    assert isinstance(result, celpy.celtypes.BoolType), result
    return bool(result)


def condition(value_set: str | None, kind: str, webhook: str) -> str:
    """The entry's matchConditions as one expression (the API server ANDs them)."""
    entry = webhook_entries(rendered(value_set), kind)[webhook]
    return " && ".join(f"({match['expression']})" for match in entry["matchConditions"])


def pod_condition(value_set: str | None = None) -> str:
    return condition(value_set, "MutatingWebhookConfiguration", "pods.kubectl-gpu.io")


# --- the corpus ----------------------------------------------------------------------------


def _documents(path: Path) -> list[Any]:
    """Every document of a file that parses; some upstream files hold one malformed document."""
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        return [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError:
        docs = []
        for chunk in re.split(r"(?m)^---\s*$", text):
            try:
                doc = yaml.safe_load(chunk)
            except yaml.YAMLError:
                continue
            if doc is not None:
                docs.append(doc)
        return docs


def _as_json(value: Any) -> Any:
    # What the API server would hold: JSON (YAML timestamps and the like become strings).
    return json.loads(json.dumps(value, default=str))


def _pod_specs(obj: Any) -> Iterator[dict[str, Any]]:
    """Every pod spec in a document, found as migrate finds them (by shape, so the pods of CRDs
    such as RayCluster, PyTorchJob or LeaderWorkerSet count too)."""
    for site in find_pod_sites(obj):
        yield resolve(obj, site.spec_pointer)


def corpus_pod_specs() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted(LEGACY.glob("*.y*ml")):
        for doc in _documents(path):
            for index, spec in enumerate(_pod_specs(_as_json(doc))):
                found.append((f"{path.name}#{index}", spec))
    return found


def corpus_workloads() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted(LEGACY.glob("*.y*ml")):
        for doc in _documents(path):
            if not isinstance(doc, dict) or str(doc.get("apiVersion", "")).split("/")[0] not in BUILTIN_GROUPS:
                continue  # a Volcano Job or the like: a CRD, not sent to this webhook
            if doc.get("kind") in TEMPLATE_KINDS or doc.get("kind") == "CronJob":
                found.append((f"{path.name}:{doc['kind']}", _as_json(doc)))
    return found


def expected(spec: dict[str, Any]) -> bool:
    """The webhook's own test (the translation core), independent of the CEL."""
    return has_legacy_gpu_request({"spec": spec})


def _stringify_quantities(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec as the API server serializes it: every quantity a string."""
    out = json.loads(json.dumps(spec))
    for field in ("containers", "initContainers"):
        for container in out.get(field) or []:
            for part in ("limits", "requests"):
                resources = (container.get("resources") or {}).get(part)
                if isinstance(resources, dict):
                    for key, value in resources.items():
                        resources[key] = str(value)
    return out


def _pod(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"}, "spec": spec}


@requires_corpus
class TestAgainstTheCorpus:
    def test_the_corpus_holds_enough_pods_to_mean_something(self):
        specs = corpus_pod_specs()
        assert len(specs) >= 80
        assert sum(expected(s) for _, s in specs) >= 60
        assert sum(not expected(s) for _, s in specs) >= 10

    def test_gpu_pods_match_and_others_do_not_exactly_as_the_core_decides(self):
        expression = pod_condition()
        mismatches = []
        for name, spec in corpus_pod_specs():
            for variant in (spec, _stringify_quantities(spec)):
                if evaluate(expression, _pod(variant)) != expected(spec):
                    mismatches.append(f"{name}: CEL says {not expected(spec)}, the core {expected(spec)}")
        assert not mismatches, "\n".join(mismatches)

    def test_every_container_with_a_whole_nvidia_gpu_reaches_the_webhook(self):
        expression = pod_condition()
        seen = 0
        for name, spec in corpus_pod_specs():
            for container in [*spec.get("containers", []), *(spec.get("initContainers") or [])]:
                limits = (container.get("resources") or {}).get("limits") or {}
                value = limits.get("nvidia.com/gpu")
                if value is not None and str(value).isdigit() and int(str(value)) > 0:
                    seen += 1
                    assert evaluate(expression, _pod(spec)), name
        assert seen >= 40

    @pytest.mark.parametrize("file, matches", [
        ("NVIDIA__deepops__workloads_examples_k8s_cpu-test-job.yml", False),  # nvidia.com/gpu: 0
        ("NVIDIA__gpu-operator__assets_state-device-plugin-validation_cuda-vector-add.yaml", True),  # initContainer
        ("NVIDIA__KAI-scheduler__docs_gpu-sharing_gpu-sharing.yaml", False),  # fraction in an annotation only
        ("tkestack__gpu-manager__README.md__L81-L103.yaml", True),  # tencent.com/vcuda-*
        ("Project-HAMi__HAMi__examples_nvidia_use_memory_fraction.yaml", True),  # HAMi gpumem
        ("NVIDIA__deepops__workloads_examples_k8s_gpu-usage_mig-mixed-with-selector.yml", True),  # nvidia.com/mig-*
        ("AliyunContainerService__gpushare-scheduler-extender__samples_1.yaml", True),  # aliyun.com/gpu-mem
        ("tkestack__gpu-admission__test_test_deploy.yaml", True),  # alpha.kubernetes.io/nvidia-gpu
        ("kubernetes-sigs__lws__config_samples_leaderworkerset_tpu.yaml", True),  # google.com/tpu
        ("kubernetes-sigs__kueue__site_static_examples_serving-workloads_sample-leaderworkerset-tas.yaml", True),
    ])
    def test_known_cases(self, file, matches):
        expression = pod_condition()
        specs = [spec for doc in _documents(LEGACY / file) for spec in _pod_specs(_as_json(doc))]
        assert specs, file
        assert any(evaluate(expression, _pod(s)) for s in specs) is matches

    def test_workloads_match_by_their_pod_template(self):
        workload = condition(None, "MutatingWebhookConfiguration", "workloads.kubectl-gpu.io")
        cronjob = condition(None, "MutatingWebhookConfiguration", "cronjobs.kubectl-gpu.io")
        checked = 0
        for name, obj in corpus_workloads():
            if obj["kind"] == "CronJob":
                spec, expression = obj["spec"]["jobTemplate"]["spec"]["template"]["spec"], cronjob
            else:
                spec, expression = obj["spec"]["template"]["spec"], workload
            assert evaluate(expression, obj) == expected(spec), name
            checked += 1
        assert checked >= 20

    def test_a_daemonset_that_only_tolerates_gpus_does_not_match(self):
        workload = condition(None, "MutatingWebhookConfiguration", "workloads.kubectl-gpu.io")
        (plugin,) = [obj for name, obj in corpus_workloads()
                     if name.startswith("NVIDIA__k8s-device-plugin__deployments_static") and obj["kind"] == "DaemonSet"]
        assert any(t.get("key") == "nvidia.com/gpu" for t in plugin["spec"]["template"]["spec"]["tolerations"])
        assert evaluate(workload, plugin) is False

    def test_dra_pods_never_reach_the_webhook(self):
        """An outage of this webhook (failurePolicy Fail) must not block other drivers' DRA pods."""
        expression = pod_condition()
        pods = [spec for path in sorted((CORPUS / "dra").glob("*.yaml")) for doc in _documents(path)
                if isinstance(doc, dict) and doc.get("kind") == "Pod"
                for spec in [_as_json(doc)["spec"]]]
        claiming = [s for s in pods if s.get("resourceClaims") and not has_legacy_gpu_request({"spec": s})]
        assert len(claiming) >= 5
        assert not any(evaluate(expression, _pod(s)) for s in claiming)

    def test_plain_pods_of_real_admission_reviews_do_not_match(self):
        expression = pod_condition()
        checked = 0
        for path in sorted((CORPUS / "admission").glob("*.json")):
            review = json.loads(path.read_text())
            request = review.get("request", review)
            obj = request.get("object") if isinstance(request, dict) else None
            if isinstance(obj, dict) and obj.get("kind") == "Pod":
                assert evaluate(expression, obj) is False, path.name
                checked += 1
        assert checked >= 2


# --- quantities and shapes the API server may hand over -----------------------------------------


def _gpu_pod(resources: dict[str, Any], field: str = "containers") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "busybox"}]}
    spec.setdefault(field, []).append({"name": "gpu", "image": "cuda", "resources": resources})
    return _pod(spec)


@pytest.mark.parametrize("quantity, matches", [
    ("1", True), (1, True), (2, True), ("0.5", True), (0.5, True), ("500m", True), ("2e0", True), ("1Gi", True),
    ("0", False), (0, False), ("0.0", False), ("0m", False), ("0e3", False), ("+0", False),
])
def test_quantities_as_strings_or_numbers(quantity, matches):
    expression = pod_condition()
    assert evaluate(expression, _gpu_pod({"limits": {"nvidia.com/gpu": quantity}})) is matches
    assert evaluate(expression, _gpu_pod({"limits": {"nvidia.com/gpu": quantity}}, "initContainers")) is matches


def test_a_request_counts_when_there_is_no_limit_and_the_limit_wins_when_there_is():
    expression = pod_condition()
    assert evaluate(expression, _gpu_pod({"requests": {"nvidia.com/gpu": "1"}}))
    assert not evaluate(expression, _gpu_pod({"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "0"}}))
    assert evaluate(expression, _gpu_pod({"requests": {"cpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}))


@pytest.mark.parametrize("pod", [
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bare"}},
    _pod({"containers": [{"name": "c", "image": "nginx"}]}),
    _pod({"containers": [{"name": "c", "image": "nginx", "resources": {}}]}),
    _pod({"containers": [{"name": "c", "image": "nginx", "resources": {"limits": {"cpu": "1", "memory": "1Gi"},
                                                                       "requests": {"cpu": "500m"}}}]}),
    _pod({"containers": [{"name": "c", "image": "nginx"}], "resourceClaims": []}),
    _pod({"containers": [{"name": "c", "image": "nginx"}],
          "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
          "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}}),
    _pod({"containers": [{"name": "c", "image": "nginx", "resources": {"limits": {"example.com/gpu": "1",
                                                                                  "nvidia.com/total-vgpu-cores": "1",
                                                                                  "cloud-tpus.google.com/v2": "8"}}}]}),
    _pod({"containers": [{"name": "c", "image": "nginx"}], "ephemeralContainers": [{"name": "debug", "image": "busybox"}],
          "initContainers": [{"name": "init", "image": "busybox", "resources": {"limits": {"cpu": "1"}}}]}),
])
def test_ordinary_pods_never_reach_the_webhook(pod):
    for value_set in (None, *VALUE_SETS):
        assert evaluate(pod_condition(value_set), pod) is False


def test_a_pod_whose_only_accelerator_is_a_dra_claim_never_reaches_a_fail_webhook():
    pod = _pod({"containers": [{"name": "c", "image": "cuda", "resources": {"claims": [{"name": "gpu"}]}}],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]})
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        assert evaluate(condition(None, kind, "pods.kubectl-gpu.io"), pod) is False
    # ... while a legacy GPU beside a claim still does (the double-counting check needs it).
    pod["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "1"}
    assert evaluate(pod_condition(), pod) is True


# --- workloads: controllers and UPDATEs -------------------------------------------------------


def _deployment(image: str = "cuda:12.4", replicas: int = 1, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "infer", "namespace": "ml"}
    if owner is not None:
        metadata["ownerReferences"] = [owner]
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata,
            "spec": {"replicas": replicas, "template": {"metadata": {"labels": {"app": "infer"}}, "spec": {
                "containers": [{"name": "c", "image": image, "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}}


def test_a_workload_a_controller_owns_never_reaches_the_webhook():
    """ownerReferences as metav1.NewControllerRef sets them (kubernetes pkg/controller/deployment/sync.go)."""
    workload = condition(None, "MutatingWebhookConfiguration", "workloads.kubectl-gpu.io")
    replica_set = _deployment(owner={"apiVersion": "apps/v1", "kind": "Deployment", "name": "infer", "uid": "u",
                                     "controller": True, "blockOwnerDeletion": True})
    replica_set["kind"] = "ReplicaSet"
    assert evaluate(workload, replica_set) is False
    assert evaluate(workload, replica_set, "UPDATE", replica_set) is False
    # A non-controller owner (garbage collection only) does not hand the template to a controller.
    replica_set["metadata"]["ownerReferences"][0]["controller"] = False
    assert evaluate(workload, replica_set) is True
    assert evaluate(workload, _deployment()) is True


def test_a_workload_update_reaches_the_webhook_only_when_it_changes_the_pod_template():
    workload = condition(None, "MutatingWebhookConfiguration", "workloads.kubectl-gpu.io")
    old = _deployment()
    assert evaluate(workload, _deployment(replicas=5), "UPDATE", old) is False
    assert evaluate(workload, _deployment(image="cuda:12.6"), "UPDATE", old) is True
    cronjob = condition(None, "MutatingWebhookConfiguration", "cronjobs.kubectl-gpu.io")
    old_cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "n"},
                "spec": {"schedule": "@daily", "jobTemplate": {"spec": {"template": old["spec"]["template"]}}}}
    suspended = json.loads(json.dumps(old_cron))
    suspended["spec"]["suspend"] = True
    assert evaluate(cronjob, suspended, "UPDATE", old_cron) is False
    assert evaluate(cronjob, old_cron, "CREATE") is True


def test_jobs_are_sent_at_create_only():
    """A Job's pod template is immutable (kubernetes pkg/apis/batch/validation ValidateJobSpecUpdate)."""
    entry = webhook_entries(rendered(None), "MutatingWebhookConfiguration")["workloads.kubectl-gpu.io"]
    (jobs,) = [rule for rule in entry["rules"] if "jobs" in rule["resources"]]
    assert jobs["operations"] == ["CREATE"]


def test_the_resource_names_are_exactly_the_core_families():
    """Broader would send pods the webhook cannot help with; narrower would let GPU pods by."""
    expression = pod_condition()
    names = {
        "nvidia.com/gpu", "alpha.kubernetes.io/nvidia-gpu", "nvidia.com/vcuda-core", "nvidia.com/vcuda-memory",
        "tencent.com/vcuda-core", "tencent.com/vcuda-memory", "nvidia.com/gpumem", "nvidia.com/gpumem-percentage",
        "nvidia.com/gpucores", "aliyun.com/gpu-mem", "aliyun.com/gpu-count", "aliyun.com/gpu-core.percentage",
        "nvidia.com/vgpu-number", "nvidia.com/vgpu-cores", "nvidia.com/vgpu-memory", "google.com/tpu",
        "nvidia.com/gpu.shared", "volcano.sh/vgpu-number", "volcano.sh/vgpu-cores", "volcano.sh/vgpu-memory",
        "nvidia.com/mig-1g.5gb", "nvidia.com/mig-3g.40gb", "nvidia.com/mig-7g.80gb",
        # not legacy GPU requests:
        "nvidia.com/mig-", "nvidia.com/gpu.product", "nvidia.com/total-vgpu-cores",
        "cloud-tpus.google.com/v2", "example.com/gpu", "amd.com/gpu", "gpu", "cpu", "memory", "nvidia.com/gpuX",
        "xnvidia.com/gpu", "nvidia.com/gpu/x", "tencent.com/vcuda-core-limit",
    }
    names |= set(CORE_RESOURCE_NAMES)  # a name the core learns is a name the chart must send
    if LEGACY.is_dir():
        for _, spec in corpus_pod_specs():
            for container in [*spec.get("containers", []), *(spec.get("initContainers") or [])]:
                for part in ("limits", "requests"):
                    names |= set(((container.get("resources") or {}).get(part) or {}).keys())
    for name in sorted(names):
        pod = _gpu_pod({"limits": {name: "1"}})
        assert evaluate(expression, pod) is (family_of(name) is not None), name
    # A family the core gains must come with a name above (and so be checked against the chart).
    assert {family_of(name) for name in names} - {None} == set(FAMILIES)


def test_extra_legacy_resources_reach_the_webhook_and_the_node_status_guard(tmp_path):
    # The NVIDIA device plugin's renamed resources (resources.gpus[].name, time-slicing rename).
    extra = ["nvidia.com/a100", "nvidia.com/mps"]
    docs = template(None, {"config.extraLegacyResources": "{" + ",".join(extra) + "}",
                           "config.nodeStatusGuard": "true"})
    for kind, webhook in (("MutatingWebhookConfiguration", "pods.kubectl-gpu.io"),
                          ("ValidatingWebhookConfiguration", "pods.kubectl-gpu.io")):
        expression = " && ".join(f"({m['expression']})" for m in webhook_entries(docs, kind)[webhook]["matchConditions"])
        for name in extra:
            assert evaluate(expression, _gpu_pod({"limits": {name: "1"}})), (kind, name)
        assert not evaluate(expression, _gpu_pod({"limits": {"nvidia.com/a100x": "1"}}))
        assert not evaluate(expression, _gpu_pod({"limits": {"nvidia.com/mps": "0"}}))
    guard = webhook_entries(docs, "MutatingWebhookConfiguration")["node-status.kubectl-gpu.io"]["matchConditions"][0]
    node = {"metadata": {"labels": {"ack.node.gpu.schedule": "disabled"}}, "status": {"capacity": {"nvidia.com/a100": "8"}}}
    assert evaluate(guard["expression"], node, operation="UPDATE")
    # Without the value, those names are no GPU of the webhook's.
    assert not evaluate(pod_condition(), _gpu_pod({"limits": {"nvidia.com/a100": "1"}}))
    rendered_config = yaml.safe_load(config_file(docs))
    assert rendered_config["extraLegacyResources"] == extra


# --- other conditions ---------------------------------------------------------------------------


def test_claims_generated_from_a_template_are_not_validated_again():
    expression = condition(None, "ValidatingWebhookConfiguration", "dra-objects.kubectl-gpu.io")
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "ml"},
             "spec": {"devices": {"requests": []}}}
    assert evaluate(expression, claim)
    claim["metadata"]["annotations"] = {"team": "ml"}
    assert evaluate(expression, claim)
    claim["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"] = "gpu"
    assert not evaluate(expression, claim)
    for path in sorted((CORPUS / "dra").glob("*.yaml")):
        for doc in _documents(path):
            if isinstance(doc, dict) and doc.get("kind") in ("ResourceClaim", "ResourceClaimTemplate"):
                assert evaluate(expression, _as_json(doc)), path.name


def _node(labels: dict[str, str] | None, capacity: dict[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "gpu-node-1"}
    if labels is not None:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "Node", "metadata": metadata,
            "status": {"capacity": dict(capacity), "allocatable": dict(capacity)}}


def test_node_status_guard_only_sees_dra_nodes_that_report_legacy_gpus(tmp_path):
    double_counting = pytest.importorskip("webhook.fencing", reason="the webhook's node guard is not there yet")
    webhook_config = pytest.importorskip("webhook.config", reason="webhook/config.py (the server's loader) is missing")
    expression = condition("node-status-guard.yaml", "MutatingWebhookConfiguration", "node-status.kubectl-gpu.io")
    # The selectors as the server reads them from the rendered config file.
    path = tmp_path / "config.yaml"
    path.write_text(config_file(rendered("node-status-guard.yaml")))
    selectors = webhook_config.load_config(str(path), {"POD_NAMESPACE": NAMESPACE}, {}).dra_node_selectors
    cases = [
        (_node({"ack.node.gpu.schedule": "disabled"}, {"cpu": "8", "nvidia.com/gpu": "8"}), True),
        (_node({"nvidia.com/dra.present": "anything"}, {"nvidia.com/mig-1g.5gb": "7"}), True),  # key only
        (_node({"ack.node.gpu.schedule": "disabled"}, {"aliyun.com/gpu-mem": "80"}), True),
        (_node({"ack.node.gpu.schedule": "enabled"}, {"nvidia.com/gpu": "8"}), False),  # not a DRA node
        (_node({"ack.node.gpu.schedule": "disabled"}, {"cpu": "8", "memory": "64Gi"}), False),
        (_node({"ack.node.gpu.schedule": "disabled"}, {"nvidia.com/gpu": "0"}), False),  # nothing to count twice
        (_node({"ack.node.gpu.schedule": "disabled"}, {"google.com/tpu": "4"}), False),  # TPUs are not guarded
        (_node(None, {"nvidia.com/gpu": "8"}), False),
        ({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "labels": {"nvidia.com/dra.present": ""}}}, False),
    ]
    for node, matches in cases:
        assert evaluate(expression, node) is matches, node
        # The server would strip exactly what the condition lets through (non-zero amounts).
        if matches:
            assert double_counting.strip_legacy_capacity(node, selectors)
    mig_node = next(d for d in _documents(REPO / "tests" / "data" / "manifests" / "mig-node.yaml")
                       if isinstance(d, dict) and d.get("kind") == "Node")
    node = _as_json(mig_node)
    assert evaluate(expression, node) is False  # a device-plugin node
    node["metadata"]["labels"]["ack.node.gpu.schedule"] = "disabled"
    assert evaluate(expression, node) is True


@pytest.mark.parametrize("value_set", (None, *VALUE_SETS))
def test_every_rendered_condition_compiles(value_set):
    docs = rendered(value_set)
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for entry in webhook_entries(docs, kind).values():
            for match in entry["matchConditions"]:
                assert _program(match["expression"]) is not None
                assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", match["name"])
