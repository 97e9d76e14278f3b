"""Properties of migrate over generated streams holding every shape that once crashed it or
damaged its output (issue 14): document markers with content, directives, anchors, aliases and
merge keys, odd quantities, comments around the removed lines, fields of the wrong type, deep
nesting, core tags on wrong values, objects read back from a cluster, JSON streams, `-o json`.

For every stream: no traceback; every object and comment of the input is still there (but a
comment on the line of a removed GPU request); the output parses;
objects Kubernetes' strict validation accepted before are still accepted; a second migrate
changes nothing; and `--check` agrees with what a run would change.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import cache

import kubernetes_validate
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_gpu.cli.main import main
from kubectl_gpu.manifests import Format, Source, migrate_text, parse_source
from kubectl_gpu.manifests.nodes import to_plain
from kubectl_gpu.manifests.objects import is_list

NAMES = st.sampled_from(["alpha", "beta", "gamma"])
AMOUNTS = st.sampled_from([
    "1", "2", "0", '"500m"', "0.5", ".nan", ".inf", "-.inf", "1e400", "'1e5000'", "'1e99999999'", "'NaN'",
    "'1e-400'", "-1", "'99999999999999999999999Ei'", "!!int 1", "~",
])
RESOURCES = st.sampled_from(["nvidia.com/gpu", "nvidia.com/gpumem", "aliyun.com/gpu-mem", "cpu"])
MARKERS = st.sampled_from(["---\n", "--- # next\n", "--- !!map\n", "...\n---\n", "...\n%YAML 1.2\n---\n",
                           "...\n%TAG !k! tag:yaml.org,2002:\n---\n"])


def _resources(draw, pad: str) -> str:
    """A resources block in one of the shapes that trip a rewriter."""
    name, amount = draw(RESOURCES), draw(AMOUNTS)
    shape = draw(st.sampled_from(["plain", "flow", "alias", "merge", "merge-resources", "comment-after"]))
    if shape == "flow":
        return f"{pad}resources: {{limits: {{{name}: {amount}}}}}\n"
    if shape == "alias":
        return f"{pad}resources:\n{pad}  limits: &l\n{pad}    {name}: {amount}\n{pad}  requests: *l\n"
    if shape == "merge":
        return f"{pad}resources:\n{pad}  limits:\n{pad}    <<: {{{name}: {amount}}}\n{pad}    memory: 1Gi\n"
    if shape == "merge-resources":
        return f"{pad}resources: {{<<: {{limits: {{{name}: {amount}}}}}, requests: {{cpu: 1}}}}\n"
    if shape == "comment-after":
        return f"{pad}resources:\n{pad}  limits:\n{pad}    {name}: {amount}  # the GPU\n{pad}    # after the GPU\n"
    return f"{pad}resources:\n{pad}  limits:\n{pad}    {name}: {amount}\n"


@st.composite
def pods(draw) -> str:
    claims = draw(st.sampled_from(["", "  resourceClaims: []\n", "  resourceClaims: {a: b}\n"]))
    sidecar = draw(st.sampled_from(["", "  - {name: proxy, image: envoy}  # sidecar\n", "  - name: proxy\n    image: envoy\n"]))
    reused = draw(st.booleans())
    head = "  - &main\n    name: main\n" if reused else "  - name: main\n"
    text = (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {draw(NAMES)}\nspec:\n{claims}"
            f"  containers:  # the containers\n{sidecar}{head}    image: cuda\n{_resources(draw, '    ')}")
    if reused:
        text += "  initContainers:\n  - *main\n"
    return text + draw(st.sampled_from(["", "  # volumes follow\n  volumes: []\n", "# end\n"]))


@st.composite
def jobs(draw) -> str:
    """A PyTorchJob whose Worker template is its Master's (one node, two paths)."""
    shared = draw(st.booleans())
    master = (f"    Master:\n      template:{' &t' if shared else ''}\n        spec:\n          containers:\n"
              f"          - name: pytorch\n            image: x\n{_resources(draw, '            ')}")
    worker = "    Worker:\n      template: *t\n" if shared else ""
    return f"apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: {draw(NAMES)}\nspec:\n  pytorchReplicaSpecs:\n{master}{worker}"


@st.composite
def live_deployments(draw) -> str:
    """A Deployment as `kubectl get -o yaml` prints it: fields the API server set, and status."""
    return (f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {draw(NAMES)}\n  namespace: ml\n"
            "  uid: 0d5b1e8e-3f0a-4c1e-9a51-6f6a1f0e2b11\n  resourceVersion: \"4711\"\n  generation: 3\n"
            "  creationTimestamp: \"2026-01-01T00:00:00Z\"\n  managedFields:\n  - manager: kubectl\n"
            "    operation: Update\nspec:\n  selector: {matchLabels: {app: x}}\n  template:\n"
            "    metadata: {labels: {app: x}}\n    spec:\n      containers:\n      - name: main\n        image: cuda\n"
            f"{_resources(draw, '        ')}status:\n  replicas: 1\n")


@st.composite
def nested(draw) -> str:
    depth = draw(st.integers(min_value=1, max_value=300))
    return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: deep}\ndata:\n  x: " + "[" * depth + "]" * depth + "\n"


ODD = st.sampled_from([
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tags}\ndata: {a: !!bool linux}\n",
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tags}\ndata: {a: !!int abc}\n",
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tags}\ndata: !!omap 1\n",
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ref}\ndata: {a: !Ref x}\n",
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n",
    "# only a comment\n",
])
DOCUMENTS = st.one_of(pods(), jobs(), live_deployments(), nested(), ODD)


def _objects(text: str) -> int:
    return _count(parse_source(Source("x", text)).documents)


def _count(documents: list) -> int:
    return sum(len(d.tree["items"]) if is_list(d.tree) else 1 for d in documents if d.is_object)


@cache
def _strict_valid(text: str) -> bool:
    """Kubernetes 1.34's strict validation of one object (given as JSON text, so results
    are remembered: the generators repeat pods often)."""
    try:
        kubernetes_validate.validate(json.loads(text), "1.34", strict=True)
    except (kubernetes_validate.ValidationError, kubernetes_validate.SchemaNotFoundError,
            kubernetes_validate.InvalidSchemaError):
        return False
    except Exception:  # noqa: BLE001 - a value the validator cannot even read is not valid
        return False
    return True


def _valid_pods(documents: list) -> dict[str, bool]:
    """Pod name -> strict-valid, for every document that parses and is a Pod."""
    result = {}
    for document in documents:
        if document.tree is None or not isinstance(document.tree, dict) or document.tree.get("kind") != "Pod":
            continue
        plain = json.dumps(to_plain(document.tree), default=str, sort_keys=True)
        result[str(document.tree["metadata"]["name"])] = _strict_valid(plain)
    return result


def _kept_comments(text: str) -> Counter[str]:
    """The comments of `text` a rewrite must keep: all but one on the line of a GPU request it
    removes (that request is recorded in the original-resources annotation instead)."""
    comments: Counter[str] = Counter()
    for line in text.splitlines():
        if "#" in line and not any(resource in line for resource in ("nvidia.com/", "aliyun.com/")):
            comments[line[line.index("#"):].strip()] += 1
    return comments


# Each example costs two migrates and one read of input and output (about 0.1 s on a quiet
# machine): parsing deep flow nesting used to cost depth² (0.6 s per read of one 300-level
# document, read six times per example), which held this test to 40 examples.
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(MARKERS, DOCUMENTS), min_size=1, max_size=5))
def test_generated_streams_never_crash_lose_or_damage(parts: list[tuple[str, str]]) -> None:
    text = "".join(marker + document for marker, document in parts)
    first = migrate_text(text)  # no traceback, whatever the stream holds
    out = first.rendered.text
    read_in, read_out = parse_source(Source("in", text)).documents, parse_source(Source("out", out)).documents
    assert _count(read_out) >= _count(read_in)
    for document in read_out:
        assert document.error is None or document.chunk.text in text, document.error  # only input breakage
    kept = _kept_comments(out)
    assert all(kept[comment] >= count for comment, count in _kept_comments(text).items()), out
    before, after = _valid_pods(read_in), _valid_pods(read_out)
    for name, valid in before.items():
        if valid and name in after:
            assert after[name], f"pod {name} was strict-valid before migrate and is not after"
    second = migrate_text(out)
    assert second.rendered.text == out
    if not first.not_migrated:
        assert not second.changed


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(MARKERS, DOCUMENTS), min_size=1, max_size=3))
def test_check_agrees_with_what_a_run_changes(parts: list[tuple[str, str]]) -> None:
    text = "".join(marker + document for marker, document in parts)
    result = migrate_text(text)
    check = CliRunner().invoke(main, ["migrate", "--check", "-"], input=text)
    expected = 3 if result.not_migrated else 1 if result.changed else 0
    assert check.exit_code == expected, check.output
    assert "Traceback" not in check.output


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["1", "2", "NaN", "Infinity", "1e400", '"1e99999999"', '"500m"']), min_size=1,
                max_size=4), st.booleans())
def test_json_streams_and_odd_json_numbers_never_crash(amounts: list[str], duplicate: bool) -> None:
    documents = []
    for index, amount in enumerate(amounts):
        limits = f'"nvidia.com/gpu": {amount}' + (f', "nvidia.com/gpu": {amount}' if duplicate else "")
        documents.append(f'{{"apiVersion": "v1", "kind": "Pod", "metadata": {{"name": "p{index}"}}, "spec": '
                         f'{{"containers": [{{"name": "c", "image": "x", "resources": {{"limits": {{{limits}}}}}}}]}}}}')
    text = "\n".join(documents) + "\n"
    first = migrate_text(text)
    assert _objects(first.rendered.text) >= len(amounts)
    assert migrate_text(first.rendered.text).rendered.text == first.rendered.text
    reread = parse_source(Source("again", first.rendered.text)).documents
    assert all(d.error is None for d in reread)  # a JSON stream migrate reads back


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(MARKERS, DOCUMENTS), min_size=1, max_size=4))
def test_json_output_is_json_holding_every_object_or_yaml_with_the_reason(parts: list[tuple[str, str]]) -> None:
    """`-o json` over the same streams (RFC 8259: a value JSON cannot hold, or a document that
    does not parse, has no JSON form): either one JSON value holding every object, or the
    file written as YAML, marked not migrated, with the reason."""
    text = "".join(marker + document for marker, document in parts)
    result = migrate_text(text, output_format=Format.JSON)
    if result.rendered.format is Format.JSON:
        value = json.loads(result.rendered.text)
        written = len(value["items"]) if is_list(value) else 1
        assert written >= _objects(text)
    else:
        assert result.not_migrated and result.rendered.fallback_reason
        assert _objects(result.rendered.text) >= _objects(text)
