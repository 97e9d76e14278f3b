"""A list page whose JSON names none of the texts a caller looks for is read without its items
(kubectl_gpu/k8s/lists.py `unmentioned_page`): describe's pods, of which only those naming a legacy
GPU resource matter.  Pagination goes on through such pages (their continue token is read), and
anything that could spell a text another way is decoded whole."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from kubectl_gpu.inspect.legacy import LEGACY_TEXTS
from kubectl_gpu.k8s.lists import unmentioned_page
from tests import builders as b


def page(*items: dict, token: str = "") -> bytes:
    """A PodList as the API server writes it (Go's field order: kind, apiVersion, metadata, items)."""
    metadata = {"resourceVersion": "42", **({"continue": token} if token else {})}
    return json.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": metadata, "items": list(items)},
                      separators=(",", ":")).encode()


CLAIM_POD = b.pod("w", "ml", node_name="n", claims=[{"name": "gpu", "resourceClaimTemplateName": "t"}])
LEGACY_POD = b.pod("old", "ml", node_name="n", limits={"nvidia.com/gpu": 1})


def test_a_page_naming_no_legacy_resource_is_read_without_its_items():
    assert unmentioned_page(page(CLAIM_POD, token="next"), LEGACY_TEXTS) == {
        "kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "42", "continue": "next"}, "items": []}


@pytest.mark.parametrize("raw", [
    page(CLAIM_POD, LEGACY_POD),  # names nvidia.com/
    page(CLAIM_POD).replace(b'"main"', b'"NVIDIA.COM/GPU"'),  # upper case too
    page(CLAIM_POD).replace(b'"main"', b'"m\\u0061in"'),  # an escape could spell a name
    page(CLAIM_POD).replace(b'"main"', b'"a\\/b"'),
    json.dumps({"items": [CLAIM_POD], "metadata": {}, "kind": "PodList"}).encode(),  # items first
    b'{"kind":"PodList","metadata":[],"items":[]}',
])
def test_anything_else_is_decoded_whole(raw):
    assert unmentioned_page(raw, LEGACY_TEXTS) is None


@pytest.mark.parametrize("text", LEGACY_TEXTS)
def test_a_page_naming_any_legacy_text_is_decoded_whole(text):
    named = b.pod("x", "ml", node_name="n", limits={text.decode(): 1})
    assert unmentioned_page(page(CLAIM_POD, named), LEGACY_TEXTS) is None


def test_describe_finds_a_legacy_pod_behind_pages_it_skips(k8s_double):
    """1,200 pods in pages of 1,000: the first page names no legacy resource and is skipped, the
    legacy pod on the second is found and counted."""
    k8s_double.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
                    b.node("legacy-1", legacy={"nvidia.com/gpu": "4"}))
    k8s_double.seed(*(b.pod(f"w-{i:04d}", "ml", node_name="legacy-1") for i in range(1199)))
    k8s_double.seed(b.pod("w-9999", "ml", node_name="legacy-1", limits={"nvidia.com/gpu": 2}))
    result = CliRunner().invoke(main, ["describe", "-o", "json", "--kubeconfig", k8s_double.kubeconfig_path()])
    assert result.exit_code == 0, result.output
    [node] = json.loads(result.output)["nodes"]
    assert (node["name"], node["legacyGpuPods"]) == ("legacy-1", 1)
    assert k8s_double.count(verb="list", resource="pods") == 2
