"""Properties of migrate over random multi-document streams (pods, deployments, Lists,
unknown kinds, garbage that does not parse): no document is ever lost, untouched documents
come out byte for byte, and migrating the output again changes nothing."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_gpu.manifests import Source, migrate_text, parse_source
from kubectl_gpu.manifests.objects import is_list

NAMES = st.sampled_from(["alpha", "beta", "gamma", "delta"])
NAMESPACES = st.sampled_from([None, "team-a", "team-b"])
GPU_RESOURCES = st.sampled_from([
    ("nvidia.com/gpu", "1"), ("nvidia.com/gpu", "2"), ("nvidia.com/gpu", "0"), ("nvidia.com/gpu", '"500m"'),
    ("nvidia.com/mig-1g.5gb", "1"), ("google.com/tpu", "4"), ("tencent.com/vcuda-core", "50"),
    ("aliyun.com/gpu-mem", "3"), ("cpu", "1"),
])


def _container(indent: int, resource: tuple[str, str]) -> str:
    pad = " " * indent
    name, value = resource
    return (f"{pad}containers:\n{pad}- name: main  # the main container\n{pad}  image: cuda\n"
            f"{pad}  resources:\n{pad}    limits:\n{pad}      {name}: {value}\n")


def _metadata(name: str, namespace: str | None) -> str:
    return f"metadata:\n  name: {name}\n" + (f"  namespace: {namespace}\n" if namespace else "")


@st.composite
def pods(draw) -> str:
    return ("apiVersion: v1\nkind: Pod\n" + _metadata(draw(NAMES), draw(NAMESPACES))
            + "spec:\n" + _container(2, draw(GPU_RESOURCES)))


@st.composite
def deployments(draw) -> str:
    return ("apiVersion: apps/v1\nkind: Deployment\n" + _metadata(draw(NAMES), draw(NAMESPACES))
            + "spec:\n  replicas: 2\n  template:\n    spec:\n" + _container(6, draw(GPU_RESOURCES)))


@st.composite
def lists(draw) -> str:
    pod = draw(pods())
    item = "".join(("- " if i == 0 else "  ") + line + "\n" for i, line in enumerate(pod.splitlines()))
    return "apiVersion: v1\nkind: List\nitems:\n" + item


@st.composite
def unknown_kinds(draw) -> str:
    value = draw(st.text(alphabet="abc xyz", min_size=1, max_size=10)).strip() or "v"
    return f"apiVersion: example.io/v1\nkind: Widget\n{_metadata(draw(NAMES), None)}spec:\n  value: '{value}'\n"


GARBAGE = st.sampled_from([
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: [unclosed\n",
    "a: b: c\n",
    "key: 'unterminated\n",
    "- a\nb: c\n",
    "  indented: 1\nouter: 2\n",
])
COMMENT_ONLY = st.just("# nothing but a comment\n")
DOCUMENTS = st.one_of(pods(), deployments(), lists(), unknown_kinds(), GARBAGE, COMMENT_ONLY)


def _count(text: str) -> int:
    """Objects in a stream: a List counts its items, a document that does not parse counts one."""
    documents = parse_source(Source("x", text)).documents
    return sum(len(d.tree["items"]) if is_list(d.tree) else 1 for d in documents if d.is_object)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(DOCUMENTS, min_size=1, max_size=6), st.booleans())
def test_no_document_is_lost_and_a_second_migrate_changes_nothing(documents: list[str], lead: bool) -> None:
    text = ("# stream header\n" if lead else "") + "---\n".join(documents)
    first = migrate_text(text)
    out = first.rendered.text

    # Every document is still there: count in + added = count out.
    assert _count(out) == _count(text) + len(first.plan.emissions)
    # Documents migrate does not rewrite come out byte for byte.
    for document in documents:
        gpu = any(name in document for name in ("nvidia.com/", "google.com/tpu", "tencent.com/", "aliyun.com/"))
        if not gpu:
            assert document in out
    # A second run finds nothing to do.
    second = migrate_text(out)
    assert second.rendered.text == out
    assert not second.plan.emissions and not any(t.changed for t in second.plan.templates)
    # And reports the same problems it could not fix.
    assert second.not_migrated == first.not_migrated
