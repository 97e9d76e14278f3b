"""`kubectl gpu migrate` never crashes and never loses anything: one minimal input per shape of
YAML, JSON and file system that once made it print a traceback, hang, or damage its output
with exit 0 (issue 14).  Each test states the documented behaviour it holds migrate to."""

from __future__ import annotations

import io
import json
import os
import stat
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from click.testing import CliRunner
from ruamel.yaml import YAML

from kubectl_gpu.cli.main import main
from kubectl_gpu.manifests import Format, migrate_text
from kubectl_gpu.manifests.loader import collect_sources, InputError

GPU_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
  - name: c
    image: x
    resources:
      limits:
        nvidia.com/gpu: 1
"""
CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n"


def objects(text: str) -> list[dict]:
    """The objects a YAML 1.2 reader (ruamel, as kubectl's sigs.k8s.io/yaml reads the same
    structure) finds in a stream; fails the test when the text does not parse."""
    return [d for d in YAML(typ="safe", pure=True).load_all(text) if d is not None]


def legacy_requests(node: object) -> list[str]:
    """Every nvidia.com/gpu key under a `limits`/`requests` mapping anywhere in `node`."""
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("limits", "requests") and isinstance(value, dict) and "nvidia.com/gpu" in value:
                found.append(key)
            found.extend(legacy_requests(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(legacy_requests(value))
    return found


def kinds(text: str) -> list[str]:
    return [d["kind"] for d in objects(text)]


def assert_fixed_point(text: str) -> None:
    """Migrating migrate's own output changes nothing (a rerun in CI must not add claims)."""
    again = migrate_text(text)
    assert not again.changed, again.rendered.text
    assert not again.not_migrated


def migrate(*args: str, stdin: str | None = None):
    return CliRunner().invoke(main, ["migrate", *args], input=stdin)


# --- silent damage --------------------------------------------------------------------------


@pytest.mark.parametrize("marker", ["--- !!map", "--- # the pod"])
def test_a_document_marker_with_content_keeps_the_document_before_it(marker: str) -> None:
    """YAML 1.2 §9.1.4: `---` may carry content or a comment on its own line; the document
    before it ends there.  Inserting the claim template must not glue the two together."""
    result = migrate_text(CONFIG_MAP + marker + "\n" + GPU_POD)
    assert kinds(result.rendered.text) == ["ConfigMap", "ResourceClaimTemplate", "Pod"]
    assert not result.not_migrated
    assert_fixed_point(result.rendered.text)


def test_a_flow_document_on_the_marker_line_is_migrated_and_stays_separate() -> None:
    flow = ("--- {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: "
            "[{name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]}}\n")
    result = migrate_text(CONFIG_MAP + flow)
    assert kinds(result.rendered.text) == ["ConfigMap", "ResourceClaimTemplate", "Pod"]
    assert not legacy_requests(objects(result.rendered.text)[2])
    assert_fixed_point(result.rendered.text)


def test_a_yaml_directive_is_kept_with_its_document_and_the_stream_stays_valid() -> None:
    """YAML 1.2 §6.8: directives precede the `---` of the document they govern, and a document
    that follows another must come after an explicit end (`...`)."""
    result = migrate_text("%YAML 1.2\n---\n" + GPU_POD)
    assert not result.not_migrated, [i.message for i in result.plan.issues]
    assert kinds(result.rendered.text) == ["ResourceClaimTemplate", "Pod"]
    assert result.rendered.text.count("%YAML 1.2") == 1
    assert_fixed_point(result.rendered.text)


def test_a_tag_directive_governs_its_own_document_only() -> None:
    text = CONFIG_MAP + "...\n%TAG !k! tag:yaml.org,2002:\n---\n" + GPU_POD.replace(
        "image: x", "image: !k!str x")
    result = migrate_text(text)
    assert not result.not_migrated, [i.message for i in result.plan.issues]
    assert kinds(result.rendered.text) == ["ConfigMap", "ResourceClaimTemplate", "Pod"]
    assert result.rendered.text.startswith(CONFIG_MAP)
    assert_fixed_point(result.rendered.text)


@pytest.mark.parametrize("flow", ["{name: proxy, image: y}", "{name: proxy, image: y, args: [a, b]}"])
def test_a_commented_flow_item_beside_a_block_item_is_migrated_with_its_comments(flow: str) -> None:
    """YAML 1.2 (8.2.1 block sequences) allows any node as an item, flow collections included,
    and design.md promises comments survive a rewrite: the GPU container beside a commented
    flow-style sidecar is migrated, and both comments and the sidecar's flow style stay."""
    text = GPU_POD.replace("  containers:\n  - name: c\n",
                           f"  containers:  # two\n  - {flow}  # sidecar\n  - name: c\n")
    result = migrate_text(text)
    assert not result.not_migrated, result.rendered.document_errors
    pod = objects(result.rendered.text)[-1]
    assert pod["spec"]["containers"][1]["resources"]["claims"]
    assert not legacy_requests(pod)
    assert f"  containers:  # two\n  - {flow}  # sidecar\n  - name: c\n    image: x\n" in result.rendered.text
    assert_fixed_point(result.rendered.text)


def test_a_merge_key_inside_limits_is_migrated_once_and_the_rerun_changes_nothing() -> None:
    """YAML merge keys (`<<`) put keys into a mapping; the legacy request they bring must go,
    or every rerun adds another claim."""
    text = GPU_POD.replace("        nvidia.com/gpu: 1\n", "        <<: {nvidia.com/gpu: 1}\n        cpu: 1\n")
    result = migrate_text(text)
    pod = objects(result.rendered.text)[-1]
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"cpu": 1}
    assert_fixed_point(result.rendered.text)


def test_comments_after_a_removed_gpu_block_stay_before_what_they_describe() -> None:
    text = GPU_POD + "        # volumes follow\n  volumes: []\n# end of the pod\n"
    result = migrate_text(text).rendered.text
    assert "# volumes follow" in result and "# end of the pod" in result
    assert result.index("# volumes follow") < result.index("volumes: []")
    assert result.rstrip().endswith("# end of the pod")


@pytest.mark.parametrize("field_name, value", [
    ("resourceClaims", "{a: b}"), ("resourceClaims", "gpu"), ("initContainers", "{c: d}")])
def test_a_field_of_the_wrong_type_is_reported_not_overwritten(field_name: str, value: str) -> None:
    """Kubernetes' PodSpec types resourceClaims and initContainers as lists: the API server
    rejects anything else, and migrate must not replace what the author wrote."""
    text = GPU_POD.replace("spec:\n", f"spec:\n  {field_name}: {value}\n", 1)
    result = migrate_text(text)
    assert result.rendered.text == text
    assert result.not_migrated
    notes = " ".join(n.render() for t in result.plan.templates for n in t.notes)
    assert f"spec.{field_name}" in notes and "requires a list" in notes


def test_migrates_own_multi_file_json_output_is_read_back(tmp_path: Path) -> None:
    pod = yaml.safe_load(GPU_POD)
    for name in ("a", "b"):
        pod["metadata"]["name"] = name
        (tmp_path / f"{name}.json").write_text(json.dumps(pod, indent=2))
    first = migrate(str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    assert first.exit_code == 0, first.output
    second = migrate("-", stdin=first.stdout)
    assert second.exit_code == 0, second.output
    assert second.stdout == first.stdout  # already migrated: read back, nothing more to do


def test_an_unreadable_subdirectory_is_an_error_not_a_silent_skip(tmp_path: Path, monkeypatch) -> None:
    """`--check` must not pass over manifests it could not read."""
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "pod.yaml").write_text(GPU_POD)
    real_scandir = os.scandir

    def scandir(path=".", *args):
        if Path(path) == tmp_path / "team":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path, *args)

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(InputError, match="team: cannot read this directory"):
        collect_sources([str(tmp_path)])
    result = migrate("--check", str(tmp_path))
    assert result.exit_code == 2 and "cannot read this directory" in result.output


def test_a_byte_order_mark_on_stdin_is_not_content() -> None:
    (source,) = collect_sources(["-"], io.StringIO("\ufeff" + GPU_POD))
    assert source.text == GPU_POD
    result = migrate("-", stdin="\ufeff" + GPU_POD)
    assert result.exit_code == 0 and "\ufeff" not in result.stdout


@pytest.mark.parametrize("codec, mark", [("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff")])
def test_utf16_with_a_byte_order_mark_is_read_as_kubectl_reads_it(tmp_path: Path, codec: str, mark: bytes) -> None:
    """kubectl decodes files and stdin through unicode.BOMOverride(unicode.UTF8.NewDecoder())
    (k8s.io/cli-runtime/pkg/resource/visitor.go): a UTF-16 byte order mark makes the rest UTF-16.
    --in-place writes the file back in the encoding it had."""
    data = mark + GPU_POD.encode(codec)
    result = migrate("-", stdin=data)
    assert result.exit_code == 0, result.output
    assert result.stdout == migrate_text(GPU_POD).rendered.text
    path = tmp_path / "pod.yaml"
    path.write_bytes(data)
    assert migrate("--in-place", str(path)).exit_code == 0
    assert path.read_bytes() == mark + migrate_text(GPU_POD).rendered.text.encode(codec)


@pytest.mark.parametrize("named", ["link", "directory"])
def test_in_place_on_a_dangling_symlink_is_refused_naming_where_it_points(tmp_path: Path, named: str) -> None:
    """Also inside a directory: kubectl apply -f DIR fails on it too (its FileVisitor opens every
    file the walk lists, k8s.io/cli-runtime/pkg/resource/visitor.go), and skipping it silently
    would let --check pass over a manifest nobody read."""
    link = tmp_path / "link.yaml"
    link.symlink_to("gone.yaml")
    result = migrate("--in-place", str(link if named == "link" else tmp_path))
    assert result.exit_code == 2
    assert f"{link}: a symbolic link to gone.yaml, which does not exist" in result.output
    assert link.is_symlink() and not (tmp_path / "gone.yaml").exists()


def test_json_duplicate_keys_are_refused_as_yaml_duplicates_are() -> None:
    """Kubernetes' strict decoding rejects duplicate fields in JSON and YAML alike
    (kubectl --validate=strict: "duplicate field"); Python's json would silently keep the last."""
    text = ('{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": '
            '[{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1, "nvidia.com/gpu": 2}}}]}}')
    result = migrate_text(text)
    assert result.not_migrated and result.rendered.text == text
    assert any("'nvidia.com/gpu' appears twice" in i.message for i in result.plan.issues)


def test_in_place_on_a_symlink_rewrites_the_target_and_keeps_the_link(tmp_path: Path) -> None:
    target = tmp_path / "real.yaml"
    target.write_text(GPU_POD)
    link = tmp_path / "link.yaml"
    link.symlink_to(target.name)
    result = migrate("--in-place", str(link))
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and os.readlink(link) == "real.yaml"
    assert "resourceClaims" in target.read_text()


# --- tracebacks and hangs -------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    # limits and requests are one node (an anchor and its alias)
    GPU_POD.replace("      limits:\n        nvidia.com/gpu: 1\n",
                    "      limits: &l\n        nvidia.com/gpu: 1\n        cpu: 1\n      requests: *l\n"),
    # one container reused as an init container
    GPU_POD.replace("  - name: c\n", "  - &c\n    name: c\n", 1).replace(
        "        nvidia.com/gpu: 1\n", "        nvidia.com/gpu: 1\n  initContainers:\n  - *c\n"),
    # a PyTorchJob whose Worker template is the Master's
    "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: j}\nspec:\n  pytorchReplicaSpecs:\n"
    "    Master:\n      template: &t\n        spec:\n          containers:\n          - name: pytorch\n"
    "            image: x\n            resources: {limits: {nvidia.com/gpu: 1}}\n    Worker:\n      template: *t\n",
    # a merge key inside resources
    "defaults: &r {limits: {nvidia.com/gpu: 1}}\n" + GPU_POD.replace(
        "    resources:\n      limits:\n        nvidia.com/gpu: 1\n", "    resources: {<<: *r, requests: {cpu: 1}}\n"),
], ids=["limits-alias", "container-alias", "template-alias", "merge-in-resources"])
def test_shared_nodes_are_unshared_before_they_change(text: str) -> None:
    result = migrate_text(text)
    assert not result.not_migrated, [n.render() for t in result.plan.templates for n in t.notes]
    for obj in objects(result.rendered.text):
        assert not legacy_requests(obj.get("spec")), obj
    assert_fixed_point(result.rendered.text)


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", "1e400", "'1e5000'", "'1e99999999'", "'NaN'",
                                   "'99999999999999999999999Ei'"])
@pytest.mark.parametrize("resource", ["nvidia.com/gpu", "nvidia.com/gpumem", "aliyun.com/gpu-mem",
                                      "nvidia.com/vcuda-memory"])
def test_a_quantity_kubernetes_rejects_is_a_clear_error_naming_container_and_valid_forms(
        resource: str, value: str) -> None:
    """Kubernetes quantities (apimachinery resource.Quantity) are finite and hold at most
    2^63-1; `.nan`, infinities and giant exponents are not quantities."""
    text = GPU_POD.replace("nvidia.com/gpu: 1", f"{resource}: {value}")
    result = migrate_text(text)
    assert result.not_migrated and result.rendered.text == text
    notes = " ".join(n.render() for t in result.plan.templates for n in t.notes)
    assert "container 'c'" in notes and resource in notes
    assert "examples: 1, 500m" in notes or "2^63-1" in notes


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_json_numbers_that_are_no_quantity_are_a_clear_error(number: str) -> None:
    pod = yaml.safe_load(GPU_POD)
    text = json.dumps(pod).replace('"nvidia.com/gpu": 1', f'"nvidia.com/gpu": {number}')
    result = migrate_text(text)
    assert result.not_migrated and result.rendered.text == text


@pytest.mark.parametrize("text", [
    "x: " + "[" * 300 + "]" * 300 + "\n",
    "x:\n" + "".join("  " * i + "- \n" for i in range(1, 300)) + "  " * 300 + "- 1\n",
    '{"x": ' + "[" * 1200 + "]" * 1200 + "}",
], ids=["yaml-flow", "yaml-block", "json"])
def test_deep_nesting_is_a_clear_error_with_a_line(text: str) -> None:
    result = migrate_text(CONFIG_MAP + "---\n" + text if not text.startswith("{") else text)
    assert result.not_migrated
    (issue,) = [i for i in result.plan.issues if "nested deeper" in i.message]
    assert "line " in issue.message
    assert CONFIG_MAP in result.rendered.text or text == result.rendered.text


def test_a_deep_document_does_not_stop_the_documents_after_it() -> None:
    deep = "x: " + "[" * 300 + "]" * 300 + "\n"
    result = migrate_text(deep + "---\n" + GPU_POD)
    assert kinds(result.rendered.text.split("---\n", 1)[1]) == ["ResourceClaimTemplate", "Pod"]


@pytest.mark.parametrize("value", ["!!bool linux", "!!int abc", "!!omap 1", "!!float x", "!!timestamp q"])
def test_a_core_tag_on_a_value_it_cannot_hold_is_a_parse_error_for_that_document(value: str) -> None:
    result = migrate_text(CONFIG_MAP + "data:\n  k: " + value + "\n---\n" + GPU_POD)
    assert result.not_migrated
    assert any("could not parse this document" in i.message for i in result.plan.issues)
    assert result.rendered.text.startswith(CONFIG_MAP + "data:\n  k: " + value)
    assert "resourceClaims" in result.rendered.text


@pytest.mark.parametrize("value", ["!!bool linux", "!!int abc", "!!omap 1", "!!float x", "!!timestamp q",
                                   "!!set 1", "!!seq {a: 1}"])
def test_a_value_that_does_not_fit_its_core_tag_is_reported_at_its_own_line(value: str) -> None:
    """YAML 1.1 types (https://yaml.org/type/: bool, int, float, timestamp, omap, set) and the
    YAML 1.2 core schema define what each tag holds; a value outside it is an error at the
    line that holds it (issue 14: report file and line), not at the document's first line."""
    text = "# settings\n\n" + CONFIG_MAP + "data:\n  j: '1'\n  k: " + value + "\n"
    result = migrate_text(text)
    [issue] = result.plan.issues
    assert "line 9:" in issue.message, issue.message
    assert result.rendered.text == text


@pytest.mark.parametrize("value", ["!Ref x", "!!binary aGVsbG8=", "!!set {a, b}", "{? [a, b] : c}", ".nan",
                                   "!Sub [a, b]", "!If {k: v}", "!GetAtt\n    - a\n    - b"])
def test_json_output_of_a_value_json_cannot_hold_is_a_clear_error_and_yaml_is_written(value: str) -> None:
    """RFC 8259 has no tags, binary, sets, non-string keys, NaN: such a document cannot become
    JSON, even unchanged; the file is written as (migrated) YAML and the run says why.  A tag on
    a list or a map (CloudFormation's `!Sub [...]`) counts as one on a scalar: dropping it would
    change what the document means."""
    text = CONFIG_MAP + "data:\n  k: " + value + "\n---\n" + GPU_POD
    result = migrate_text(text, output_format=Format.JSON)
    assert result.not_migrated
    assert result.rendered.format is Format.YAML
    assert "JSON cannot represent" in (result.rendered.fallback_reason or "")
    assert "line 1 holds" in (result.rendered.fallback_reason or "")
    assert "resourceClaims" in result.rendered.text
    assert value.split("\n")[0] in result.rendered.text


def test_output_dir_under_a_file_reports_what_was_and_was_not_written(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.yaml").write_text(GPU_POD)
    (tmp_path / "blocker").write_text("a file, not a directory")
    result = migrate("--output-dir", str(tmp_path / "blocker" / "out"), str(tmp_path / "in"))
    assert result.exit_code == 3
    assert "Traceback" not in result.output
    assert "not written" in result.output and "0 file(s) written, 1 not written" in result.output


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_in_place_into_an_unwritable_directory_names_each_file(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "a.yaml").write_text(GPU_POD)
    (tmp_path / "b.yaml").write_text(GPU_POD)
    locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        result = migrate("--in-place", str(locked / "a.yaml"), str(tmp_path / "b.yaml"))
    finally:
        locked.chmod(stat.S_IRWXU)
    assert result.exit_code == 3
    assert (locked / "a.yaml").read_text() == GPU_POD  # never half-written
    assert "resourceClaims" in (tmp_path / "b.yaml").read_text()
    assert "1 file(s) written, 1 not written" in result.output


def test_a_failing_write_leaves_the_file_whole_and_the_next_is_still_written(tmp_path: Path, monkeypatch) -> None:
    """A full disk (ENOSPC) while writing one file: that file keeps its old content (atomic
    replace), the others are written, and the report names both."""
    import kubectl_gpu.manifests.output as output

    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text(GPU_POD)
    second.write_text(GPU_POD)
    real_replace = os.replace

    def replace(source, destination):
        if Path(destination) == first:
            raise OSError(28, "No space left on device")
        return real_replace(source, destination)

    monkeypatch.setattr(output.os, "replace", replace)
    result = migrate("--in-place", str(first), str(second))
    assert result.exit_code == 3
    assert first.read_text() == GPU_POD
    assert "resourceClaims" in second.read_text()
    assert "No space left on device" in result.output and str(second) in result.output
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left behind


# --- live objects ---------------------------------------------------------------------------

LIVE_DEPLOYMENT = Path(__file__).parent / "data" / "manifests" / "live-deployment.yaml"
SERVER_SET = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields")


def test_a_live_deployment_comes_out_applicable_without_server_set_fields() -> None:
    """ObjectMeta marks uid, resourceVersion, generation, creationTimestamp and managedFields
    "Populated by the system. Read-only."; a stale resourceVersion makes `kubectl apply` fail
    with a conflict, and status belongs to the controller."""
    result = migrate("-", stdin=LIVE_DEPLOYMENT.read_text())
    assert result.exit_code == 0, result.output
    deployment = [d for d in objects(result.stdout) if d["kind"] == "Deployment"][0]
    assert not set(SERVER_SET) & set(deployment["metadata"]) and "status" not in deployment
    assert deployment["metadata"]["name"] == "train" and deployment["metadata"]["namespace"] == "ml"
    for obj in objects(result.stdout):
        kubernetes_validate.validate(obj, "1.34", strict=True)
    assert "removed what the API server sets" in result.stderr


def test_a_live_list_drops_server_set_fields_of_each_rewritten_item() -> None:
    """`kubectl get deploy -o yaml` of several objects is a List; unchanged items stay as read."""
    live = yaml.safe_load(LIVE_DEPLOYMENT.read_text())
    untouched = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "uid": "u-1",
                                                                       "resourceVersion": "7"}}
    text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [untouched, live]})
    listing = objects(migrate_text(text).rendered.text)[0]
    items = {item["kind"]: item for item in listing["items"]}
    assert "uid" not in items["Deployment"]["metadata"] and "status" not in items["Deployment"]
    assert items["ConfigMap"] == untouched


def test_a_live_pod_is_rewritten_with_a_warning_that_its_owner_must_be_migrated() -> None:
    """Pod spec is immutable after creation (only image, activeDeadlineSeconds, tolerations
    additions and a few more may change): the owner has to be migrated instead."""
    pod = yaml.safe_load(GPU_POD)
    pod["metadata"].update({"uid": "u-2", "resourceVersion": "9", "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "train-5d4f", "uid": "u-3", "controller": True}]})
    result = migrate("-", stdin=yaml.safe_dump(pod))
    assert result.exit_code == 0, result.output
    assert "owned by ReplicaSet train-5d4f" in result.stderr and "immutable" in result.stderr
    assert "its Deployment" in result.stderr


# --- JSON documents: whole or not at all, strings stay strings --------------------------------


def _json_list_of_two_gpu_deployments() -> str:
    def deployment(name: str) -> dict:
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": {"template": {
            "metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "x", "resources": {
                "limits": {"nvidia.com/gpu": 1}}}]}}}}
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": [deployment("a"), deployment("b")]}, indent=2)


def test_a_json_document_whose_rewrite_fails_midway_is_written_exactly_as_read(monkeypatch) -> None:
    """docs/design.md: a document is rewritten whole or not at all.  Here applying the second
    object's patch fails (as a bug in the patcher would): the first object's changes must not
    be written either, and the run says so (exit 3)."""
    from kubectl_gpu.manifests import apply as apply_module
    from kubectl_gpu.manifests.tree_patch import PatchError

    real = apply_module.apply_patch

    def failing_on_the_second_object(tree, operations, wrap):  # type: ignore[no-untyped-def]
        operations = list(operations)
        for index, operation in enumerate(operations):
            if operation["path"].startswith("/items/1/"):
                real(tree, operations[:index], wrap)
                raise PatchError(f"no such path {operation['path']}")
        real(tree, operations, wrap)

    monkeypatch.setattr(apply_module, "apply_patch", failing_on_the_second_object)
    text = _json_list_of_two_gpu_deployments()
    result = migrate_text(text)
    assert result.not_migrated
    assert any("could not be applied" in error for error in result.rendered.document_errors)
    written = [o for o in json.loads(result.rendered.text)["items"] if o["kind"] != "ResourceClaimTemplate"]
    assert written == json.loads(text)["items"]


def test_json_strings_that_yaml_1_1_reads_as_booleans_stay_strings() -> None:
    """RFC 8259: "yes" in JSON is a string.  Only YAML text is read with YAML 1.1's booleans
    (sigs.k8s.io/yaml); a rewritten JSON manifest must not turn an env value "yes" into true
    (the API server rejects a non-string env value)."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{
        "name": "c", "image": "x", "env": [{"name": "A", "value": "yes"}, {"name": "B", "value": "off"}],
        "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}
    result = migrate_text(json.dumps(pod, indent=2))
    assert not result.not_migrated
    [migrated] = [o for o in json.loads(result.rendered.text)["items"] if o["kind"] == "Pod"]
    assert migrated["spec"]["containers"][0]["env"] == [{"name": "A", "value": "yes"}, {"name": "B", "value": "off"}]
    assert "claims" in migrated["spec"]["containers"][0]["resources"]


def test_a_lone_surrogate_escape_in_yaml_is_kept_as_the_same_escape_in_json_output() -> None:
    """YAML's `"\\ud800"` escape reads as a lone surrogate (PyYAML and ruamel accept it); RFC 8259
    writes any code unit as `\\uXXXX`, so the JSON output keeps exactly that value, as valid UTF-8.
    (It stopped `migrate -o json` with a UnicodeEncodeError on the way to stdout.)"""
    text = GPU_POD.replace("metadata:\n", 'metadata:\n  annotations: {note: "a\\ud800b"}\n', 1)
    result = CliRunner().invoke(main, ["migrate", "-o", "json", "-"], input=text)
    assert result.exit_code == 0, result.output
    assert "\\ud800" in result.stdout
    result.stdout.encode("utf-8")  # strict, as a real stdout is
    [migrated] = [item for item in json.loads(result.stdout)["items"] if item["kind"] == "Pod"]
    assert migrated["metadata"]["annotations"]["note"] == "a\ud800b"
    assert "resourceClaims" in migrated["spec"]
