"""A value that cannot be read (a number too long to be a number, a value its YAML tag cannot hold)
is a clear error naming its file and line, in every input file every command reads, never a
traceback and never Python's own advice.

CPython refuses to convert a decimal integer of more than 4,300 digits (sys.get_int_max_str_digits,
its guard against quadratic-time conversion) with a bare ValueError, which json and PyYAML let
through as it is: "Exceeds the limit (4300 digits) for integer string conversion ... use
sys.set_int_max_str_digits() to increase the limit".  No Kubernetes field holds such a number
(integers are 64-bit, quantities at most 2^63-1: k8s.io/apimachinery pkg/api/resource/quantity.go);
the person must shorten it, or quote it if it is text.  A fuzz of hand-written YAML and JSON found
explain, migrate (JSON) and describe's kubeconfig printing the traceback, and migrate --cluster,
plan -f and inventory --nvml-recording printing Python's advice instead of the line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kubectl_gpu.cli.main import main

DATA = Path(__file__).parent / "data"
H100 = str(DATA / "slices" / "nvidia-h100-node.yaml")
LONG = "9" * 5000

CLAIM = ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: c\nspec:\n  devices:\n"
         "    requests:\n    - name: gpu\n      exactly:\n        deviceClassName: gpu.nvidia.com\n"
         f"        count: {LONG}\n")  # line 11
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
       "spec": {"containers": [{"name": "c", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}


def _says_what_to_change(output: str, where: int | str) -> None:
    """The output names the place (`line N`, or FILE:N) and says what to change."""
    assert "Traceback" not in output and "set_int_max_str_digits" not in output, output[-600:]
    place = f"line {where}" if isinstance(where, int) else where
    assert place in output and "5000 digits" in output and "shorten it" in output, output[-600:]


def _run(args: list[str], **kwargs):
    return CliRunner().invoke(main, args, catch_exceptions=False, **kwargs)


def test_explain_names_the_line_of_a_claim_count_too_long_to_read(tmp_path: Path) -> None:
    (tmp_path / "claim.yaml").write_text(CLAIM)
    result = _run(["explain", "-f", str(tmp_path / "claim.yaml"), "--slices", H100])
    assert result.exit_code == 2
    _says_what_to_change(result.output, 11)


@pytest.mark.parametrize("flag", ["--slices", "--classes", "--allocations"])
def test_explain_names_the_line_in_json_inputs_too(tmp_path: Path, flag: str) -> None:
    claim = yaml.safe_load(CLAIM.replace(LONG, "1"))
    (tmp_path / "claim.json").write_text(json.dumps(claim))
    (tmp_path / "other.json").write_text(f'{{"apiVersion": "v1",\n "kind": "List",\n "x": {LONG},\n "items": []}}\n')
    other = str(tmp_path / "other.json")
    inputs = [flag, other] if flag == "--slices" else ["--slices", H100, flag, other]
    args = ["explain", "-f", str(tmp_path / "claim.json"), *inputs]
    result = _run(args)
    assert result.exit_code == 2
    _says_what_to_change(result.output, 3)


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_migrate_leaves_the_document_as_it_was_and_names_the_line(tmp_path: Path, suffix: str) -> None:
    text = json.dumps(POD, indent=2).replace('"nvidia.com/gpu": 1', f'"nvidia.com/gpu": {LONG}')
    path = tmp_path / f"pod{suffix}"
    path.write_text(text)
    result = _run(["migrate", "--in-place", str(path)])
    assert result.exit_code == 3  # not migrated; nothing lost
    assert path.read_text() == text
    line = text.splitlines().index(next(line for line in text.splitlines() if LONG in line)) + 1
    _says_what_to_change(result.output, line)


def test_migrate_cluster_profile_names_the_file_and_line(tmp_path: Path) -> None:
    profile = tmp_path / "cluster.yaml"
    profile.write_text(f"apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: x\n  generation: {LONG}\n")
    pod = tmp_path / "pod.yaml"
    pod.write_text(yaml.safe_dump(POD))
    result = _run(["migrate", "--cluster", str(profile), str(pod)])
    assert result.exit_code == 2 and str(profile) in result.output
    _says_what_to_change(result.output, 5)


def test_plan_from_files_names_the_file_and_line(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(f"apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  generation: {LONG}\n")
    result = _run(["plan", "-f", str(nodes)])
    _says_what_to_change(result.output, f"{nodes}:5:")  # as plan words every document it cannot read


def test_inventory_recording_names_the_line(tmp_path: Path) -> None:
    recording = json.loads((DATA / "nvml" / "h100-80gb-hbm3.json").read_text())
    text = json.dumps(recording, indent=1).replace("{", f'{{\n "note": {LONG},', 1)
    (tmp_path / "node.json").write_text(text)
    result = _run(["inventory", "--nvml-recording", str(tmp_path / "node.json")])
    assert result.exit_code == 2
    _says_what_to_change(result.output, 2)


def test_a_kubeconfig_names_the_file_and_line(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text(f"apiVersion: v1\nkind: Config\npreferences:\n  colors: {LONG}\n")
    result = _run(["describe", "--kubeconfig", str(config)])
    assert result.exit_code == 2 and str(config) in result.output
    _says_what_to_change(result.output, 4)


# YAML 1.1's core tags on values they cannot hold (yaml.org/type: !!int, !!float, !!bool, !!timestamp).
# PyYAML's constructors fail on them with bare ValueError, KeyError and AttributeError; kubectl's
# go-yaml refuses them too ("cannot decode !!str `abc` as a !!int").  migrate reports them at their
# line (tests/test_migrate_robustness.py); so does every other reader of hand-written YAML.
TAGGED = ["!!int abc", "!!float abc", "!!bool linux", "!!timestamp x", "!!int '0b'"]


def _tagged_inputs(tmp_path: Path, value: str) -> dict[str, tuple[list[str], str]]:
    """Command line -> (arguments, the place its error names), each reading ``value`` at line 5."""
    document = f"apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: x\n  generation: {value}\n"
    (tmp_path / "in.yaml").write_text(document)
    (tmp_path / "claim.yaml").write_text(CLAIM.replace(LONG, "1"))
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(POD))
    (tmp_path / "config").write_text(f"apiVersion: v1\nkind: Config\npreferences:\n  colors: x\n  extra: {value}\n")
    file = str(tmp_path / "in.yaml")
    return {
        "explain --classes": (["explain", "-f", str(tmp_path / "claim.yaml"), "--slices", H100, "--classes", file],
                              "line 5"),
        "migrate --cluster": (["migrate", "--cluster", file, str(tmp_path / "pod.yaml")], "line 5"),
        "plan -f": (["plan", "-f", file], f"{file}:5:"),
        "describe --kubeconfig": (["describe", "--kubeconfig", str(tmp_path / "config")], "line 5"),
    }


@pytest.mark.parametrize("value", TAGGED)
@pytest.mark.parametrize("command", ["explain --classes", "migrate --cluster", "plan -f", "describe --kubeconfig"])
def test_a_value_its_tag_cannot_hold_is_an_error_at_its_line(tmp_path: Path, command: str, value: str) -> None:
    args, place = _tagged_inputs(tmp_path, value)[command]
    result = _run(args)
    assert "Traceback" not in result.output and place in result.output, result.output[-600:]
    assert "remove the tag or fix the value" in result.output, result.output[-600:]
    if command != "plan -f":  # plan leaves a document it cannot read out, with a warning
        assert result.exit_code == 2
