"""`kubectl gpu explain -f ...` offline: tables for people, stable JSON for scripts, clear errors."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from tests.corpus import claim_fixture

DATA = Path(__file__).parent / "data" / "slices"
TEST6 = str(claim_fixture("gpu-test6-a100-index"))
TEST1 = str(claim_fixture("gpu-test1-single-gpu"))
H100 = str(DATA / "nvidia-h100-node.yaml")
A100 = str(DATA / "nvidia-a100-mig-v1beta1.yaml")


def run(*args):
    return CliRunner().invoke(main, ["explain", *args], catch_exceptions=False)


def test_table_names_the_verdict_and_the_builtin_class():
    result = run("-f", TEST1, "--slices", H100)
    assert result.exit_code == 0, result.output
    assert "ResourceClaimTemplate gpu-test1/single-gpu" in result.output
    assert "can be allocated on node h100-node-1" in result.output
    assert "using the NVIDIA DRA driver's definition" in " ".join(result.output.split())


def test_missing_attribute_exits_nonzero_with_the_scheduler_message():
    result = run("-f", TEST6, "--slices", A100)
    assert result.exit_code == 1
    assert "selector #0: CEL runtime error: no such key: index" in " ".join(result.output.split())


def test_json_gives_per_device_and_selector_results():
    result = run("-f", TEST6, "--slices", A100, "-o", "json")
    data = json.loads(result.output)
    assert data["kind"] == "Explanation" and data["allocatable"] is False and data["devices"] == 6
    alternative = data["items"][0]["requests"][0]["alternatives"][0]
    errored = [d for d in alternative["deviceResults"] if d["result"] == "error"]
    assert errored[0]["selectors"][-1] == {"selector": "#0", "result": "error", "message": "no such key: index"}
    migs = [d for d in alternative["deviceResults"] if d["rejectedBy"] == "class gpu.nvidia.com #0"]
    assert len(migs) == 5


def test_yaml_output_and_mixed_list_file(tmp_path):
    mixed = {"apiVersion": "v1", "kind": "List", "items": [
        *yaml.safe_load_all(Path(H100).read_text()),
        *[d for d in yaml.safe_load_all(Path(TEST1).read_text()) if d and d.get("kind") == "ResourceClaimTemplate"],
        *yaml.safe_load_all((DATA / "example-driver-class.yaml").read_text()),
    ]}
    path = tmp_path / "all.yaml"
    path.write_text(yaml.safe_dump(mixed))
    result = run("-f", str(path), "-o", "yaml")
    assert result.exit_code == 0, result.output
    data = yaml.safe_load(result.output)
    assert data["deviceClasses"] == ["gpu.example.com"] and data["items"][0]["node"] == "h100-node-1"


def test_allocations_file_marks_devices_taken():
    result = run("-f", TEST1, "--slices", H100, "--allocations", str(DATA / "allocated-claims.yaml"), "-o", "json")
    alternative = json.loads(result.output)["items"][0]["requests"][0]["alternatives"][0]
    assert alternative["free"] == 6


def test_input_problems_exit_2_with_a_fix(tmp_path):
    no_cluster = {"HOME": str(tmp_path), "KUBECONFIG": None, "KUBERNETES_SERVICE_HOST": None}
    no_slices = CliRunner().invoke(main, ["explain", "-f", TEST1], env=no_cluster)
    assert no_slices.exit_code == 2 and "--slices FILE" in no_slices.output
    no_claims = run("-f", H100, "--slices", H100)
    assert no_claims.exit_code == 2 and "no ResourceClaim or ResourceClaimTemplate" in no_claims.output
    broken = tmp_path / "broken.yaml"
    broken.write_text("a: [1, 2\n")
    bad_yaml = run("-f", str(broken))
    assert bad_yaml.exit_code == 2 and "not valid YAML" in bad_yaml.output
    missing = run("-f", str(tmp_path / "nope.yaml"))
    assert missing.exit_code == 2 and "cannot read" in missing.output


def test_local_without_inventory_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "kubectl_gpu.inventory", None)  # import fails as if not installed
    result = run("-f", TEST1, "--local")
    assert result.exit_code == 2 and "--local needs the NVML inventory" in result.output


def test_local_uses_the_inventory_slices(monkeypatch):
    import types

    fake = types.ModuleType("kubectl_gpu.inventory")
    fake.local_resource_slices = lambda: list(yaml.safe_load_all(Path(H100).read_text()))
    monkeypatch.setitem(sys.modules, "kubectl_gpu.inventory", fake)
    result = run("-f", TEST1, "--local", "-o", "json")
    assert result.exit_code == 0 and json.loads(result.output)["devices"] == 8


def test_offline_explain_loads_the_fact_tables_not_the_translation(tmp_path):
    """`explain -f --slices` reads claims, classes and slices; the translation core (translate,
    demand, claims, node constraints, and its data model: a tenth of its start-up) is loaded by the
    core's face only when a command translates."""
    probe = ("import atexit, sys, runpy; sys.argv = ['kubectl-gpu', 'explain', '-f', sys.argv[1], '--slices', sys.argv[2]]\n"
             "atexit.register(lambda: print(' '.join(sorted(m for m in sys.modules if m.startswith(('kubectl_gpu.core', 'kubectl_gpu.dra'))))))\n"
             "runpy.run_module('kubectl_gpu.cli.main', run_name='__main__')\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "NO_COLOR": "1"}
    result = subprocess.run([sys.executable, "-c", probe, TEST1, H100], capture_output=True, text=True, env=env,
                            timeout=120)
    loaded = result.stdout.strip().splitlines()[-1].split()
    assert "kubectl_gpu.dra.facts" in loaded, result.stdout + result.stderr
    assert not {"kubectl_gpu.core.translate", "kubectl_gpu.core.demand", "kubectl_gpu.core.claims",
                "kubectl_gpu.core.model"} & set(loaded), loaded


def test_json_and_yaml_output_never_load_the_table_printer_or_the_translation_fitter():
    """-o json/yaml print data for scripts: the terminal table library (rich) is not imported, nor
    the cluster package's translation fitting (explain reads only a profile), so a script's run
    does not pay for them (issue 11: explain end to end within 0.5 s)."""
    probe = ("import sys\nfrom kubectl_gpu.cli.main import main\n"
             "try:\n    main(sys.argv[1:])\nexcept SystemExit as done:\n"
             "    print('rich' in sys.modules or 'kubectl_gpu.cluster.fit' in sys.modules, done.code)")
    for output in ("json", "yaml"):
        result = subprocess.run([sys.executable, "-c", probe, "explain", "-f", TEST1, "--slices", H100, "-o", output],
                                capture_output=True, text=True, check=False)
        assert result.stdout.splitlines()[-1] == "False 0", result.stderr[-2000:]


def _claim(**overrides):
    from tests.json_places import with_value_at

    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c"},
           "spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}
    for path, value in overrides.items():
        obj = with_value_at(obj, path, value)
    return obj


@pytest.mark.parametrize("claim, says", [
    (_claim(metadata="c"), "metadata must be a map"),
    (_claim(spec=["devices"]), "spec must be a map"),
    (_claim(**{"spec.devices": "gpu"}), "spec.devices must be a map"),
    (_claim(**{"spec.devices.requests": {"name": "g"}}), "spec.devices.requests must be a list"),
    (_claim(**{"spec.devices.requests.0.exactly": "gpu.nvidia.com"}), "exactly must be a map"),
    (_claim(**{"spec.devices.requests.0.exactly.selectors": "device.driver == 'gpu.nvidia.com'"}),
     "selectors must be a list"),
    (_claim(**{"spec.devices.requests.0.exactly.selectors": [{"cel": "device.driver == 'x'"}]}),
     "set cel.expression"),
    (_claim(**{"spec.devices.requests.0.exactly.capacity": ["memory"]}), "capacity must be a map"),
    (_claim(**{"spec.devices.requests.0.exactly.capacity": {"requests": ["memory"]}}),
     "capacity.requests must be a map"),
    (_claim(**{"spec.devices.requests.0": {"name": "g", "firstAvailable": {"name": "a"}}}),
     "firstAvailable must be a list"),
    (_claim(**{"spec.devices.constraints": "gpu"}), "spec.devices.constraints must be a list"),
    (_claim(**{"spec.devices.constraints": ["gpu"]}), "spec.devices.constraints[0] must be a map"),
    (_claim(**{"spec.devices.constraints": [{"matchAttribute": "gpu.nvidia.com/uuid", "requests": [1]}]}),
     "spec.devices.constraints[0].requests must be a list of request names"),
    (_claim(status="allocated"), "status must be a map"),
    (_claim(kind={"ResourceClaim": 1}), None),  # not a claim at all: nothing to explain
    (_claim(apiVersion=["resource.k8s.io/v1"]), None),
])
def test_a_malformed_claim_says_which_field_to_fix_and_never_shows_a_traceback(tmp_path, claim, says):
    """The API server refuses these shapes (every field has one type in the resource.k8s.io
    OpenAPI schema); explain reads files nobody validated, so it names the field instead."""
    path = tmp_path / "claim.yaml"
    path.write_text(yaml.safe_dump(claim))
    result = CliRunner().invoke(main, ["explain", "-f", str(path), "--slices", H100])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    if says is None:
        assert result.exit_code == 2 and "no ResourceClaim or ResourceClaimTemplate" in result.output
    else:
        assert result.exit_code == 1 and says in " ".join(result.output.split()), result.output


@pytest.mark.parametrize("device_class, says", [
    ({"metadata": "gpu.nvidia.com"}, "metadata must be a map"),
    ({"metadata": {"name": "gpu.nvidia.com"}, "spec": "x"}, "spec must be a map"),
    ({"metadata": {"name": "gpu.nvidia.com"}, "spec": {"selectors": "device.driver == 'x'"}},
     "selectors must be a list"),
])
def test_a_malformed_device_class_says_which_field_to_fix(tmp_path, device_class, says):
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([_claim(), {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                                   **device_class}]))
    result = CliRunner().invoke(main, ["explain", "-f", str(path), "--slices", H100])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 2 and says in " ".join(result.output.split()), result.output


@pytest.mark.parametrize("args, code", [
    (["-f", TEST1, "--slices", H100], 0),
    (["-f", TEST6, "--slices", A100], 1),
    (["-f", TEST6, "--slices", A100, "-o", "json"], 1),
])
def test_the_executable_ends_with_the_same_output_exit_code_and_atexit_handlers(tmp_path, args, code):
    """The executable ends explain without freeing its objects one by one (kubectl_gpu/cli/exits.py,
    skip_teardown); what a caller sees stays what Python's own exit gives: every byte of stdout
    (a pipe, block-buffered), the exit code, and the atexit handlers run (Python's documented
    exit: https://docs.python.org/3/library/atexit.html)."""
    probe = ("import atexit, sys\nfrom kubectl_gpu.cli.main import run\n"
             "atexit.register(lambda: sys.stderr.write('atexit handler ran'))\nsys.argv[0] = 'kubectl-gpu'\nrun()\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "NO_COLOR": "1"}
    result = subprocess.run([sys.executable, "-c", probe, "explain", *args], capture_output=True, text=True, env=env,
                            timeout=120)
    assert result.returncode == code, result.stderr[-2000:]
    assert result.stdout == run(*args).output
    assert result.stderr.endswith("atexit handler ran")


def test_json_inputs_never_load_a_yaml_reader(tmp_path):
    """A claim and slices given as JSON (`kubectl get -o json`) are read by the json module alone:
    neither PyYAML nor yaml-rs is imported (their start-up is part of explain's 0.5 s, issue 11)."""
    claim, slices = tmp_path / "claim.json", tmp_path / "slices.json"
    claim.write_text(json.dumps([d for d in yaml.safe_load_all(Path(TEST1).read_text()) if d]))
    slices.write_text(json.dumps([d for d in yaml.safe_load_all(Path(H100).read_text()) if d]))
    probe = ("import atexit, sys\nfrom kubectl_gpu.cli.main import run\n"
             "atexit.register(lambda: print(sorted(m for m in sys.modules if 'yaml' in m)))\n"
             "sys.argv[0] = 'kubectl-gpu'\nrun()\n")
    for output in ("table", "json"):
        result = subprocess.run([sys.executable, "-c", probe, "explain", "-f", str(claim), "--slices", str(slices),
                                 "-o", output], capture_output=True, text=True, timeout=120,
                                env={**os.environ, "XDG_CACHE_HOME": str(tmp_path), "NO_COLOR": "1"})
        assert result.returncode == 0, result.stderr[-2000:]
        assert result.stdout.splitlines()[-1] == "[]", output


SHARED = DATA / "nvidia-consumable-memory.yaml"
MEMORY_CLAIM = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "share"},
                "spec": {"devices": {"requests": [{"name": "g", "exactly": {
                    "deviceClassName": "gpu.nvidia.com", "capacity": {"requests": {"memory": "10Gi"}}}}]}}}


# A capacity's requestPolicy as the API server validates it (kubernetes/kubernetes,
# pkg/apis/resource/validation/validation.go at 009801d930e2e3c8b3671a3ec28e31a2f64865ac,
# validateRequestPolicy and validateRequestPolicyRange): validValues is a list of quantities,
# validRange a map whose min is required, max and step quantities, and step greater than zero.
# explain reads slices from files nobody validated: it names the field instead of a traceback
# (a corpus mutation fuzz found step: {name: [...]} printing InvalidValue's).
@pytest.mark.parametrize("policy, says", [
    ({"default": "1Gi", "validRange": {"min": "1Gi", "step": {"name": [1]}}}, "validRange.step"),
    ({"default": "1Gi", "validRange": {"min": "1Gi", "step": "0"}}, "validRange.step"),
    ({"default": "1Gi", "validRange": {"min": "1Gi", "step": "-1Gi"}}, "validRange.step"),
    ({"default": "1Gi", "validRange": {"min": "lots"}}, "validRange.min"),
    ({"default": "1Gi", "validRange": {"min": "1Gi", "max": [1]}}, "validRange.max"),
    ({"default": "1Gi", "validRange": {"max": "8Gi"}}, "validRange.min"),
    ({"default": "1Gi", "validRange": ["1Gi"]}, "validRange"),
    ({"default": "1Gi", "validValues": "1Gi"}, "validValues"),
    ({"default": "1Gi", "validValues": ["1Gi", {"a": 1}]}, "validValues[1]"),
])
def test_a_malformed_capacity_request_policy_names_the_field_to_fix(tmp_path, policy, says):
    slices = [doc for doc in yaml.safe_load_all(SHARED.read_text()) if doc]
    slices[0]["spec"]["devices"][0]["capacity"]["memory"]["requestPolicy"] = policy
    (tmp_path / "slices.yaml").write_text(yaml.safe_dump_all(slices))
    (tmp_path / "claim.yaml").write_text(yaml.safe_dump(MEMORY_CLAIM))
    result = run("-f", str(tmp_path / "claim.yaml"), "--slices", str(tmp_path / "slices.yaml"))
    assert result.exit_code == 2, result.output
    assert f"spec.devices[0].capacity.memory.requestPolicy.{says}" in " ".join(result.output.split()), result.output


# kubectl reads every file and stdin through unicode.BOMOverride(unicode.UTF8.NewDecoder())
# (k8s.io/cli-runtime/pkg/resource/visitor.go, FileVisitor.Visit): a UTF-8 byte order mark is
# dropped, a UTF-16 one (either byte order) decodes the rest as UTF-16.  explain reads what kubectl
# applies, as migrate does (tests/test_migrate_filesystem_properties.py), and names a file that is
# not text instead of printing UnicodeDecodeError's traceback.
@pytest.mark.parametrize("mark, codec", [(b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"),
                                         (b"\xfe\xff", "utf-16-be")])
@pytest.mark.parametrize("stdin", [False, True])
def test_explain_reads_byte_order_marks_as_kubectl_does(tmp_path, mark, codec, stdin):
    data = mark + Path(TEST1).read_text().encode(codec)
    (tmp_path / "claim.yaml").write_bytes(data)
    args = ["explain", "-f", "-" if stdin else str(tmp_path / "claim.yaml"), "--slices", H100, "-o", "json"]
    result = CliRunner().invoke(main, args, input=data if stdin else None, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["allocatable"] is True


@pytest.mark.parametrize("stdin", [False, True])
def test_explain_names_input_that_is_not_text(tmp_path, stdin):
    data = Path(TEST1).read_bytes().replace(b"ubuntu", b"ubunt\xfc")  # Latin-1, not UTF-8
    (tmp_path / "claim.yaml").write_bytes(data)
    args = ["explain", "-f", "-" if stdin else str(tmp_path / "claim.yaml"), "--slices", H100]
    result = CliRunner().invoke(main, args, input=data if stdin else None, catch_exceptions=False)
    assert result.exit_code == 2 and "not UTF-8 text" in result.output and "save it as UTF-8" in result.output


def test_a_resource_slice_given_twice_counts_once(tmp_path):
    """ResourceSlices are cluster-scoped and named: a cluster holds one of each name.  Two
    overlapping dumps give the same slice twice; its devices count once (the last copy), or a
    claim for more GPUs than the node has would be called allocatable."""
    text = Path(H100).read_text()
    (tmp_path / "twice.yaml").write_text(text + "\n---\n" + text)
    once = json.loads(run("-f", TEST1, "--slices", H100, "-o", "json").output)
    twice = json.loads(run("-f", TEST1, "--slices", str(tmp_path / "twice.yaml"), "-o", "json").output)
    assert twice["devices"] == once["devices"] == 8
    assert twice["items"] == once["items"]  # 8 free, not 16


def test_explain_tables_fit_80_columns_and_wide_adds_class_source_best_node_and_expressions():
    mig = str(claim_fixture("gpu-test4-mig-devices"))
    narrow = run("-f", mig, "--slices", H100)
    tables = [line for line in narrow.output.splitlines() if not line.startswith(" ") and "  " in line]
    assert tables and max(len(line) for line in tables) <= 80, narrow.output
    headers = [re.split(r"\s{3,}", line) for line in tables if line.startswith("REQUEST")]
    assert headers == [["REQUEST", "CLASS", "NEEDS", "MATCH", "FREE", "RESULT"],
                       ["REQUEST", "SELECTOR", "MATCHED", "REJECTED", "ERRORS"]]
    wide = run("-f", mig, "--slices", H100, "-o", "wide").output
    assert "IN CLASS" in wide and "BEST NODE" in wide and "(built-in (NVIDIA driver))" in wide
    assert "device.attributes['gpu.nvidia.com'].profile ==" in wide


def test_no_headers_prints_explain_tables_without_their_header_lines():
    with_headers = run("-f", TEST1, "--slices", H100).output.splitlines()
    bare = run("-f", TEST1, "--slices", H100, "--no-headers").output.splitlines()
    assert any(line.startswith("REQUEST") for line in with_headers)
    assert not any(line.startswith("REQUEST") for line in bare)
    assert [line.split() for line in with_headers if not line.startswith("REQUEST")] == [line.split() for line in bare]


def _keys(value):
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from _keys(item)


def test_json_keys_are_camel_case_throughout_as_every_kubernetes_object():
    """One contract for scripts: explain's keys are spelled as the API's (bestNode, deviceResults),
    like describe's and doctor's, never Python's snake_case."""
    data = json.loads(run("-f", TEST1, "--slices", H100, "-o", "json").output)
    assert data["apiVersion"] and data["kind"] == "Explanation"
    alternative = data["items"][0]["requests"][0]["alternatives"][0]
    assert {"bestNode", "bestNodeFree", "inClass", "deviceClass", "deviceResults"} <= set(alternative)
    assert not [key for key in _keys(data) if "_" in key]
