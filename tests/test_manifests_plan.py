"""The migrate plumbing, with a tiny fake translator: where pod templates are found, how the
core's patch is rebased and applied, where new DRA objects go, and what counts as present.

The fake rewrites `example.com/gpu: N` in a container's limits into one claim per container,
so these tests say nothing about GPU semantics, only about moving documents around."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from kubectl_gpu.core import ApiVersion, ClaimObject, Note, PodTranslation, Severity, TranslateOptions
from kubectl_gpu.manifests import Format, MigrateOptions, Source, migrate_sources, migrate_text
from kubectl_gpu.manifests.loader import parse_source
from kubectl_gpu.manifests.nodes import to_plain
from kubectl_gpu.manifests.objects import iter_objects


class FakeCore:
    """Records what it was asked; rewrites `example.com/gpu` limits."""

    def __init__(self, error_for: str | None = None, bad_patch: bool = False) -> None:
        self.calls: list[tuple[dict[str, Any], TranslateOptions]] = []
        self.error_for = error_for
        self.bad_patch = bad_patch

    def __call__(self, template: Mapping[str, Any], options: TranslateOptions) -> PodTranslation:
        self.calls.append((json.loads(json.dumps(template)), options))
        ops: list[dict[str, Any]] = []
        claims: list[ClaimObject] = []
        notes: list[Note] = []
        spec = template["spec"]
        for index, container in enumerate(spec["containers"]):
            limits = (container.get("resources") or {}).get("limits") or {}
            if "example.com/gpu" not in limits:
                continue
            if container["name"] == self.error_for:
                return PodTranslation((), (), (Note(Severity.ERROR, "bad value; use 1 or 2", container["name"]),))
            count = int(limits["example.com/gpu"])
            name = f"fake-{count}"
            ops.append({"op": "remove", "path": f"/spec/containers/{index}/resources/limits/example.com~1gpu"})
            ops.append({"op": "add", "path": f"/spec/containers/{index}/resources/claims",
                        "value": [{"name": "gpu"}]})
            entry = {"name": "gpu", "resourceClaimTemplateName": name}
            if "resourceClaims" in spec or any(o["path"] == "/spec/resourceClaims" for o in ops):
                ops.append({"op": "add", "path": "/spec/resourceClaims/-", "value": entry})
            else:
                ops.append({"op": "add", "path": "/spec/resourceClaims", "value": [entry]})
            claims.append(ClaimObject("ResourceClaimTemplate", name, options.api_version,
                                      {"devices": {"requests": [{"name": "gpu", "exactly": {
                                          "deviceClassName": "gpu.example.com", "count": count}}]}}))
            notes.append(Note(Severity.INFO, f"example.com/gpu: {count} -> {name}", container["name"]))
        if ops:
            ops.append({"op": "add", "path": "/metadata/annotations" if template.get("metadata") is not None
                        else "/metadata", "value": {"migrated": "yes"} if template.get("metadata") is not None
                        else {"annotations": {"migrated": "yes"}}})
        if self.bad_patch and ops:
            ops.append({"op": "remove", "path": "/spec/nonexistent"})
        return PodTranslation(tuple(ops), tuple(claims), tuple(notes))


def run(text: str, core: FakeCore | None = None, options: MigrateOptions = MigrateOptions(),
        output_format: Format | None = None):
    # The fake core reacts to names the real one does not: every document is read.
    return migrate_text(text, options, output_format, translate=core or FakeCore(), unread=None)


def objects(text: str) -> list[dict[str, Any]]:
    parsed = parse_source(Source("out", text))
    return [to_plain(o) for i, d in enumerate(parsed.documents) for _, o in iter_objects(i, d.tree)]


POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: trainer
spec:
  containers:
  - name: main
    image: cuda
    resources:
      limits:
        example.com/gpu: 2
"""


def test_a_pod_is_its_own_pod_template_and_gets_its_claim_template_first() -> None:
    result = run(POD)
    out = objects(result.rendered.text)
    assert [o["kind"] for o in out] == ["ResourceClaimTemplate", "Pod"]
    assert out[0]["metadata"]["name"] == "fake-2"
    assert out[1]["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "fake-2"}]
    assert out[1]["spec"]["containers"][0]["resources"] == {"limits": {}, "claims": [{"name": "gpu"}]}


@pytest.mark.parametrize("wrapper,pointer", [
    ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n", "/spec/template"),
    ("apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly}\nspec:\n  jobTemplate:\n    spec:\n"
     "      template:\n", "/spec/jobTemplate/spec/template"),
    ("apiVersion: example.io/v1\nkind: Anything\nmetadata: {name: x}\nspec:\n  groups:\n  - template:\n",
     "/spec/groups/0/template"),
])
def test_pod_templates_are_found_by_shape_wherever_they_are_nested(wrapper: str, pointer: str) -> None:
    last = wrapper.splitlines()[-1]
    depth = last.index("template:") + 2
    body = "".join(" " * depth + line + "\n" for line in [
        "spec:", "  containers:", "  - name: main", "    resources:", "      limits:", "        example.com/gpu: 1"])
    core = FakeCore()
    result = run(wrapper + body, core)
    assert [t.site.pointer for t in result.plan.templates] == [pointer]
    assert len(core.calls) == 1 and result.changed


def test_unknown_kinds_and_objects_without_pod_templates_pass_through_byte_for_byte() -> None:
    text = ("# a comment\napiVersion: example.io/v1\nkind: Widget\nmetadata:   {name: w}\n"
            "spec:\n    containers: 'not a list'\n    odd:   [1,2]\n")
    result = run(text)
    assert result.rendered.text == text and not result.changed


def test_each_workload_shares_claims_within_itself_and_bare_pods_do_not() -> None:
    deployment = ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: ml}\nspec:\n"
                  "  template:\n    spec:\n      containers:\n      - name: a\n        image: x\n")
    core = FakeCore()
    run(deployment + "---\n" + POD, core)
    assert [options.sharing_group for _, options in core.calls] == ["Deployment/web", None]


def test_options_reach_the_core_unchanged_apart_from_the_sharing_group() -> None:
    core = FakeCore()
    options = MigrateOptions(TranslateOptions(api_version=ApiVersion.V1BETA1, gpu_memory="80Gi"))
    run(POD, core, options)
    [(_, seen)] = core.calls
    assert seen.api_version is ApiVersion.V1BETA1 and seen.gpu_memory == "80Gi"


def test_a_template_is_emitted_once_per_namespace_and_name_before_its_first_user() -> None:
    text = "\n---\n".join(
        POD.replace("name: trainer", f"name: p{i}\n  namespace: {ns}") for i, ns in enumerate(["a", "b", "a"])
    )
    out = objects(run(text).rendered.text)
    assert [(o["kind"], o["metadata"].get("namespace")) for o in out] == [
        ("ResourceClaimTemplate", "a"), ("Pod", "a"), ("ResourceClaimTemplate", "b"), ("Pod", "b"), ("Pod", "a")]


def test_objects_without_namespace_get_claims_in_the_namespace_option() -> None:
    out = objects(run(POD, options=MigrateOptions(namespace="team")).rendered.text)
    assert out[0]["metadata"]["namespace"] == "team"
    assert "namespace" not in out[1]["metadata"]  # the user's object is not edited beyond GPUs


def test_a_claim_template_already_in_the_input_is_not_emitted_again() -> None:
    existing = ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata:\n  name: fake-2\n"
                "spec:\n  spec:\n    devices:\n      requests:\n      - name: gpu\n        exactly:\n"
                "          deviceClassName: gpu.example.com\n          count: 2\n")
    result = run(POD + "---\n" + existing)
    assert not result.plan.emissions and not result.plan.object_notes
    assert [o["kind"] for o in objects(result.rendered.text)] == ["Pod", "ResourceClaimTemplate"]


def test_an_existing_claim_template_with_another_spec_is_kept_and_reported() -> None:
    existing = ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata:\n  name: fake-2\n"
                "spec:\n  spec: {devices: {requests: []}}\n")
    result = run(existing + "---\n" + POD)
    assert not result.plan.emissions
    [note] = result.plan.object_notes
    assert note.severity is Severity.WARNING and "different spec" in note.message


def test_claims_go_into_a_list_as_items_before_their_first_user() -> None:
    pod = json.loads(json.dumps(objects(POD)[0]))
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": [service, pod]}, indent=2)
    result = run(text)
    assert result.rendered.format is Format.JSON
    items = json.loads(result.rendered.text)["items"]
    assert [i["kind"] for i in items] == ["Service", "ResourceClaimTemplate", "Pod"]
    assert items[2]["spec"]["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]


def test_a_yaml_list_gets_its_claims_as_items_too() -> None:
    text = "apiVersion: v1\nkind: List\nitems:\n" + "".join(
        ("- " if i == 0 else "  ") + line + "\n" for i, line in enumerate(POD.splitlines()))
    out = objects(run(text).rendered.text)
    assert [o["kind"] for o in out] == ["ResourceClaimTemplate", "Pod"]
    assert len(parse_source(Source("x", run(text).rendered.text)).documents) == 1


def test_json_input_with_one_object_becomes_a_list_when_a_claim_is_added() -> None:
    text = json.dumps(objects(POD)[0], indent=4) + "\n"
    rendered = run(text).rendered
    value = json.loads(rendered.text)
    assert value["kind"] == "List" and [i["kind"] for i in value["items"]] == ["ResourceClaimTemplate", "Pod"]
    assert rendered.text.splitlines()[1].startswith("    \"")  # the file's own indentation


def test_yaml_can_be_written_as_json_and_back() -> None:
    as_json = run(POD, output_format=Format.JSON).rendered
    assert as_json.format is Format.JSON and json.loads(as_json.text)["kind"] == "List"
    as_yaml = run(as_json.text, output_format=Format.YAML).rendered
    assert [o["kind"] for o in objects(as_yaml.text)] == ["ResourceClaimTemplate", "Pod"]


def test_an_error_from_the_core_leaves_the_template_untouched_and_marks_the_file() -> None:
    result = run(POD, FakeCore(error_for="main"))
    assert result.rendered.text == POD and result.not_migrated
    [template] = result.plan.templates
    assert template.failed and template.obj.label == "Pod trainer"


def test_a_patch_that_does_not_fit_is_an_error_not_a_half_rewrite() -> None:
    result = run(POD, FakeCore(bad_patch=True))
    assert result.rendered.text == POD and result.not_migrated
    assert "does not fit" in result.plan.templates[0].notes[-1].message


def test_an_inline_pod_spec_is_rewritten_without_pod_metadata() -> None:
    text = ("apiVersion: serving.kserve.io/v1alpha2\nkind: LLMInferenceService\nmetadata: {name: llm}\n"
            "spec:\n  template:\n    containers:\n    - name: main\n      resources:\n        limits:\n"
            "          example.com/gpu: 1\n")
    result = run(text)
    out = objects(result.rendered.text)[1]
    assert out["spec"]["template"]["resourceClaims"][0]["resourceClaimTemplateName"] == "fake-1"
    assert out["metadata"] == {"name": "llm"}
    assert any("no pod metadata" in n.message for n in result.plan.templates[0].notes)


def test_a_document_that_does_not_parse_is_kept_and_the_others_migrate() -> None:
    broken = "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: [unclosed\n"
    text = "---\n" + broken + "---\n" + POD
    result = run(text)
    assert broken in result.rendered.text and result.not_migrated
    [issue] = result.plan.issues
    assert issue.severity is Severity.ERROR and "line 5" in issue.message
    assert [o["kind"] for o in objects(result.rendered.text)] == ["ResourceClaimTemplate", "Pod"]


def test_duplicate_keys_with_different_values_block_that_document_only() -> None:
    text = POD.replace("  name: trainer\n", "  name: trainer\n  name: other\n") + "---\n" + POD
    result = run(text)
    assert result.not_migrated and len(result.plan.emissions) == 1
    assert any("appears twice with different values" in i.message for i in result.plan.issues)
    assert result.rendered.text.startswith(POD.replace("  name: trainer\n", "  name: trainer\n  name: other\n"))


def test_migrating_twice_changes_nothing_the_second_time() -> None:
    first = run(POD + "---\n" + POD.replace("trainer", "second")).rendered.text
    again = run(first)
    assert again.rendered.text == first and not again.plan.emissions


def test_several_files_share_one_claim_and_each_is_rendered_on_its_own() -> None:
    result = migrate_sources([Source("a.yaml", POD), Source("b.yaml", POD.replace("trainer", "t2"))],
                             translate=FakeCore(), unread=None)
    first, second = result.files
    assert len(first.plan.emissions) == 1 and not second.plan.emissions
    assert "kind: ResourceClaimTemplate" not in second.rendered.text and second.changed
