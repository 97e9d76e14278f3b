"""What survives a migrate: comments, key order, quotes, separators, untouched documents byte
for byte, and the file's own indentation style.  Uses the real core."""

from __future__ import annotations

import pytest

from kubectl_gpu.manifests import migrate_text
from kubectl_gpu.manifests.stream import split_stream
from kubectl_gpu.manifests.yamlio import Indentation, guess_indentation

DEPLOYMENT = """\
# Inference service for team A.
# Owner: ml-platform@example.com

# Keep the config map first: the deployment mounts it.
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings   # referenced below
data:
  MODEL: "llama"
  flags:    '--fast'
---
# The GPU deployment
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2   # two pods, two GPUs
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
        - name: server
          image: "vllm/vllm-openai:v0.10.0"
          args: ["--port", "8000"]
          resources:
            limits:
              cpu: "4"          # four cores
              nvidia.com/gpu: 1 # one whole GPU
              # memory follows
              memory: 16Gi
      # no node selector: any GPU node
...
"""


@pytest.fixture(scope="module")
def migrated() -> str:
    return migrate_text(DEPLOYMENT).rendered.text


def test_untouched_documents_come_out_byte_for_byte(migrated: str) -> None:
    config_map = DEPLOYMENT.split("---\n")[0]
    assert migrated.startswith(config_map.split("# Keep")[0])  # the file header stays on top
    assert config_map.split("\n\n", 1)[1] in migrated


def test_comments_in_the_rewritten_document_survive(migrated: str) -> None:
    for comment in ("# The GPU deployment", "# two pods, two GPUs", "# four cores", "# memory follows",
                    "# no node selector: any GPU node"):
        assert comment in migrated, comment


def test_only_the_rewritten_line_and_its_own_comment_go(migrated: str) -> None:
    assert "nvidia.com/gpu: 1" not in migrated and "# one whole GPU" not in migrated


def test_key_order_quotes_and_flow_style_survive(migrated: str) -> None:
    deployment = migrated.split("# The GPU deployment", 1)[1]
    keys = [line.split(":")[0].strip() for line in deployment.splitlines() if line and line[0].isalpha()]
    assert keys == ["apiVersion", "kind", "metadata", "spec"]
    assert 'image: "vllm/vllm-openai:v0.10.0"' in deployment
    assert 'args: ["--port", "8000"]' in deployment
    assert "labels: {app: web}" in deployment
    assert 'cpu: "4"' in deployment


def test_the_files_sequence_indentation_is_kept(migrated: str) -> None:
    assert "\n        - name: server\n" in migrated
    assert "\n      - name: server-gpu\n" in migrated or "\n        - name: server-gpu\n" in migrated


def test_document_markers_survive(migrated: str) -> None:
    assert migrated.count("\n---\n") == 2  # the original one, and one before the new claim template
    assert migrated.rstrip().endswith("...")


def test_the_new_claim_template_sits_between_the_config_map_and_the_deployment(migrated: str) -> None:
    order = [migrated.index(marker) for marker in ("kind: ConfigMap", "kind: ResourceClaimTemplate",
                                                   "kind: Deployment")]
    assert order == sorted(order)


def test_splitting_a_stream_loses_nothing() -> None:
    text = "# head\n---\na: 1\n--- # second\nb: |\n  --- not a marker, indented\n...\n# tail\n---\n"
    chunks = split_stream(text)
    assert "".join(c.text for c in chunks) == text
    assert [c.body for c in chunks] == ["# head\n", "a: 1\n", "b: |\n  --- not a marker, indented\n",
                                        "# tail\n", ""]
    assert chunks[2].header == "--- # second\n" and chunks[2].trailer == "...\n"


@pytest.mark.parametrize("text,expected", [
    ("a:\n  b:\n  - x\n", Indentation(2, 2, 0)),
    ("a:\n  b:\n    - x\n", Indentation(2, 4, 2)),
    ("a:\n    b:\n        -   x\n", Indentation(4, 8, 4)),
])
def test_indentation_is_guessed_from_the_file(text: str, expected: Indentation) -> None:
    assert guess_indentation(text) == expected


def test_kubernetes_reads_yaml_1_1_values_and_json_output_agrees() -> None:
    from kubectl_gpu.manifests import Format
    text = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: 'yes'}\n---\n"
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: a\n"
            "    image: x\n    stdin: yes\n  volumes:\n  - name: v\n    configMap: {name: c, defaultMode: 0644}\n")
    import json
    out = json.loads(migrate_text(text, output_format=Format.JSON).rendered.text)
    config_map, pod = out["items"]
    assert config_map["data"]["a"] == "yes"
    assert pod["spec"]["containers"][0]["stdin"] is True
    assert pod["spec"]["volumes"][0]["configMap"]["defaultMode"] == 0o644


def test_comment_lines_closing_a_block_stay_after_what_migrate_appends(migrated: str) -> None:
    resources = migrated.index("          resources:")
    assert migrated.index("# memory follows") < migrated.index("memory: 16Gi") < migrated.index("claims:")
    assert migrated.index("# no node selector: any GPU node") > migrated.index("resourceClaimTemplateName")
    assert resources < migrated.index("claims:")


def test_a_template_without_metadata_gets_it_above_its_spec() -> None:
    job = ("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\nspec:\n  template:\n    spec:\n"
           "      restartPolicy: Never\n      containers:\n      - name: a\n        image: x\n"
           "        resources:\n          limits:\n            nvidia.com/gpu: 1\n")
    out = migrate_text(job).rendered.text
    template = out[out.index("  template:"):]
    assert template.index("    metadata:") < template.index("    spec:")


def test_windows_line_endings_are_kept() -> None:
    text = DEPLOYMENT.replace("\n", "\r\n")
    out = migrate_text(text).rendered.text
    assert "kind: ResourceClaimTemplate\r\n" in out
    assert "\n" not in out.replace("\r\n", "")
