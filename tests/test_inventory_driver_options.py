"""`kubectl gpu inventory --driver-version/--driver-gates/--consumable-shares`: which driver the
preview is for; a setting the driver refuses is a usage error saying what to change."""

from __future__ import annotations

import json

import yaml
from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from tests.test_inventory_fake_nvml import DATA

H100 = str(DATA / "h100-80gb-hbm3-mig-profiles.json")


def run(*args: str):
    return CliRunner().invoke(main, ["inventory", "--nvml-recording", H100, "--node-name", "n1", *args])


def test_dynamic_mig_prints_every_slice_of_the_pool_as_kubectl_prints_several_objects():
    as_json = run("--driver-gates", "DynamicMIG=true", "-o", "json")
    as_yaml = run("--driver-gates", "DynamicMIG=true", "-o", "yaml")

    assert as_json.exit_code == 0, as_json.output
    listed = json.loads(as_json.stdout)
    assert listed["kind"] == "List" and [s["kind"] for s in listed["items"]] == ["ResourceSlice"] * 2
    assert list(yaml.safe_load_all(as_yaml.stdout)) == listed["items"]


def test_the_default_is_the_newest_release_with_its_default_gates():
    result = run("-o", "json")

    assert result.exit_code == 0
    assert json.loads(result.stdout)["kind"] == "ResourceSlice"  # one slice: DynamicMIG is off by default


def test_the_table_lists_the_dynamic_mig_placements():
    result = run("--driver-gates", "DynamicMIG=true")

    assert result.exit_code == 0
    assert "gpu-0-mig-7g80gb-0-0" in result.stdout and "7g.80gb" in result.stdout


def test_gates_the_driver_refuses_together_are_a_usage_error():
    result = run("--driver-gates", "DynamicMIG=true,MPSSupport=true")

    assert result.exit_code == 2
    assert "DynamicMIG is mutually exclusive with MPSSupport" in result.output
    assert "Traceback" not in result.output


def test_a_gate_written_wrong_says_how_to_write_it():
    result = run("--driver-gates", "DynamicMIG")

    assert result.exit_code == 2 and "must be Gate=true or Gate=false" in result.output


def test_an_unknown_driver_version_names_the_known_ones():
    result = run("--driver-version", "v0.9.0")

    assert result.exit_code == 2 and "v0.5.0" in result.output


def test_a_release_too_old_to_predict_says_which_are():
    result = run("--driver-version", "v25.8.0")

    assert result.exit_code == 2 and "v25.12.0 and newer" in result.output


def test_record_to_stdout_prints_the_recording_instead_of_the_preview():
    result = run("--record", "-")

    assert result.exit_code == 0
    recording = json.loads(result.stdout)
    assert recording["gpus"][0]["gpuInstanceProfiles"][0]["placements"][0] == {"start": 0, "size": 1}
