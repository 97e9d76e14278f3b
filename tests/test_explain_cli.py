"""`kubectl gpu explain -f ...` offline: tables for people, stable JSON for scripts, clear errors."""

import json
import os
import subprocess
import sys
from pathlib import Path

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
    errored = [d for d in alternative["device_results"] if d["result"] == "error"]
    assert errored[0]["selectors"][-1] == {"selector": "#0", "result": "error", "message": "no such key: index"}
    migs = [d for d in alternative["device_results"] if d["rejected_by"] == "class gpu.nvidia.com #0"]
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
    demand, claims, node constraints: a tenth of its start-up) is loaded by the core's face only
    when a command translates."""
    probe = ("import sys, runpy; sys.argv = ['kubectl-gpu', 'explain', '-f', sys.argv[1], '--slices', sys.argv[2]]\n"
             "try:\n    runpy.run_module('kubectl_gpu.cli.main', run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "print(' '.join(sorted(m for m in sys.modules if m.startswith('kubectl_gpu.core'))))\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "NO_COLOR": "1"}
    result = subprocess.run([sys.executable, "-c", probe, TEST1, H100], capture_output=True, text=True, env=env,
                            timeout=120)
    loaded = result.stdout.strip().splitlines()[-1].split()
    assert "kubectl_gpu.core.facts" in loaded, result.stdout + result.stderr
    assert not {"kubectl_gpu.core.translate", "kubectl_gpu.core.demand", "kubectl_gpu.core.claims"} & set(loaded)


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
