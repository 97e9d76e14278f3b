"""The judge is the driver: every claim migrate emits must allocate on the devices NVIDIA's DRA
driver publishes for the GPU the legacy request meant, and never where that device is missing.

tests/data/driver/*.yaml are ResourceSlices exactly as the driver publishes them (see the README
there, field by field against cmd/gpu-kubelet-plugin/deviceinfo.go and mig.go).  The explain
engine plays the scheduler: "allocatable" is its verdict on one fixture at a time.  The pods in
tests/data/driver/legacy-pods.yaml say, in an annotation written from the labels' and resources'
upstream meaning, on which fixtures they must allocate; for the examples and the shared corpus,
where nobody wrote that down, every claim must allocate on each fixture whose devices have what
the request asked for and never be a CEL error there.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from kubectl_gpu.core import ApiVersion, Sharing, TranslateOptions
from kubectl_gpu.dra.facts import DRA_VERSION_SINCE
from tests.k8s_schemas import NO_SCHEMA, UNVALIDATED_MINORS, VALIDATED_MINORS
from kubectl_gpu.explain.inputs import explain_objects
from kubectl_gpu.manifests import MigrateOptions, Source, migrate_sources
from tests.corpus import MISSING, corpus_dir

ROOT = Path(__file__).resolve().parents[1]
DRIVER = ROOT / "tests" / "data" / "driver"
EXAMPLES = ROOT / "examples"
CORPUS = corpus_dir("legacy")
FIXTURES = ("h100", "l40s", "gh200", "a100-mig")
EXPECTED = "test.kubectl-gpu.io/allocates-on"
CLAIM_KINDS = ("ResourceClaimTemplate", "ResourceClaim")


@cache
def fixture(name: str) -> dict[str, Any]:
    return yaml.safe_load((DRIVER / f"{name}.yaml").read_text())


def migrate_documents(path: Path, **options: Any) -> list[dict[str, Any]]:
    source = Source(str(path), path.read_text(encoding="utf-8"), path, path.relative_to(path.parent))
    result = migrate_sources([source], MigrateOptions(translate=TranslateOptions(**options)))
    return [d for r in result.files for d in yaml.safe_load_all(r.rendered.text) if isinstance(d, dict)]


def allocatable_on(claim: dict[str, Any]) -> set[str]:
    found = set()
    for name in FIXTURES:
        (item,) = explain_objects([claim], [fixture(name)]).items
        assert not _cel_errors(item), f"{claim['metadata']['name']} on {name}: {_cel_errors(item)}"
        if item.allocatable:
            found.add(name)
    return found


def _cel_errors(item: Any) -> list[str]:
    errors = []
    for request in getattr(item, "requests", ()):
        for alternative in request.alternatives:
            errors += [s.compile_error or s.first_error for s in alternative.selectors
                       if s.compile_error or s.errors]
    return errors


def claims_in(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for d in documents if d.get("kind") in CLAIM_KINDS]


# --- the fixtures are what the driver publishes -------------------------------------------------

def test_the_fixtures_cover_the_devices_the_issue_names():
    products = {name: {d["attributes"]["productName"]["string"] for d in fixture(name)["spec"]["devices"]}
                for name in FIXTURES}
    assert products["h100"] == {"NVIDIA H100 80GB HBM3"}
    assert products["l40s"] == {"NVIDIA L40S"}
    assert products["gh200"] == {"NVIDIA GH200 480GB"}
    profiles = {d["attributes"]["profile"]["string"] for d in fixture("a100-mig")["spec"]["devices"]}
    assert "1g.10gb+me" in profiles and "1g.10gb" in profiles
    l40s = {d["attributes"]["architecture"]["string"] for d in fixture("l40s")["spec"]["devices"]}
    assert l40s == {"Ada Lovelace"}


@pytest.mark.parametrize("name", FIXTURES)
def test_each_fixture_is_a_valid_resource_slice_for_every_supported_kubernetes(name):
    for minor in VALIDATED_MINORS:
        if (1, minor) >= DRA_VERSION_SINCE["v1"]:
            kubernetes_validate.validate(fixture(name), f"1.{minor}", strict=True)


@pytest.mark.parametrize("minor", UNVALIDATED_MINORS)
def test_supported_releases_without_a_schema_are_named(minor):
    pytest.skip(NO_SCHEMA.format(minor=minor))


# --- the curated pods: satisfiable exactly where the legacy request meant ----------------------

def _curated() -> list[tuple[str, dict[str, Any], set[str]]]:
    documents = migrate_documents(DRIVER / "legacy-pods.yaml", gpu_memory="40Gi")
    claims = {c["metadata"]["name"]: c for c in claims_in(documents)}
    cases = []
    for pod in (d for d in documents if d.get("kind") == "Pod"):
        expected = {f for f in pod["metadata"]["annotations"][EXPECTED].split(",") if f}
        for entry in pod["spec"].get("resourceClaims", []):
            cases.append((pod["metadata"]["name"], claims[entry["resourceClaimTemplateName"]], expected))
    return cases


CURATED = _curated()


def test_every_curated_pod_was_rewritten_to_a_claim():
    pods = yaml.safe_load_all((DRIVER / "legacy-pods.yaml").read_text())
    assert {name for name, _, _ in CURATED} == {p["metadata"]["name"] for p in pods}


@pytest.mark.parametrize("pod, claim, expected", CURATED, ids=[c[0] for c in CURATED])
def test_a_migrated_claim_allocates_exactly_on_the_fixtures_with_the_device_the_pod_meant(pod, claim, expected):
    assert allocatable_on(claim) == expected


# --- examples and the shared corpus -------------------------------------------------------------

def _whole_gpus(fixture_name: str) -> int:
    return sum(d["attributes"]["type"]["string"] == "gpu" for d in fixture(fixture_name)["spec"]["devices"])


def _fixtures_with_what_it_asks(claim: dict[str, Any]) -> set[str] | None:
    """For a claim with no selector but the class's (and a MIG profile's): the fixtures that have
    enough such devices.  None: it also selects by model, which only the curated pods judge."""
    spec = claim["spec"]["spec"] if claim["kind"] == "ResourceClaimTemplate" else claim["spec"]
    (request,) = spec["devices"]["requests"]
    exactly = request.get("exactly", request)
    selectors = [s["cel"]["expression"] for s in exactly.get("selectors", [])]
    count = exactly.get("count", 1)
    if exactly["deviceClassName"] == "gpu.nvidia.com" and not selectors:
        return {f for f in FIXTURES if _whole_gpus(f) >= count}
    if exactly["deviceClassName"] == "mig.nvidia.com" and len(selectors) == 1:
        devices = fixture("a100-mig")["spec"]["devices"]
        profiles = [d["attributes"]["profile"]["string"] for d in devices]
        wanted = selectors[0].rsplit("==", 1)[1].strip(' )"')
        return {"a100-mig"} if profiles.count(wanted) >= count else set()
    return None


def _sources() -> list[Path]:
    paths = sorted(EXAMPLES.glob("*.yaml"))
    if CORPUS.is_dir():
        paths += sorted(CORPUS.glob("*.yaml"))
    return paths


def _claims_of_all_sources() -> list[tuple[str, dict[str, Any]]]:
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for path in _sources():
        try:
            documents = migrate_documents(path, gpu_memory="40Gi")
        except yaml.YAMLError:
            continue  # unparseable upstream files are test_corpus_migrate's business
        for claim in claims_in(documents):
            found.setdefault(claim["metadata"]["name"], (path.name, claim))
    return sorted(found.values(), key=lambda item: item[1]["metadata"]["name"])


def test_the_shared_corpus_is_judged_too():
    if not CORPUS.is_dir():
        pytest.skip(MISSING)
    assert any(source.endswith(".yaml") and not (EXAMPLES / source).exists()
               for source, _ in _claims_of_all_sources())


@pytest.mark.parametrize("source, claim", _claims_of_all_sources(),
                         ids=lambda value: value["metadata"]["name"] if isinstance(value, dict) else value)
def test_every_claim_migrate_emits_for_examples_and_corpus_allocates_where_its_devices_are(source, claim):
    where = allocatable_on(claim)  # also: no selector is a CEL error on any fixture
    expected = _fixtures_with_what_it_asks(claim)
    if expected is not None:
        assert where == expected, source
    else:  # model selectors: never on a fixture without that kind of device
        (request,) = (claim["spec"]["spec"] if claim["kind"] == "ResourceClaimTemplate" else claim["spec"])["devices"]["requests"]
        if request.get("exactly", request)["deviceClassName"] == "mig.nvidia.com":
            assert where <= {"a100-mig"}, source
        else:
            assert "a100-mig" not in where, source


# --- strict validation of every emitted object, for every Kubernetes that serves its version ----

@pytest.mark.parametrize("api_version", list(ApiVersion))
def test_every_emitted_object_is_strictly_valid_on_each_kubernetes_that_serves_its_version(api_version):
    version = api_version.value.split("/")[1]
    minors = [m for m in VALIDATED_MINORS if (1, m) >= DRA_VERSION_SINCE[version]]
    documents: dict[str, dict[str, Any]] = {}
    for sharing in (Sharing.CONSUMABLE, Sharing.TIMESLICING):  # MPS differs only inside opaque parameters
        for path in [DRIVER / "legacy-pods.yaml", *sorted(EXAMPLES.glob("*.yaml"))]:
            for document in migrate_documents(path, api_version=api_version, sharing=sharing, gpu_memory="40Gi"):
                documents.setdefault(json.dumps(document, sort_keys=True), document)
    assert claims_in(list(documents.values()))
    served = []
    for minor in minors:
        # The DRA objects at every minor (their schema is what changes); the pods and workloads that
        # reference them at the oldest and newest (0.1 s a validation adds up).
        checked = [d for d in documents.values()
                   if d["kind"] in CLAIM_KINDS or minor in (minors[0], minors[-1])]
        try:
            for document in checked:
                kubernetes_validate.validate(document, f"1.{minor}", strict=True)
        except kubernetes_validate.SchemaNotFoundError:
            continue  # this Kubernetes no longer serves the version
        served.append(minor)
    # Served at least from the release that introduced it (and v1 to the newest schema there is).
    assert served and served[0] == minors[0]
    if version == "v1":
        assert served == minors
