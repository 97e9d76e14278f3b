"""Real public manifests through the real webhook: every pod and pod template in the legacy corpus,
and the AdmissionReviews in the admission corpus."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonpatch
import kubernetes_validate
import pytest
import yaml

from kubectl_gpu.core import Sharing, TranslateOptions, translate_pod_template
from kubectl_gpu.manifests.locate import find_pod_sites
from tests.conftest import admission_review, patch_of
from tests.corpus import corpus_files, corpus_params, requires_corpus
from webhook import fencing
from webhook.config import load_config

LEGACY = corpus_files("legacy", "*.y*ml")
ADMISSION = corpus_files("admission", "*.json")
DRA_NODES = load_config(None, {}, {}).dra_node_selectors


def _documents(path: Path) -> list[dict]:
    try:
        return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
    except yaml.YAMLError:
        return []  # a few upstream files are not valid YAML (SOURCES.md says which)


def _resolve(doc: dict, pointer: str) -> dict:
    node = doc
    for token in pointer.lstrip("/").split("/") if pointer else []:
        token = token.replace("~1", "/").replace("~0", "~")
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node


def corpus_pods(path: Path) -> list[dict]:
    """Every Pod and pod template in the file, as the Pod a controller would create from it."""
    pods = []
    for doc in _documents(path):
        for site in find_pod_sites(doc):
            if site.inline:
                continue  # a bare PodSpec has no pod of its own (KServe predictors...)
            template = _resolve(doc, site.pointer)
            metadata = copy.deepcopy(template.get("metadata") or {})
            metadata.setdefault("name", f"corpus-{len(pods)}")
            metadata["namespace"] = "default"
            pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": copy.deepcopy(template["spec"])})
    return pods


def valid_v1_pod(pod: dict) -> str | None:
    try:
        kubernetes_validate.validate(pod, "1.34", strict=True)
    except kubernetes_validate.ValidationError as exc:
        return str(exc.message)
    return None


def what_the_core_yields(pod: dict) -> dict:
    """The core's rewrite (what `kubectl gpu migrate` applies), then the double-counting fence
    for whatever legacy GPU request is left."""
    # The webhook's default sharing is auto; the double publishes no shareable GPU, so whole GPUs.
    translation = translate_pod_template(pod, TranslateOptions(sharing=Sharing.AUTO))
    expected = jsonpatch.apply_patch(pod, list(translation.patch))
    return jsonpatch.apply_patch(expected, fencing.fence_legacy_pod(expected, DRA_NODES))


@requires_corpus
def test_the_corpus_has_gpu_pods():
    gpu_files = [p for p in LEGACY if any(fencing.legacy_gpu_resources(pod) for pod in corpus_pods(p))]
    assert len(gpu_files) >= 40


@pytest.mark.parametrize("path", corpus_params(pytest.param(p, id=p.name[:80]) for p in LEGACY))
def test_every_corpus_pod_is_admitted_as_the_core_rewrites_it(path, start_webhook, k8s_double):
    pods = corpus_pods(path)
    if not pods:
        pytest.skip("no pod template in this file (or not parseable YAML)")
    hook = start_webhook()
    for pod in pods:
        response = hook.review("/mutate", admission_review(pod))
        refused = translate_pod_template(pod, TranslateOptions()).errors
        if refused:  # migrate exits 3 on this pod: admission denies it with every reason
            assert response["allowed"] is False and response["status"]["code"] == 422
            assert all(note.message in response["status"]["message"] for note in refused)
            continue
        assert response["allowed"] is True, response.get("status")
        patched = jsonpatch.apply_patch(pod, patch_of(response))
        assert patched == what_the_core_yields(pod)
        if valid_v1_pod(pod) is None:
            assert valid_v1_pod(patched) is None
        for warning in response.get("warnings", []):
            assert len(warning) <= 120
        before = {c.get("resourceClaimTemplateName") for c in pod["spec"].get("resourceClaims") or []}
        for claim in patched["spec"].get("resourceClaims") or []:
            name = claim.get("resourceClaimTemplateName")
            if name and name not in before:
                stored = k8s_double.get("ResourceClaimTemplate", name, "default")
                assert stored is not None, f"pod admitted pointing at missing template {name}"
                kubernetes_validate.validate(stored, "1.34", strict=True)
        again = hook.review("/mutate", admission_review(patched))
        assert "patch" not in again, "mutation is not idempotent"


@pytest.mark.parametrize("path", corpus_params(pytest.param(p, id=p.name[:60]) for p in ADMISSION))
@pytest.mark.parametrize("endpoint", ["/mutate", "/validate"])
def test_corpus_admission_reviews_get_a_well_formed_answer(path, endpoint, start_webhook):
    hook = start_webhook()
    body = path.read_bytes()
    status, data = hook.request("POST", endpoint, body)
    review = json.loads(body)
    if review.get("kind") != "AdmissionReview" or "request" not in review:
        assert status == 400 and json.loads(data)["error"]  # a bare request is not a review
        return
    assert status == 200
    answer = json.loads(data)
    assert answer["apiVersion"] == "admission.k8s.io/v1" and answer["kind"] == "AdmissionReview"
    assert answer["response"]["uid"] == review["request"]["uid"]
    assert answer["response"]["allowed"] is True  # none of them asks for GPUs
