"""A rewritten document is edited, not written out again: every line migrate does not change comes
out as the bytes it was, whatever the file's style, and what migrate adds follows the mapping it
joins.  The edit always reads as the same objects as ruamel's round trip of the same rewrite (the
way every document was written before, and still the way for what the edit does not write)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from kubectl_gpu.manifests import fast_read, loader, migrate_text
from kubectl_gpu.manifests.fast_read import read_fast
from kubectl_gpu.manifests.nodes import to_plain, to_round_trip
from kubectl_gpu.manifests.stream import split_stream
from kubectl_gpu.manifests.text_edit import same
from kubectl_gpu.manifests.yamlio import YamlCodec, written_scalar

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"


def migrated(text: str) -> str:
    return migrate_text(text).rendered.text


def migrated_by_round_trip(text: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """What migrate writes when every document goes through ruamel's round trip."""
    with monkeypatch.context() as patch:
        patch.setattr(loader, "read_fast", lambda _text: None)
        return migrated(text)


def objects(text: str) -> list[object]:
    codec = YamlCodec()
    return [to_plain(codec.parse(chunk.parse_text).tree) for chunk in split_stream(text)]


def is_subsequence(lines: list[str], of: list[str]) -> bool:
    remaining = iter(of)
    return all(any(line == candidate for candidate in remaining) for line in lines)


STYLED = """\
# GPU job, written by hand
apiVersion: batch/v1
kind: Job
metadata:
  name: train    
  labels: {app: train,   tier: batch}
spec:
  template:
    spec:
      containers:
      - name: trainer
        image: 'trainer:v1'
        command: ["sleep","30s"]
        env:
          - name: CONFIG
            value: |+
              keep: the trailing line

        resources:
            limits:
                cpu: "4"      # four cores
                nvidia.com/gpu: 2
            requests:
                memory: 16Gi

      restartPolicy: Never
"""


def test_every_line_migrate_does_not_change_comes_out_as_it_was() -> None:
    output = migrated(STYLED)
    kept = [line for line in STYLED.splitlines(keepends=True) if "nvidia.com/gpu" not in line]
    assert "nvidia.com/gpu: " not in output
    assert is_subsequence(kept, output.splitlines(keepends=True))
    # The flow list without spaces, the padded flow map, the trailing spaces and the `|+` scalar:
    # all of them ruamel's round trip would have rewritten.
    assert '        command: ["sleep","30s"]\n' in output
    assert "  labels: {app: train,   tier: batch}\n" in output
    assert "  name: train    \n" in output
    assert "            value: |+\n" in output


def test_what_migrate_adds_follows_the_indentation_of_the_mapping_it_joins() -> None:
    output = migrated(STYLED)
    # `resources` here indents by four: its new `claims` stands under `limits`.
    assert "            claims:\n" in output
    assert output.index("            claims:\n") > output.index("                memory: 16Gi\n")
    # The pod's new `resourceClaims` joins the pod spec, after its last entry.
    assert output.splitlines()[-2:] == ["      - name: trainer-gpu", output.splitlines()[-1]]
    assert output.splitlines()[-1].startswith("        resourceClaimTemplateName: kgpu-")
    assert output.index("      resourceClaims:\n") > output.index("      restartPolicy: Never\n")


def test_the_edit_reads_as_the_round_trip_would(monkeypatch: pytest.MonkeyPatch) -> None:
    assert objects(migrated(STYLED)) == objects(migrated_by_round_trip(STYLED, monkeypatch))


def test_without_libyaml_every_document_goes_through_the_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    """PyYAML built from source without libyaml has no C composer."""
    expected = migrated_by_round_trip(STYLED, monkeypatch)
    monkeypatch.setattr(fast_read, "COMPOSER", None)
    assert migrated(STYLED) == expected


def pod(containers: str, metadata: str = "") -> str:
    """A Pod named p with these `containers:` lines (and more `metadata:` lines)."""
    return f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n{metadata}spec:\n  containers:\n{containers}"


ONE_GPU = "  - name: c\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n"


@pytest.mark.parametrize("text, written", [
    pytest.param("""\
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: r
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: head
          resources:
            limits:
              nvidia.com/gpu: 1
""", "    rayStartParams:\n      num-gpus: '1'\n", id="an empty flow map filled"),
    pytest.param(pod(ONE_GPU, metadata="  annotations:\n"), "  annotations:\n    kubectl-gpu.io/original-resources: ",
                 id="a key holding null given a map"),
    pytest.param(pod(ONE_GPU), "    resources:\n      claims:\n", id="a map emptied by the rewrite"),
    pytest.param(pod("  - name: c\n    resources:\n      limits: {nvidia.com/gpu: 1, 'cpu': \"2\"}\n"),
                 "      limits: {'cpu': \"2\"}\n", id="a flow map changed keeps its style and quotes"),
])
def test_collections_that_held_nothing_or_are_flow_style_are_written_as_ruamel_would(
        text: str, written: str, monkeypatch: pytest.MonkeyPatch) -> None:
    output = migrated(text)
    assert written in output
    assert objects(output) == objects(migrated_by_round_trip(text, monkeypatch))


@pytest.mark.parametrize("text", [
    pytest.param(pod("  - resources: &gpu\n      limits:\n        nvidia.com/gpu: 1\n    name: c\n"
                     "  - name: d\n    resources: *gpu\n"), id="an alias"),
    pytest.param(pod("  - name: c\n    resources:\n      limits: {nvidia.com/gpu: 1,  # one\n        cpu: 2}\n"),
                 id="a flow map holding a comment changed"),
    pytest.param(pod("  - name: c\n    resources: {limits: {nvidia.com/gpu: 1}}\n", metadata="  labels: !!map {a: b}\n"),
                 id="a tag"),
    pytest.param(pod("  - resources:\n      limits:\n        nvidia.com/gpu: 1\n    name: c\n"),
                 id="a rewritten map first on its item's line"),
])
def test_documents_the_edit_does_not_write_still_migrate_through_the_round_trip(
        text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    output = migrated(text)
    assert "nvidia.com/gpu: " not in output
    assert output == migrated_by_round_trip(text, monkeypatch)


def _manifest_files() -> list[Path]:
    return sorted([*REPO.glob("examples/**/*.yaml"), *REPO.glob("tests/data/**/*.yaml")])


@pytest.mark.parametrize("path", _manifest_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_the_repositorys_manifests_read_the_same_either_way(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = path.read_text()
    assert objects(migrated(text)) == objects(migrated_by_round_trip(text, monkeypatch))


def test_the_corpus_reads_the_same_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    if not CORPUS.is_dir():
        pytest.skip("the shared corpus (../shared/corpus beside the repository) is not checked out")
    files = sorted(CORPUS.glob("**/*.y*ml"))
    assert files
    for path in files:
        text = path.read_text()
        assert objects(migrated(text)) == objects(migrated_by_round_trip(text, monkeypatch)), path.name


# -- the reader and the writer agree with ruamel ---------------------------------------------------

def test_every_document_libyaml_takes_reads_as_ruamel_reads_it() -> None:
    paths = [*_manifest_files(), *(sorted(CORPUS.glob("**/*.y*ml")) if CORPUS.is_dir() else [])]
    taken = 0
    for path in paths:
        for chunk in split_stream(path.read_text()):
            fast = read_fast(chunk.parse_text) if not chunk.directives else None
            if fast is None:
                continue
            taken += 1
            assert same(to_plain(fast.tree), to_plain(YamlCodec().parse(chunk.parse_text).tree)), path.name
    assert taken > 50  # the repository's own manifests alone hold 66


SCALARS = st.one_of(
    st.sampled_from(["yes", "No", "on", "0755", "0o17", "0x1F", "1_000", "1e3", ".5", "+1", "-0", "12", "1.50",
                     "~", "null", "NULL", "", "true", "False", "2024-01-01", "16Gi", "500m", "a: b", "x #y",
                     "<<", "=", "'yes'", '"12"', "it's", "-x", ":x", "[a, b]", "{}", "|", ">-", "!tag x"]),
    st.text(alphabet="ab01:#-' \"._~yesnoTF", max_size=8),
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(SCALARS)
def test_libyaml_reads_a_value_as_ruamel_and_kubernetes_do_or_leaves_it_to_ruamel(scalar: str) -> None:
    text = f"key: {scalar}\nlist:\n- {scalar}\n"
    fast = read_fast(text)
    outcome = YamlCodec().parse(text)
    if fast is None:
        return
    assert outcome.error is None
    # What the planner reads of either tree (to_plain) is the same value, YAML types told apart.
    assert same(to_plain(fast.tree), to_plain(outcome.tree))


@settings(max_examples=300)
@given(st.one_of(SCALARS, st.integers(), st.booleans()))
def test_a_new_value_is_written_as_ruamels_writer_writes_it(value: object) -> None:
    written = written_scalar(value)
    if written is None:
        return
    assert YamlCodec().dump(to_round_trip({"key": value})) == f"key: {written}\n"


@st.composite
def styled_deployments(draw: st.DrawFn) -> str:
    """A GPU Deployment in any of the indentation styles people write, with comments, blank lines
    and a container whose resources are in any of their usual shapes."""
    step = draw(st.sampled_from([2, 3, 4]))
    dash = draw(st.sampled_from([0, 2]))
    gpu = draw(st.sampled_from(["nvidia.com/gpu: 1", "nvidia.com/gpu: '2'", "nvidia.com/mig-1g.10gb: 1",
                                "aliyun.com/gpu-mem: 8", "nvidia.com/gpu: 4  # four"]))
    extra = draw(st.sampled_from(["", "cpu: 2", 'memory: "8Gi"']))
    annotations = draw(st.sampled_from(["", "annotations:", "annotations: {}", "annotations:\n  team: a"]))

    def block(lines: list[str], depth: int) -> list[str]:
        return [" " * (step * depth) + line if line else line for line in lines]

    resources = ["resources:", " " * step + "limits:", " " * (2 * step) + gpu]
    if extra:
        resources.append(" " * (2 * step) + extra)
    if draw(st.booleans()):
        resources += [" " * step + "requests:", " " * (2 * step) + gpu.split("#")[0].strip()]
    item = " " * dash + "- "
    body = " " * (dash + 2)
    container = [item + "name: server", body + "image: server:v1", *[body + line for line in resources]]
    if draw(st.booleans()):
        container.insert(2, body + "# the server's resources follow")
    lines = [
        "apiVersion: apps/v1", "kind: Deployment", "metadata:", *block(["name: web"], 1),
        "spec:", *block(["replicas: 1", "template:"], 1),
        *block(["metadata:"], 2), *block([*(annotations.split("\n") if annotations else []), "labels:"], 3),
        *block(["app: web"], 4),
        *(block([""], 0) if draw(st.booleans()) else []),
        *block(["spec:"], 2), *block(["containers:"], 3), *[" " * (3 * step) + line for line in container],
    ]
    if draw(st.booleans()):
        lines += block(["restartPolicy: Always"], 3)
    return "\n".join(lines) + ("\n" if draw(st.booleans()) else "")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(styled_deployments())
def test_any_style_is_kept_and_reads_as_the_round_trip(text: str) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        output = migrated(text)
        assert objects(output) == objects(migrated_by_round_trip(text, monkeypatch))
    assert "/gpu: " not in output and "gpu-mem: " not in output and "mig-1g.10gb: " not in output
    kept = [line for line in text.splitlines() if not any(
        name in line for name in ("gpu: ", "gpu-mem: ", "mig-1g.10gb: ", "limits:", "requests:", "annotations:"))]
    assert is_subsequence(kept, output.splitlines())


ODD_SCALARS = st.one_of(
    st.sampled_from(["yes", "0755", "1e3", "", "~", "a: b", "x #y", "it's", "-x", "16Gi", "true", "12", "1.5", "é",
                     "two\nlines", " lead", "trail ", "{}", "[x]"]),
    st.integers(-5, 5), st.booleans(), st.none(), st.text(alphabet="ab:# '\"-,[]{}", max_size=5))
TREES = st.recursive(ODD_SCALARS, lambda children: st.one_of(
    st.lists(children, max_size=3), st.dictionaries(st.sampled_from(["a", "name", "on", "k.io/z", "x y"]), children,
                                                    max_size=3)), max_leaves=8)


def _styled(value: object, draw: st.DrawFn) -> object:
    """ruamel's nodes for `value`, some collections in flow style, some keys with a comment."""
    if isinstance(value, dict):
        mapping = CommentedMap((key, _styled(item, draw)) for key, item in value.items())
        if value and draw(st.booleans()):
            mapping.fa.set_flow_style()
        if value and draw(st.integers(0, 3)) == 0:
            mapping.yaml_add_eol_comment("note", draw(st.sampled_from(list(value))))
        return mapping
    if isinstance(value, list):
        sequence = CommentedSeq(_styled(item, draw) for item in value)
        if value and draw(st.booleans()):
            sequence.fa.set_flow_style()
        return sequence
    return value


@st.composite
def written_deployments(draw: st.DrawFn) -> str:
    """A Deployment with odd values around a GPU container, written by ruamel in any style."""
    name, amount = draw(st.sampled_from([("nvidia.com/gpu", 1), ("nvidia.com/gpu", "2"), ("aliyun.com/gpu-mem", 8),
                                         ("nvidia.com/mig-1g.10gb", 1), ("nvidia.com/gpu", "500m")]))
    limits = {name: amount, **({"cpu": 2} if draw(st.booleans()) else {})}
    resources = {"limits": limits, **({"requests": dict(limits)} if draw(st.booleans()) else {})}
    container = {"name": "c", "resources": resources, "extra": draw(TREES)}
    document = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "extra": draw(TREES)},
                "spec": {"template": {"metadata": {"labels": {"app": "d"}},
                                      "spec": {"containers": [container], "extra": draw(TREES)}}}}
    writer = YAML()
    mapping, sequence, offset = draw(st.sampled_from([(2, 2, 0), (2, 4, 2), (4, 4, 0), (3, 5, 2)]))
    writer.indent(mapping=mapping, sequence=sequence, offset=offset)
    out = io.StringIO()
    writer.dump(_styled(document, draw), out)
    return out.getvalue().replace("\n", "\r\n") if draw(st.booleans()) else out.getvalue()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(written_deployments())
def test_any_document_ruamel_writes_migrates_to_the_same_objects_either_way(text: str) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert objects(migrated(text)) == objects(migrated_by_round_trip(text, monkeypatch))
