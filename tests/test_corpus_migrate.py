"""Every real legacy manifest in the shared corpus, through `migrate`, for every DRA API version.

What a platform team relies on when they pipe the output into `kubectl apply`:
* every object migrate changed or added is valid for its Kubernetes version (strict schemas);
* no legacy GPU resource is left in a rewritten pod template;
* every claim a rewritten pod references is in the output;
* no document is lost (documents out = documents in + DRA objects added);
* running migrate on its own output changes nothing.
Corpus files that are imperfect upstream get the behaviour a user wants, asserted by name.
"""

from __future__ import annotations

import json

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

import kubernetes_validate
import pytest

from kubectl_gpu.core import ApiVersion, Severity, TranslateOptions
from kubectl_gpu.core.families import family_of, is_unsupported_accelerator
from kubectl_gpu.manifests import FileResult, MigrateOptions, Source, collect_sources, migrate_sources, parse_source
from kubectl_gpu.manifests.locate import find_pod_sites
from kubectl_gpu.manifests.nodes import to_plain
from kubectl_gpu.manifests.objects import iter_objects
from kubectl_gpu.manifests.tree_patch import join_pointer, resolve
from tests.corpus import corpus_dir, requires_corpus

CORPUS = corpus_dir("legacy")
pytestmark = requires_corpus

# DRA API version -> Kubernetes versions whose schemas must accept the output.
VERSIONS = {"v1": ("1.34", "1.35"), "v1beta2": ("1.33",), "v1beta1": ("1.32",)}
DRA_KINDS = {"ResourceClaimTemplate", "ResourceClaim"}

UNPARSEABLE = "GoogleCloudPlatform__kubernetes-engine-samples__ai-ml_infw-gw_examples_getting-started_vllm-llama3-8b-instruct.yaml"
ALIYUN_MIB_VALUE = "AliyunContainerService__gpushare-scheduler-extender__samples_4.yaml"
# Objects that are invalid upstream, for reasons migrate must not touch (it is no linter):
UPSTREAM_INVALID = {
    # a container-level field written at pod level
    "NVIDIA__gpu-operator__assets_state-device-plugin-validation_cuda-vector-add.yaml":
        "'readOnlyRootFilesystem' was unexpected",
    # `command: [..., 10]`: an unquoted number in a command
    "tkestack__gpu-manager__README.md__L109-L129.yaml": "10 is not of type 'string'",
    "tkestack__gpu-manager__README.md__L81-L103.yaml": "10 is not of type 'string'",
}
# Rewritten objects the schemas cannot know: custom resources, and API versions Kubernetes
# removed long ago.  Their rewritten pod templates are validated as Pods instead.
NO_SCHEMA = {
    ("apps/v1beta1", "StatefulSet"), ("extensions/v1beta1", "Deployment"),
    ("ray.io/v1", "RayCluster"), ("ray.io/v1", "RayJob"), ("ray.io/v1", "RayService"),
    ("jobset.x-k8s.io/v1alpha2", "JobSet"), ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"),
    ("kubeflow.org/v2beta1", "MPIJob"), ("kubeflow.org/v1", "PyTorchJob"), ("kubeflow.org/v1", "TFJob"),
    ("kubeflow.org/v1", "PaddleJob"), ("serving.kserve.io/v1alpha2", "LLMInferenceService"),
    ("batch.volcano.sh/v1alpha1", "Job"), ("resource.nvidia.com/v1beta1", "ComputeDomain"),
    ("serving.kserve.io/v1beta1", "InferenceService"), ("argoproj.io/v1alpha1", "Workflow"),
}


def corpus_files() -> list[str]:
    return sorted(p.name for p in CORPUS.iterdir() if p.suffix in (".yaml", ".yml")) if CORPUS.is_dir() else []


@dataclass(frozen=True)
class Migrated:
    source: Source
    result: FileResult
    inputs: list[Any]  # plain objects, in order (documents that did not parse excluded)
    outputs: list[Any]  # plain objects of the output, in order
    document_count_in: int
    document_count_out: int


@cache
def migrated(name: str, version: str) -> Migrated:
    source = collect_sources([str(CORPUS / name)])[0]
    options = MigrateOptions(TranslateOptions(api_version=ApiVersion.parse(version)))
    result = migrate_sources([source], options).files[0]
    parsed_in = parse_source(source)
    parsed_out = parse_source(Source(name, result.rendered.text))
    return Migrated(
        source,
        result,
        _objects(parsed_in),
        _objects(parsed_out),
        sum(d.is_object for d in parsed_in.documents),
        sum(d.is_object for d in parsed_out.documents),
    )


def _objects(parsed: Any) -> list[Any]:
    return [to_plain(obj) for i, d in enumerate(parsed.documents) for _, obj in iter_objects(i, d.tree)]


def _identity(obj: Any) -> tuple[str | None, str | None, str | None]:
    metadata = obj.get("metadata") or {}
    return obj.get("kind"), metadata.get("namespace"), metadata.get("name")


def _pair_objects(m: Migrated) -> tuple[list[tuple[Any, Any]], list[Any]]:
    """(input, output) pairs in order, and the objects migrate added."""
    emitted_ids = {(e.kind, e.namespace, e.name) for e in m.result.plan.emissions}
    input_ids = {_identity(o) for o in m.inputs}
    added = [o for o in m.outputs if _identity(o) in emitted_ids and _identity(o) not in input_ids]
    kept = [o for o in m.outputs if not any(o is a for a in added)]
    assert len(kept) == len(m.inputs), "an object was lost or invented"
    return list(zip(m.inputs, kept)), added


def _validate(obj: Any, kube_versions: tuple[str, ...]) -> None:
    for kube in kube_versions:
        kubernetes_validate.validate(obj, kube, strict=True)


def _pod_specs(obj: Any) -> dict[str, Any]:
    return {site.spec_pointer: (site, resolve(obj, site.spec_pointer)) for site in find_pod_sites(obj)}


def _as_pod(obj: Any, site: Any) -> dict[str, Any]:
    template = resolve(obj, site.pointer)
    metadata = {} if site.inline else dict(template.get("metadata") or {})
    metadata.setdefault("name", "template")
    spec = template if site.inline else template["spec"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


CASES = [(name, version) for version in VERSIONS for name in corpus_files()]


@pytest.mark.parametrize("name,version", CASES)
def test_corpus_output_is_valid_complete_and_stable(name: str, version: str) -> None:
    m = migrated(name, version)
    kube_versions = VERSIONS[version]
    pairs, added = _pair_objects(m)

    # No document lost: out = in + added DRA objects.
    assert m.document_count_out == m.document_count_in + len(m.result.plan.emissions)
    assert len(added) == len(m.result.plan.emissions)

    # Added DRA objects are valid for the target version.
    for obj in added:
        assert obj["kind"] in DRA_KINDS and obj["apiVersion"] == f"resource.k8s.io/{version}"
        _validate(obj, kube_versions)

    output_ids = {(_identity(o)[0], _identity(o)[1], _identity(o)[2]) for o in m.outputs}
    for before, after in pairs:
        if before == after:
            continue
        # Changed objects are valid (or invalid only for their upstream reason).
        try:
            _validate(after, kube_versions)
        except kubernetes_validate.SchemaNotFoundError:
            assert (after.get("apiVersion"), after.get("kind")) in NO_SCHEMA, after.get("kind")
        except kubernetes_validate.ValidationError as err:
            assert name in UPSTREAM_INVALID and UPSTREAM_INVALID[name] in str(err), str(err)[:400]
            # ... and the offending field is the author's, untouched by migrate.
            where = resolve(before, join_pointer(err.absolute_path))
            if err.validator == "additionalProperties":
                assert all(key in where for key in re.findall(r"'([^']+)' was unexpected", str(err)))
            else:
                assert where == err.instance

        old_specs = _pod_specs(before)
        namespace = (after.get("metadata") or {}).get("namespace")
        for pointer, (site, spec) in _pod_specs(after).items():
            if old_specs.get(pointer, (None, None))[1] == spec:
                continue
            # A rewritten PodSpec is a valid PodSpec, whatever object carries it.
            if name not in UPSTREAM_INVALID:
                _validate(_as_pod(after, site), kube_versions)
            # ... holds no legacy GPU resource any more ...
            for field in ("initContainers", "containers"):
                for container in spec.get(field) or []:
                    for section in ("limits", "requests"):
                        left = [k for k in (container.get("resources") or {}).get(section) or {}
                                if family_of(k) and not is_unsupported_accelerator(k)]
                        assert not left, f"{pointer} {container.get('name')}: {left} left in {section}"
            # ... and every claim it newly references is in the output, in its namespace.
            old_refs = {tuple(sorted(r.items())) for r in (old_specs.get(pointer, (None, {}))[1] or {})
                        .get("resourceClaims") or []}
            for ref in spec.get("resourceClaims") or []:
                if tuple(sorted(ref.items())) in old_refs:
                    continue
                if "resourceClaimTemplateName" in ref:
                    wanted = ("ResourceClaimTemplate", namespace, ref["resourceClaimTemplateName"])
                else:
                    wanted = ("ResourceClaim", namespace, ref["resourceClaimName"])
                assert wanted in output_ids, f"{pointer}: {wanted} is referenced but not in the output"

    # Running migrate on the output changes nothing.
    again = migrate_sources([Source(name, m.result.rendered.text)],
                            MigrateOptions(TranslateOptions(api_version=ApiVersion.parse(version)))).files[0]
    assert again.rendered.text == m.result.rendered.text
    assert not again.plan.emissions and not any(t.changed for t in again.plan.templates)


def test_the_corpus_is_mostly_migrated_not_silently_skipped() -> None:
    # Guards the test above: it must have something to check.
    changed = [n for n in corpus_files() if migrated(n, "v1").result.changed]
    assert len(corpus_files()) >= 70 and len(changed) >= 50


def _notes(m: Migrated) -> list[str]:
    plan = m.result.plan
    texts = [n.message for t in plan.templates for n in t.notes]
    texts += [n.message for n in plan.object_notes] + [i.message for i in plan.issues]
    return texts


def _errors(m: Migrated) -> list[str]:
    plan = m.result.plan
    return ([n.message for t in plan.templates for n in t.notes if n.severity is Severity.ERROR]
            + [i.message for i in plan.issues if i.severity is Severity.ERROR])


def test_unparseable_yaml_is_reported_with_its_line_and_kept_verbatim() -> None:
    m = migrated(UNPARSEABLE, "v1")
    assert m.result.not_migrated
    assert any("line 17" in e and "mapping values are not allowed" in e for e in _errors(m))
    broken = CORPUS.joinpath(UNPARSEABLE).read_text()
    assert m.result.rendered.text == broken  # nothing else in the file could be migrated


def test_unparseable_file_does_not_stop_the_other_files() -> None:
    names = [UNPARSEABLE, "NVIDIA__gpu-operator__tests_gpu-pod.yaml"]
    result = migrate_sources(collect_sources([str(CORPUS / n) for n in names]))
    assert result.not_migrated
    broken, good = result.files
    assert not broken.changed and good.changed
    [pod] = [o for o in _objects(parse_source(Source("out", good.rendered.text))) if o["kind"] == "Pod"]
    assert pod["spec"]["containers"][0]["resources"] == {"claims": [{"name": "cuda-vector-add-gpu"}]}


def test_invalid_legacy_value_names_object_container_and_fix() -> None:
    m = migrated(ALIYUN_MIB_VALUE, "v1")
    assert m.result.not_migrated and not m.result.changed
    [template] = [t for t in m.result.plan.templates if t.failed]
    assert template.obj.label == "Deployment binpack-4"
    [error] = [n for n in template.notes if n.severity is Severity.ERROR]
    assert error.container == "binpack-4" and "--aliyun-memory-unit MiB" in error.message


def test_aliyun_mib_value_migrates_with_the_unit_the_user_names() -> None:
    source = collect_sources([str(CORPUS / ALIYUN_MIB_VALUE)])[0]
    options = MigrateOptions(TranslateOptions(aliyun_memory_unit="MiB"))
    result = migrate_sources([source], options).files[0]
    assert result.changed and not result.not_migrated
    [deployment] = _objects(parse_source(Source("out", result.rendered.text)))[1:]
    limits = deployment["spec"]["template"]["spec"]["containers"][0]["resources"].get("limits", {})
    assert "aliyun.com/gpu-mem" not in limits


def test_requests_without_limits_are_translated_with_a_warning() -> None:
    m = migrated("kubernetes-sigs__kueue__site_static_examples_serving-workloads_sample-leaderworkerset-tas.yaml", "v1")
    assert m.result.changed
    assert any("requests without limits" in n for n in _notes(m))


def test_explicit_zero_gpus_are_removed_and_nothing_is_claimed() -> None:
    m = migrated("NVIDIA__deepops__workloads_examples_k8s_cpu-test-job.yml", "v1")
    assert m.result.changed and not m.result.plan.emissions
    (before, after), = _pair_objects(m)[0]
    assert before["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 0
    assert "nvidia.com/gpu" not in after["spec"]["containers"][0]["resources"].get("limits", {})
    assert "resourceClaims" not in after["spec"]


def test_obsolete_alpha_nvidia_gpu_is_read_as_nvidia_gpu() -> None:
    m = migrated("tkestack__gpu-admission__test_test_deploy.yaml", "v1")
    assert m.result.changed and len(m.result.plan.emissions) == 1
    assert m.result.plan.emissions[0].manifest["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
    assert any("obsolete" in n for n in _notes(m))


@pytest.mark.parametrize("name", [
    "NVIDIA__KAI-scheduler__docs_gpu-sharing_gpu-sharing.yaml",
    "NVIDIA__KAI-scheduler__docs_gpu-sharing_gpu-memory.yaml",
    "run-ai__fake-gpu-operator__design_samples_2.17_fractional_pod.yaml",
    "run-ai__fake-gpu-operator__design_samples_lt2.9_mig_pod_1g-5gb.yaml",
])
def test_gpus_requested_only_by_annotation_are_left_alone_with_a_warning(name: str) -> None:
    m = migrated(name, "v1")
    assert not m.result.changed
    assert any("only by annotation" in n for n in _notes(m))


@pytest.mark.parametrize("name,where", [
    ("kubeflow__pipelines__backend_src_apiserver_sample_pipelines_instructlab.yaml", "inside a string value"),
    ("kubeflow__mpi-operator__examples_v1alpha1_tensorflow-benchmarks.yaml", "spec.gpus: 16"),
])
def test_gpu_specs_that_cannot_be_rewritten_are_warned_about_not_touched(name: str, where: str) -> None:
    m = migrated(name, "v1")
    assert not m.result.changed
    assert any(where in n.message and n.severity is Severity.WARNING for n in m.result.plan.object_notes)


@pytest.mark.parametrize("name,container,claims_at", [
    # Kubeflow Pipelines v1 compiles to an Argo Workflow: the claims go through the template's podSpecPatch.
    ("kubeflow__pipelines__sdk_python_tests_compiler_testdata_preemptible_tpu_gpu.yaml", "/spec/templates/0/container",
     "/spec/templates/0/podSpecPatch"),
    # A KServe predictor framework: the claims go beside it, in the predictor's inlined PodSpec.
    ("kserve__kserve__docs_samples_accelerators_tensorflow-gpu.yaml", "/spec/predictor/tensorflow",
     "/spec/predictor/resourceClaims"),
])
def test_container_specs_outside_a_pod_template_are_migrated_where_the_crd_carries_claims(
        name: str, container: str, claims_at: str) -> None:
    m = migrated(name, "v1")
    assert m.result.changed and not m.result.plan.object_notes
    (before, after), = [(b, a) for b, a in _pair_objects(m)[0] if b != a]
    assert "nvidia.com/gpu" in resolve(before, container)["resources"]["limits"]
    assert "nvidia.com/gpu" not in (resolve(after, container)["resources"].get("limits") or {})
    claims = resolve(after, claims_at)
    claims = json.loads(claims)["resourceClaims"] if isinstance(claims, str) else claims
    (template,) = m.result.plan.emissions
    assert [c["resourceClaimTemplateName"] for c in claims] == [template.name]


@pytest.mark.parametrize("name,group,expected", [
    # KubeRay's own sample: the GPU worker group's `rayStartParams: {}` gets the count its limit gave.
    ("ray-project__kuberay__ray-operator_config_samples_ray-service.stable-diffusion.yaml",
     "/spec/rayClusterConfig/workerGroupSpecs/0", {"num-gpus": "1"}),
    # A group that states num-gpus keeps it as written.
    ("ray-project__kuberay__ray-operator_config_samples_ray-service.llm-serve.yaml",
     "/spec/rayClusterConfig/workerGroupSpecs/0", None),
])
def test_ray_groups_keep_the_gpu_count_kuberay_read_from_the_limit(name: str, group: str,
                                                                   expected: dict[str, str] | None) -> None:
    m = migrated(name, "v1")
    (before, after), = [(b, a) for b, a in _pair_objects(m)[0] if b != a]
    params = resolve(after, group + "/rayStartParams")
    assert params == (expected if expected is not None else resolve(before, group + "/rayStartParams"))


def test_zero_gpus_inside_an_embedded_manifest_are_no_reason_to_warn() -> None:
    m = migrated("volcano-sh__volcano__example_integrations_argo_mpi_hello-world.yaml", "v1")
    assert not m.result.changed and not m.result.plan.object_notes


def test_legacy_and_dra_mixed_in_one_workload_keeps_the_existing_claims() -> None:
    name = "GoogleCloudPlatform__kubernetes-engine-samples__ai-ml_gke-ray_raytrain_maxtext_ray-cluster.tpu-multi-slice.yaml"
    m = migrated(name, "v1")
    (before, after), = [(b, a) for b, a in _pair_objects(m)[0] if b != a]
    old = resolve(before, "/spec/workerGroupSpecs/0/template/spec")
    new = resolve(after, "/spec/workerGroupSpecs/0/template/spec")
    assert all(claim in new["resourceClaims"] for claim in old["resourceClaims"])
    assert len(new["resourceClaims"]) == len(old["resourceClaims"]) + 1
    old_claims = old["containers"][0]["resources"]["claims"]
    assert new["containers"][0]["resources"]["claims"][: len(old_claims)] == old_claims


def test_jobset_with_a_repeated_key_migrates_and_says_so() -> None:
    m = migrated("GoogleCloudPlatform__container-engine-accelerators__gpudirect-rdma_nccl-test-a4x-max-jobset.yaml", "v1")
    assert m.result.changed and not m.result.not_migrated
    assert any("'restartPolicy' appears twice" in i.message for i in m.result.plan.issues)


def test_key_written_with_a_space_before_the_colon_is_rewritten() -> None:
    m = migrated("GoogleCloudPlatform__kubernetes-engine-samples__ai-ml_llm-serving-llama_vllm_vllm-llama4-scout-17b-16e.yaml", "v1")
    assert "nvidia.com/gpu : 8" not in m.result.rendered.text
    assert m.result.plan.emissions[0].manifest["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 8
    # The Service and the Secret with an unfilled {{HF_TOKEN}} placeholder pass through byte for byte.
    untouched = m.source.text[m.source.text.index("---\napiVersion: v1\nkind: Service"):]
    assert "hf_api_token: {{HF_TOKEN}}" in untouched
    assert m.result.rendered.text.endswith(untouched)


def test_placeholder_gpu_type_is_not_turned_into_a_selector() -> None:
    m = migrated("GoogleCloudPlatform__kubernetes-engine-samples__ai-ml_verl-on-gke_ray-cluster-standard.yaml", "v1")
    assert m.result.changed
    assert any("${GPU_TYPE}" in n and "placeholder" in n for n in _notes(m))
    for emission in m.result.plan.emissions:
        assert "GPU_TYPE" not in str(emission.manifest)
