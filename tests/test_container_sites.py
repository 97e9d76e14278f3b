"""Container specs outside a pod template: migrated where the CRD's API can carry the claims, named with
what to do where it cannot.  Each decision comes from the CRD's Go types at a named commit:

  Argo Workflows  pkg/apis/workflow/v1alpha1/workflow_types.go @ 7ea36dc47c0f31be7aa803d4e263170736c7c577:
      a Template's `container` and `script` are corev1.Container; the pod's metadata, nodeSelector, affinity
      and tolerations are Template fields; every other pod field only through `podSpecPatch`, a strategic
      merge patch (YAML or JSON) validated as a PodSpec (workflow/util/util.go @ 5cf1b63c1d9afcdcf0186672c385e31070e69fbe,
      ApplyPodSpecPatch). Argo names that container `main`.
  Argo (more)     @ f016ad89eb269d282aec06dc491c29f396a38df4: container_set_template_types.go (ContainerNode inlines
      corev1.Container beside `dependencies`), workflow/controller/operator.go mergedTemplateDefaultsInto
      (templateDefaults under every template of its type, the template's own fields win),
      workflow/controller/workflowpod.go processPodSpecPatch (the workflow's podSpecPatch, then the template's).
  KServe          pkg/apis/serving/v1beta1/predictor.go @ 6382cb355200af7094ce4c256f68cdbf0a455a22: a predictor
      framework (`model`, `pytorch`, `triton`, ...) inlines corev1.Container; PredictorSpec inlines PodSpec
      (so `resourceClaims` sits beside it) and ComponentExtensionSpec (`annotations` for the pod).  Its CRD
      takes resourceClaims as written only from v0.15.0 (see the test below).
  NIM operator    api/apps/v1alpha1/nimservice_types.go and dra_types.go @ f63f74d7ad22eaea7943cc640e545f4ccdbb8077
      (`resources`, a corev1.ResourceRequirements the operator puts on its own container, which ignores claims;
      `draResources`, since v3.0.0 (33fb25b3): each names a ResourceClaimTemplate or ResourceClaim, exactly one
      of resourceClaimName/resourceClaimTemplateName/claimCreationSpec, immutable once created), and
      internal/shared/resourceclaims.go (the operator adds each to the pod and its containers).
  production-stack operator/api/v1alpha1/common.go @ a7d2672bd43c79fea3dbb8312bb68508b60060df: VLLMRuntime's
      `deploymentConfig.resources.gpu` is a count string the operator turns into nvidia.com/gpu itself.
"""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from kubectl_gpu.cli import exits
from kubectl_gpu.cli.main import main


def run(obj, *args):
    return CliRunner().invoke(main, ["migrate", *args, "-"], input=yaml.safe_dump(obj, sort_keys=False))


def migrated(obj, kind=None):
    result = run(obj)
    assert result.exit_code == 0, result.output
    documents = [d for d in yaml.safe_load_all(result.stdout) if d]
    (out,) = [d for d in documents if d["kind"] == (kind or obj["kind"])]
    templates = [d for d in documents if d["kind"] == "ResourceClaimTemplate"]
    return out, templates, result


GPU_CONTAINER = {"image": "nvcr.io/nvidia/pytorch:24.01-py3", "command": ["python", "train.py"],
                 "resources": {"limits": {"nvidia.com/gpu": 2, "cpu": "8"}}}


def argo(kind="WorkflowTemplate", field="container", extra=None):
    template = {"name": "train", field: dict(GPU_CONTAINER), **(extra or {})}
    if field == "script":
        template[field]["source"] = "print('hi')"
    spec = {"entrypoint": "train", "templates": [template]}
    if kind == "CronWorkflow":
        spec = {"schedule": "0 * * * *", "workflowSpec": spec}
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": kind, "metadata": {"name": "w", "namespace": "ml"},
            "spec": spec}


def argo_template(obj):
    spec = obj["spec"].get("workflowSpec", obj["spec"])
    return spec["templates"][0]


@pytest.mark.parametrize("kind", ["Workflow", "WorkflowTemplate", "ClusterWorkflowTemplate", "CronWorkflow"])
@pytest.mark.parametrize("field", ["container", "script"])
def test_an_argo_templates_gpu_becomes_a_claim_through_pod_spec_patch(kind, field):
    out, templates, result = migrated(argo(kind, field))
    template = argo_template(out)
    assert "nvidia.com/gpu" not in template[field]["resources"]["limits"]
    patch = json.loads(template["podSpecPatch"])
    (pod_claim,) = patch["resourceClaims"]
    (main_container,) = patch["containers"]
    assert main_container == {"name": "main", "resources": {"claims": [{"name": pod_claim["name"]}]}}
    (claim_template,) = templates
    assert pod_claim["resourceClaimTemplateName"] == claim_template["metadata"]["name"]
    assert claim_template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
    assert "podSpecPatch" in result.stderr
    # Done once: the output migrates to itself.
    again = CliRunner().invoke(main, ["migrate", "--check", "-"], input=result.stdout)
    assert again.exit_code == 0, again.output


def test_an_argo_templates_node_fields_and_metadata_are_its_own():
    extra = {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
             "metadata": {"labels": {"team": "ml"}}}
    out, templates, _ = migrated(argo(extra=extra))
    template = argo_template(out)
    assert "nodeSelector" not in template  # moved into the claim's selector
    assert "kubectl-gpu.io/original-resources" in template["metadata"]["annotations"]
    selectors = templates[0]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"]
    assert "A100-SXM4-80GB" in json.dumps(selectors)


def test_an_existing_pod_spec_patch_is_kept_and_extended():
    existing = "terminationGracePeriodSeconds: 30\ncontainers:\n- name: main\n  env:\n  - {name: A, value: b}\n"
    out, _, _ = migrated(argo(extra={"podSpecPatch": existing}))
    patch = json.loads(argo_template(out)["podSpecPatch"])
    assert patch["terminationGracePeriodSeconds"] == 30
    (main_container,) = patch["containers"]
    assert main_container["env"] == [{"name": "A", "value": "b"}] and main_container["resources"]["claims"]


def test_a_templated_pod_spec_patch_is_left_with_an_error_saying_what_to_add():
    obj = argo(extra={"podSpecPatch": '{"containers":[{"name":"main","resources":{"limits":{"cpu":"{{inputs.parameters.cpu}}"}}}]}'})
    result = run(obj)
    assert result.exit_code == exits.NOT_MIGRATED
    assert "podSpecPatch" in result.stderr and "{{" in result.stderr
    (out,) = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert argo_template(out)["container"]["resources"]["limits"]["nvidia.com/gpu"] == 2


def container_set_workflow():
    """A containerSet template (ContainerNode inlines corev1.Container beside `dependencies`)."""
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "metadata": {"name": "w", "namespace": "ml"},
            "spec": {"entrypoint": "set", "templates": [{"name": "set", "containerSet": {"containers": [
                {"name": "prep", "image": "busybox", "resources": {"limits": {"cpu": "1"}}},
                {"name": "train", "image": "cuda", "dependencies": ["prep"],
                 "resources": {"limits": {"nvidia.com/gpu": 2, "cpu": "8"}}},
                {"name": "eval", "image": "cuda", "dependencies": ["train"],
                 "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}]}}


def test_each_gpu_container_of_an_argo_container_set_gets_its_claim_under_its_own_name():
    """The containerSet's containers are the pod's containers, named as written: the claims go through the
    template's podSpecPatch, each container's under its own name (strategic merge by name)."""
    out, templates, result = migrated(container_set_workflow())
    containers = argo_template(out)["containerSet"]["containers"]
    assert [c.get("dependencies") for c in containers] == [None, ["prep"], ["train"]]
    assert all("nvidia.com/gpu" not in c["resources"].get("limits", {}) for c in containers)
    assert containers[1]["resources"]["limits"] == {"cpu": "8"}
    patch = json.loads(argo_template(out)["podSpecPatch"])
    claims = {c["name"]: c["resourceClaimTemplateName"] for c in patch["resourceClaims"]}
    by_container = {c["name"]: c["resources"]["claims"] for c in patch["containers"]}
    assert set(by_container) == {"train", "eval"}
    counts = {t["metadata"]["name"]: t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
              for t in templates}
    assert [counts[claims[c["name"]]] for c in by_container["train"]] == [2]
    assert [counts[claims[c["name"]]] for c in by_container["eval"]] == [1]
    assert run(container_set_workflow(), "--check").exit_code == exits.FINDINGS  # would migrate, nothing left
    assert run(out, "--check").exit_code == exits.OK


def test_argo_template_defaults_gpu_is_rewritten_with_the_defaults_pod_spec_patch():
    """templateDefaults is merged under every template of its type (operator.go mergedTemplateDefaultsInto)."""
    obj = argo(field="script")
    spec = obj["spec"]
    spec["templates"][0]["script"]["resources"] = {"limits": {"cpu": "1"}}
    spec["templateDefaults"] = {"script": {"resources": {"limits": {"nvidia.com/gpu": 1}}}}
    out, templates, _ = migrated(obj)
    defaults = out["spec"]["templateDefaults"]
    assert "nvidia.com/gpu" not in defaults["script"]["resources"].get("limits", {})
    patch = json.loads(defaults["podSpecPatch"])
    (pod_claim,) = patch["resourceClaims"]
    assert patch["containers"] == [{"name": "main", "resources": {"claims": [{"name": pod_claim["name"]}]}}]
    assert pod_claim["resourceClaimTemplateName"] == templates[0]["metadata"]["name"]


def test_argo_template_defaults_gpu_is_left_where_a_template_writes_its_own_pod_spec_patch():
    """A template's own podSpecPatch replaces the default's (the template's fields win the merge)."""
    obj = argo(field="script", extra={"podSpecPatch": "terminationGracePeriodSeconds: 30\n"})
    obj["spec"]["templates"][0]["script"]["resources"] = {"limits": {"cpu": "1"}}
    obj["spec"]["templateDefaults"] = {"script": {"resources": {"limits": {"nvidia.com/gpu": 1}}}}
    result = run(obj)
    assert result.exit_code == exits.NOT_MIGRATED
    assert "own podSpecPatch (train)" in result.stderr
    (out,) = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert out["spec"]["templateDefaults"]["script"]["resources"]["limits"] == {"nvidia.com/gpu": 1}


def _cpu_template_with_gpu_defaults_beside(other: dict) -> dict:
    """A Workflow whose container template asks for CPUs only, `other` beside it, and a GPU in the
    container defaults of templateDefaults."""
    obj = argo()
    obj["spec"]["templates"][0]["container"]["resources"] = {"limits": {"cpu": "8"}}
    obj["spec"]["templates"].append(other)
    obj["spec"]["templateDefaults"] = {"container": {"resources": {"limits": {"nvidia.com/gpu": 1}}}}
    return obj


def test_argo_template_defaults_gpu_is_left_where_its_pod_spec_patch_would_reach_other_templates_pods():
    """mergedTemplateDefaultsInto (operator.go @ f016ad89) zeroes only the other template *types'* fields
    of templateDefaults before the merge: its podSpecPatch (and metadata) reach every template.  A script
    template's container is `main` too, so claims put in the default's podSpecPatch would give a
    CPU-only script step a GPU; a containerSet's pod would get a `main` container with no image."""
    for other in ({"name": "report", "script": {"image": "python:3.12", "source": "print('done')"}},
                  {"name": "fanout", "containerSet": {"containers": [{"name": "a", "image": "busybox"}]}}):
        result = run(_cpu_template_with_gpu_defaults_beside(other))
        assert result.exit_code == exits.NOT_MIGRATED, result.output
        assert f"({other['name']})" in result.stderr and "podSpecPatch" in result.stderr
        (out,) = [d for d in yaml.safe_load_all(result.stdout) if d]
        assert out["spec"]["templateDefaults"] == {"container": {"resources": {"limits": {"nvidia.com/gpu": 1}}}}
    # A step or task naming another WorkflowTemplate's template (templateRef) runs it with these defaults
    # merged in too (executeTemplate merges them into the resolved template), whatever its type.
    for caller in ({"name": "main", "steps": [[{"name": "t", "templateRef": {"name": "lib", "template": "eval"}}]]},
                   {"name": "main", "dag": {"tasks": [{"name": "t", "templateRef": {"name": "lib", "template": "eval"}}]}}):
        result = run(_cpu_template_with_gpu_defaults_beside(caller))
        assert result.exit_code == exits.NOT_MIGRATED, result.output
        assert "templateRef" in result.stderr and "lib/eval" in result.stderr
    # Templates that make no pod (steps, dag, suspend) are not reached: the rewrite stands.
    out, _, _ = migrated(_cpu_template_with_gpu_defaults_beside(
        {"name": "main", "steps": [[{"name": "t", "template": "train"}]]}))
    assert "podSpecPatch" in out["spec"]["templateDefaults"]


def test_a_workflows_pod_spec_patch_asking_for_gpus_is_rewritten_inside_itself():
    """WorkflowSpec.podSpecPatch is applied to every pod of the workflow (workflowpod.go processPodSpecPatch):
    a PodSpec fragment whose containers' GPUs become claims in the same fragment."""
    obj = argo(extra={})
    obj["spec"]["templates"][0]["container"]["resources"] = {"limits": {"cpu": "8"}}
    obj["spec"]["podSpecPatch"] = ("containers:\n- name: main\n  resources:\n    limits:\n"
                                   "      nvidia.com/gpu: 1\n")
    out, templates, result = migrated(obj)
    patch = json.loads(out["spec"]["podSpecPatch"])
    (pod_claim,) = patch["resourceClaims"]
    (main_container,) = patch["containers"]
    assert main_container["name"] == "main" and "nvidia.com/gpu" not in main_container["resources"].get("limits", {})
    assert main_container["resources"]["claims"] == [{"name": pod_claim["name"]}]
    assert pod_claim["resourceClaimTemplateName"] == templates[0]["metadata"]["name"]
    assert "Argo workflow podSpecPatch /spec/podSpecPatch: rewritten" in result.stderr
    assert run(out, "--check").exit_code == exits.OK


def test_a_templates_own_pod_spec_patch_asking_for_gpus_is_rewritten_inside_itself():
    """Argo's documented use of a template's podSpecPatch: the container's limits set through it."""
    obj = argo(extra={"podSpecPatch": '{"containers":[{"name":"main","resources":{"limits":{"nvidia.com/gpu":"4"}}}]}'})
    obj["spec"]["templates"][0]["container"]["resources"] = {"limits": {"cpu": "8"}}
    out, templates, _ = migrated(obj)
    patch = json.loads(argo_template(out)["podSpecPatch"])
    (pod_claim,) = patch["resourceClaims"]
    assert patch["containers"][0]["resources"]["claims"] == [{"name": pod_claim["name"]}]
    assert templates[0]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 4


def test_a_workflows_pod_spec_patch_is_left_when_its_templates_ask_for_gpus_too():
    obj = argo()
    obj["spec"]["podSpecPatch"] = '{"containers":[{"name":"main","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}'
    result = run(obj)
    assert result.exit_code == exits.NOT_MIGRATED
    assert "the workflow's podSpecPatch asks for GPUs and so do its templates" in result.stderr


def kserve(framework="model"):
    return {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "llm", "namespace": "ml"},
            "spec": {"predictor": {"minReplicas": 1, framework: {
                "modelFormat": {"name": "huggingface"}, "storageUri": "hf://meta-llama/Llama-3.1-8B",
                "resources": {"limits": {"nvidia.com/gpu": 1, "memory": "24Gi"}}}}}}


@pytest.mark.parametrize("framework", ["model", "huggingface", "pytorch", "triton"])
def test_a_kserve_predictor_frameworks_gpu_becomes_a_claim_beside_it(framework):
    out, templates, _ = migrated(kserve(framework))
    predictor = out["spec"]["predictor"]
    container = predictor[framework]
    assert "nvidia.com/gpu" not in container["resources"]["limits"]
    (pod_claim,) = predictor["resourceClaims"]
    assert container["resources"]["claims"] == [{"name": pod_claim["name"]}]
    assert pod_claim["resourceClaimTemplateName"] == templates[0]["metadata"]["name"]
    assert "kubectl-gpu.io/original-resources" in predictor["annotations"]


@pytest.mark.parametrize("predictor", [
    {"model": {"modelFormat": {"name": "huggingface"}, "resources": {"limits": {"nvidia.com/gpu": 1}}}},
    {"containers": [{"name": "kserve-container", "image": "vllm", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
])
def test_a_kserve_rewrite_names_the_release_whose_crd_takes_flat_resource_claims(predictor):
    """kserve/kserve config/crd/full/serving.kserve.io_inferenceservices.yaml: at v0.14.0 (7e436424) a
    predictor's resourceClaims items hold `source: {resourceClaimName, resourceClaimTemplateName}`
    (k8s.io/api v0.30); from v0.15.0 (d20d4228, k8s.io/api v0.32) the names sit on the item, as written."""
    obj = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService", "metadata": {"name": "llm"},
           "spec": {"predictor": predictor}}
    out, _, result = migrated(obj)
    (claim,) = out["spec"]["predictor"]["resourceClaims"]
    assert "resourceClaimTemplateName" in claim and "source" not in claim
    assert "needs KServe v0.15.0 or later" in result.stderr


NIM_SERVICE = {"image": {"repository": "nvcr.io/nim/meta/llama3-8b-instruct", "tag": "1.0.3"},
               "authSecret": "ngc", "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": "8"}}}


def assert_dra_resource(entry):
    """dra_types.go's DRAResource rule: exactly one of resourceClaimName, resourceClaimTemplateName,
    claimCreationSpec; requests (if any) non-empty strings."""
    assert sum(k in entry for k in ("resourceClaimName", "resourceClaimTemplateName", "claimCreationSpec")) == 1
    assert set(entry) <= {"resourceClaimName", "resourceClaimTemplateName", "claimCreationSpec", "requests"}
    assert all(isinstance(r, str) and r for r in entry.get("requests", []))


def test_a_nim_service_gets_its_gpus_as_draresources():
    """NIMServiceSpec.Resources "Any DRA claim references are ignored. Use DRAResources instead": the GPU
    leaves `resources`, its ResourceClaimTemplate is named in `draResources`, which the operator adds to
    the pod and to its containers (internal/shared/resourceclaims.go GetPodResourceClaims)."""
    nim = {"apiVersion": "apps.nvidia.com/v1alpha1", "kind": "NIMService", "metadata": {"name": "llama"},
           "spec": {**NIM_SERVICE, "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}}
    out, templates, result = migrated(nim)
    assert out["spec"]["resources"] == {"limits": {"cpu": "8"}}
    (entry,) = out["spec"]["draResources"]
    assert_dra_resource(entry)
    assert entry == {"resourceClaimTemplateName": templates[0]["metadata"]["name"]}
    assert "kubectl-gpu.io/original-resources" in out["spec"]["annotations"]  # the pod's annotations
    assert "nodeSelector" not in out["spec"]  # moved into the claim's selectors, as for a pod template
    assert "immutable" in result.stderr and "v3.0.0" in result.stderr
    assert run(nim, "--check").exit_code == exits.FINDINGS  # would be migrated, with nothing left behind (not 9)
    assert run(out, "--check").exit_code == exits.OK  # idempotent


def test_each_service_of_a_nim_pipeline_gets_its_own_draresources_beside_those_it_had():
    own = {"resourceClaimName": "shared-nic"}
    pipeline = {"apiVersion": "apps.nvidia.com/v1alpha1", "kind": "NIMPipeline", "metadata": {"name": "p"},
                "spec": {"services": [{"name": "a", "enabled": True, "spec": NIM_SERVICE},
                                      {"name": "b", "enabled": True,
                                       "spec": {**NIM_SERVICE, "draResources": [own]}}]}}
    out, templates, result = migrated(pipeline)
    first, second = (s["spec"] for s in out["spec"]["services"])
    name = templates[0]["metadata"]["name"]
    assert first["draResources"] == [{"resourceClaimTemplateName": name}]
    assert second["draResources"] == [own, {"resourceClaimTemplateName": name}]
    for entry in [*first["draResources"], *second["draResources"]]:
        assert_dra_resource(entry)
    assert "nvidia.com/gpu" not in first["resources"]["limits"] and "nvidia.com/gpu" not in second["resources"]["limits"]
    assert "NIMPipeline service a" in result.stderr and "NIMPipeline service b" in result.stderr


def test_an_operators_gpu_count_field_is_named():
    runtime = {"apiVersion": "production-stack.vllm.ai/v1alpha1", "kind": "VLLMRuntime", "metadata": {"name": "v"},
               "spec": {"model": {"modelURL": "meta-llama/Llama-3.1-8B"},
                        "deploymentConfig": {"replicas": 1, "resources": {"cpu": "8", "memory": "32Gi", "gpu": "1"},
                                             "image": {"registry": "docker.io", "name": "vllm/vllm-openai"}}}}
    result = run(runtime)
    assert "/spec/deploymentConfig/resources/gpu" in result.stderr and "VLLMRuntime" in result.stderr
    assert run(runtime, "--check").exit_code == exits.LEGACY_LEFT
    runtime["spec"]["deploymentConfig"]["resources"]["gpu"] = "0"
    assert run(runtime, "--check").exit_code == exits.OK


@pytest.mark.parametrize("api_version", ["v1", "v1beta2", "v1beta1"])
def test_what_migrate_writes_into_argo_and_kserve_objects_is_strictly_valid_for_1_32_to_1_37(api_version):
    from tests.strict_validation import RELEASES, assert_strictly_valid, pod_of

    for obj, kind in ((argo(), "WorkflowTemplate"), (kserve(), "InferenceService")):
        result = run(obj, "--api-version", api_version)
        assert result.exit_code == 0, result.output
        documents = [d for d in yaml.safe_load_all(result.stdout) if d]
        for claim in (d for d in documents if d["kind"] == "ResourceClaimTemplate"):
            assert_strictly_valid(claim, RELEASES[api_version])
        (out,) = [d for d in documents if d["kind"] == kind]
        if kind == "WorkflowTemplate":
            patch = json.loads(argo_template(out)["podSpecPatch"])
            container = {**GPU_CONTAINER, "name": "main", "resources": {
                **argo_template(out)["container"]["resources"], **patch["containers"][0]["resources"]}}
            pod = pod_of({"containers": [container], "resourceClaims": patch["resourceClaims"]})
        else:
            predictor = out["spec"]["predictor"]
            container = {"name": "kserve-container", "image": "kserve/huggingfaceserver",
                         "resources": predictor["model"]["resources"]}
            pod = pod_of({"containers": [container], "resourceClaims": predictor["resourceClaims"]})
        assert_strictly_valid(pod)
