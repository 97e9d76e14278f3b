"""A document that names no legacy resource is written back as the bytes it was, without being
read by ruamel (issue 29: a 10,000-document repository, 30% with GPUs, should cost a fraction of a
round trip; kubectl_gpu/manifests/passthrough.py).  The shortcut is only allowed to make migrate
faster: what it writes and what it reports are the same as when every document is read."""

from __future__ import annotations

import tempfile
from io import StringIO
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from kubectl_gpu.cli.main import main
from kubectl_gpu.core import legacy_texts
from kubectl_gpu.manifests import DraTarget, MigrateOptions, MigrationResult, Source, loader, migrate_sources, migrate_text
from kubectl_gpu.manifests.passthrough import PassThrough
from kubectl_gpu.manifests.report import print_report, totals
from kubectl_gpu.manifests.stream import split_stream

from .corpus import SHARED_CORPUS, corpus_params

REPO = Path(__file__).resolve().parents[1]

# A cluster profile for Kubernetes 1.38, which serves resource.k8s.io/v1 only: the input's v1beta1
# DRA objects are rewritten (manifests/plan.py DraTarget), though they name no legacy resource.
ONLY_V1 = MigrateOptions(dra_target=DraTarget("v1", ("v1",), 38))
V1BETA1_TEMPLATE = ("apiVersion: resource.k8s.io/v1beta1\nkind: ResourceClaimTemplate\nmetadata:\n  name: t\nspec:\n"
                    "  spec:\n    devices:\n      requests:\n      - name: gpu\n        deviceClassName: gpu.example.com\n")


# Documents that name no legacy resource, in the shapes real repositories and YAML allow: each is
# either passed through or (a tag, an alias, a duplicate key, broken YAML, a date ruamel refuses)
# read by ruamel as before.
PLAIN = st.sampled_from([
    "apiVersion: v1\nkind: Service\nmetadata:\n  name: web  # the front\nspec:\n  ports:\n  - port: 80\n",
    "# a ConfigMap\napiVersion: v1\nkind: ConfigMap\ndata:\n  script: |\n    echo gpu-1\n    exec server\n",
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, labels: {app: gpu-7}}\nspec:\n  template:\n"
    "    spec:\n      containers:\n      - {name: web, image: 'nginx:1.27', resources: {limits: {cpu: 500m}}}\n",
    "{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", \"metadata\": {\"name\": \"ml\"}}\n",
    "apiVersion: v1\nkind: ConfigMap\ndata:\n  when: 2024-13-45\n",  # ruamel refuses the date
    "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: '1'\n  a: '1'\n",  # duplicate key, same value
    "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: '1'\n  a: '2'\n",  # duplicate key, two values
    "apiVersion: v1\nkind: ConfigMap\ndata:\n  count: !!int abc\n",  # a tag its value cannot hold
    "apiVersion: v1\nkind: Secret\nmetadata: &m\n  name: s\nstringData: *m\n",
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: [unclosed\n",
    "a: b: c\n",
    "- just\n- a list\n",
    "plain scalar\n",
    "# only a comment\n",
    "",
    "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: c}\n",
    "apiVersion: v1\nkind: ConfigMap\ndata:\n  yes: 'y'\n  true: 't'\n",  # YAML 1.1 reads both as True
    "apiVersion: v1\nkind: ConfigMap\ndata:\n  k: \"nvidia.com\\x2fgpu: 1\"\n",  # an escape spells a name
    "apiVersion: v1\nkind: ConfigMap\ndata:\n  big: " + "9" * 5000 + "\n",
    V1BETA1_TEMPLATE,
])
GPU = st.sampled_from([
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c  # main\n    image: cuda\n"
    "    resources:\n      limits:\n        nvidia.com/gpu: 1\n",
    "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: q\nspec:\n  hard:\n    requests.nvidia.com/gpu: 4\n",
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  annotations:\n    gpu-fraction: '0.5'\nspec:\n"
    "  containers:\n  - name: c\n    image: cuda\n",
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: amd\nspec:\n  containers:\n  - name: c\n    image: rocm\n"
    "    resources:\n      limits:\n        amd.com/gpu: 1\n",
])
# How a document starts and ends in the stream: markers with comments, directives, explicit ends.
OPENINGS = st.sampled_from(["", "---\n", "--- # next\n", "%YAML 1.2\n---\n", "---   \n"])
ENDINGS = st.sampled_from(["", "...\n"])


def report_of(result: MigrationResult) -> str:
    out = StringIO()
    print_report(result, Console(file=out, width=200, color_system=None))
    return out.getvalue()


def both_ways(sources: list[Source], options: MigrateOptions = MigrateOptions()
              ) -> tuple[MigrationResult, MigrationResult]:
    """Plain documents written back unread, and every document read."""
    return (migrate_sources(sources, options, unread=PassThrough),
            migrate_sources(sources, options, unread=None))


def assert_same(fast: MigrationResult, read: MigrationResult) -> None:
    assert [f.rendered for f in fast.files] == [f.rendered for f in read.files]
    assert report_of(fast) == report_of(read)
    assert totals(fast) == totals(read)
    assert fast.changed == read.changed and fast.not_migrated == read.not_migrated
    assert fast.legacy_left == read.legacy_left


@st.composite
def streams(draw) -> str:
    parts = []
    for index, body in enumerate(draw(st.lists(st.one_of(PLAIN, GPU), min_size=1, max_size=6))):
        opening = draw(OPENINGS)
        if index and not opening:
            opening = "---\n"
        parts.append(opening + body + draw(ENDINGS))
    text = "".join(parts)
    return text.replace("\n", "\r\n") if draw(st.booleans()) else text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=streams(), options=st.sampled_from([MigrateOptions(), ONLY_V1]))
def test_passing_documents_through_changes_nothing_migrate_writes_or_reports(text: str,
                                                                            options: MigrateOptions) -> None:
    assert_same(*both_ways([Source("s.yaml", text)], options))


def test_a_dra_object_a_profile_rewrites_is_read_although_it_names_no_legacy_resource() -> None:
    fast, read = both_ways([Source("t.yaml", V1BETA1_TEMPLATE)], ONLY_V1)
    assert_same(fast, read)
    assert "resource.k8s.io/v1\n" in fast.files[0].rendered.text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plain=st.lists(PLAIN, min_size=1, max_size=5), gpu=GPU, crlf=st.booleans())
def test_a_document_without_a_legacy_resource_comes_out_byte_for_byte(plain: list[str], gpu: str,
                                                                      crlf: bool) -> None:
    newline = "\r\n" if crlf else "\n"
    documents = [d.replace("\n", newline) for d in [*plain, gpu]]
    text = ("---" + newline).join(documents)
    out = migrate_text(text, unread=PassThrough).rendered.text
    for document in documents[:-1]:
        assert document in out


def test_past_the_first_few_kilobytes_a_plain_document_is_never_read_by_ruamel(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Plain documents are not read by either reader: 40 Services after a GPU Pod are written back
    unread, and still counted."""
    parsed: list[str] = []
    real, real_fast = loader.parse_chunk, loader.read_fast
    monkeypatch.setattr(loader, "parse_chunk", lambda codec, chunk: (parsed.append(chunk.body), real(codec, chunk))[1])
    monkeypatch.setattr(loader, "read_fast", lambda text: (parsed.append(text), real_fast(text))[1])  # rewritten as text
    services = [f"apiVersion: v1\nkind: Service\nmetadata:\n  name: web-{i}\nspec:\n  ports:\n  - port: 80\n"
                for i in range(80)]
    pod = ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: cuda\n"
           "    resources:\n      limits:\n        nvidia.com/gpu: 1\n")
    result = migrate_text("---\n".join([*services[:40], pod, *services[40:]]))
    assert pod in parsed
    assert not set(parsed) & set(services[40:])
    assert len(parsed) < 1 + 40
    assert totals(MigrationResult((result,))).objects == 81


@pytest.mark.parametrize("text", sorted(legacy_texts()))
def test_every_legacy_text_sends_its_document_to_the_reader(text: str) -> None:
    """Lower case or not: the core's NVIDIA check ignores case."""
    for spelled in (text, text.upper()):
        [chunk] = split_stream(f"apiVersion: v1\nkind: ConfigMap\ndata:\n  k: '{spelled}'\n")
        assert not PassThrough()(chunk)


def _manifests() -> list[Path]:
    roots = [REPO / "tests" / "data" / "manifests", REPO / "examples", SHARED_CORPUS]
    return sorted(p for root in roots if root.is_dir() for p in root.rglob("*")
                  if p.suffix in (".yaml", ".yml") and p.is_file())


@pytest.mark.parametrize("path", corpus_params(_manifests()), ids=lambda p: getattr(p, "name", str(p)))
def test_real_manifests_migrate_the_same_with_and_without_the_shortcut(path: Path) -> None:
    assert_same(*both_ways([Source(path.name, path.read_text(encoding="utf-8-sig"))]))


def test_in_place_keeps_a_passed_document_byte_for_byte_with_its_bom_and_crlf() -> None:
    service = "--- # the front\r\napiVersion: v1\r\nkind: Service\r\nmetadata:\r\n  name: web\r\n...\r\n"
    pod = ("%YAML 1.2\r\n---\r\napiVersion: v1\r\nkind: Pod\r\nmetadata:\r\n  name: p\r\nspec:\r\n  containers:\r\n"
           "  - name: c\r\n    image: cuda\r\n    resources:\r\n      limits:\r\n        nvidia.com/gpu: 1\r\n")
    data = b"\xef\xbb\xbf" + (service + pod).encode()
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "m.yaml"
        path.write_bytes(data)
        result = CliRunner().invoke(main, ["migrate", "--in-place", str(path)])
        assert result.exit_code == 0, result.output
        written = path.read_bytes()
    assert written.startswith(b"\xef\xbb\xbf" + service.encode())
    assert b"resourceClaimTemplateName" in written
