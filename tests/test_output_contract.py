"""One contract for scripts (issue 29): what `-o json|yaml` prints.

kubectl prints one value however many objects it was given: an object alone as itself, several as
one `v1` List (`kubectl get -f a.yaml -f b.yaml -o json`).  `migrate -o json` over several files
does the same, streaming the items as each file is done; `-o yaml` stays a stream of YAML documents
(what `kubectl apply -f` and GitOps tools read, with each file's comments), as inventory's does.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml
from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from kubectl_gpu.cli.reports import object_list
from kubectl_gpu.dra.facts import REPORT_API_VERSION
from kubectl_gpu.manifests.loader import Format
from kubectl_gpu.manifests.output import JsonList
from kubectl_gpu.manifests.serialize import RenderedFile
from tests.output_schemas import SCHEMAS, check_output
from tests.test_migrate_cli import POD
from tests.test_fleet_e2e import cluster  # noqa: F401  (the fixture: tests/fleet_cluster.py's mixed cluster)

CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n"


def pod(name: str) -> str:
    return POD.replace("name: p\n", f"name: {name}\n")


def migrate(*args: str):
    return CliRunner().invoke(main, ["migrate", *args])


def test_migrate_o_json_over_several_files_prints_one_list_of_every_object(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(pod("a") + "---\n" + CONFIG_MAP)
    (tmp_path / "b.yaml").write_text(pod("b"))
    result = migrate("-o", "json", str(tmp_path))
    assert result.exit_code == 0, result.output
    value = json.loads(result.stdout)  # one JSON value, not one per file
    assert value["apiVersion"] == "v1" and value["kind"] == "List"
    assert [f"{i['kind']}/{i['metadata']['name']}" for i in value["items"]] == [
        "ResourceClaimTemplate/kgpu-gpu-1-d8614e7bb2", "Pod/a", "ConfigMap/settings", "Pod/b"]
    assert result.stdout == json.dumps(value, indent=2) + "\n"  # as kubectl indents it


def test_migrate_o_json_of_one_file_is_that_files_json_as_before(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(CONFIG_MAP)
    result = migrate("-o", "json", str(tmp_path / "a.yaml"))
    assert result.stdout == json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}},
                                       indent=2) + "\n"


def test_migrate_o_json_puts_the_device_classes_in_the_same_list(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(pod("a").replace("nvidia.com/gpu", "nvidia.com/mig-1g.10gb"))
    result = migrate("-o", "json", "--device-classes", str(tmp_path))
    value = json.loads(result.stdout)
    assert value["kind"] == "List"
    assert [i["kind"] for i in value["items"]] == ["DeviceClass", "Pod"]


def test_migrate_o_yaml_stays_a_stream_of_documents(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(CONFIG_MAP)
    (tmp_path / "b.yaml").write_text(CONFIG_MAP.replace("settings", "other"))
    result = migrate("-o", "yaml", str(tmp_path))
    assert result.stdout == CONFIG_MAP + "---\n" + CONFIG_MAP.replace("settings", "other")


def test_a_file_that_cannot_be_json_follows_the_list_as_it_was(tmp_path: Path) -> None:
    written: list[str] = []
    values = JsonList(written.append)
    for name in ("a", "b"):
        values.value({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
    broken = RenderedFile(source=None, text="kind: [oops\n", format=Format.YAML,  # type: ignore[arg-type]
                          fallback_reason="not written as JSON")
    values.file(broken)
    values.close()
    text = "".join(written)
    end = text.index("\n}\n") + 3
    assert [i["metadata"]["name"] for i in json.loads(text[:end])["items"]] == ["a", "b"]
    assert text[end:] == "---\nkind: [oops\n"  # the separator a YAML file gets after another file


# ----------------------------------------------------------------- -o name

def test_o_name_spells_objects_as_kubectl_get_o_name_does() -> None:
    """k8s.io/cli-runtime pkg/printers/name.go: strings.ToLower(GroupKind.String()) + "/" + name: the kind
    in lower case, with its group for every group but the core one."""
    from kubectl_gpu.cli.reports import object_name

    assert object_name("Deployment", "apps/v1", "web") == "deployment.apps/web"
    assert object_name("Pod", "v1", "train-0") == "pod/train-0"
    assert object_name("PyTorchJob", "kubeflow.org/v1", "bert") == "pytorchjob.kubeflow.org/bert"


@pytest.mark.parametrize("command", ["doctor", "explain"])
def test_commands_that_print_no_objects_do_not_offer_o_name(command: str) -> None:
    help_text = CliRunner().invoke(main, [command, "--help"], terminal_width=200).output
    assert "[table|wide|json|yaml]" in help_text and "KIND/NAME per object" not in help_text
    refused = CliRunner().invoke(main, [command, "-o", "name"])
    assert refused.exit_code == 2 and "'name' is not one of" in refused.output


@pytest.mark.parametrize("command", [["describe"], ["describe", "node"], ["describe", "pod"], ["describe", "claim"],
                                     ["plan"]])
def test_commands_that_list_objects_offer_o_name(command: list[str]) -> None:
    help_text = CliRunner().invoke(main, [*command, "--help"], terminal_width=200).output
    assert "[table|wide|json|yaml|name]" in help_text and "KIND/NAME per object" in help_text


# ----------------------------------------------------------------- the fleet commands that write

def _report(cluster, *args: str, expect: int = 0) -> dict:
    result = cluster.runner.invoke(main, [*args, "-o", "json"], env=cluster.double.kubectl_env())
    assert result.exit_code == expect, result.output
    return json.loads(result.stdout)  # nothing else on stdout: the lines for people went to stderr


def test_migrate_from_cluster_o_json_reports_each_object_and_what_was_done(cluster) -> None:
    report = _report(cluster, "migrate", "--from-cluster", "-A")
    assert (report["apiVersion"], report["kind"], report["dryRun"], report["error"]) == (
        "kubectl-gpu.io/v1alpha1", "MigrationResult", True, None)
    results = {step["object"]: step["result"] for step in report["steps"]}
    assert results["Deployment/serving/infer"].startswith("would")
    assert results["Deployment/ml/broken"].startswith("blocked: ")
    applied = _report(cluster, "migrate", "--from-cluster", "-n", "serving", "--apply", "--timeout", "5s")
    assert applied["dryRun"] is False
    assert [s["result"] for s in applied["steps"] if s["object"] == "Deployment/serving/infer"][-1] == \
        "successfully rolled out"


def test_rollback_o_json_reports_each_object(cluster) -> None:
    cluster.kubectl_gpu("migrate", "--from-cluster", "-n", "serving", "--apply", "--timeout", "5s")
    report = _report(cluster, "rollback", "deploy/infer", "-n", "serving")
    assert report["kind"] == "RollbackResult" and report["steps"][0]["object"] == "Deployment/serving/infer"
    missing = _report(cluster, "rollback", "deploy/nosuch", "-n", "serving", expect=1)
    assert missing["steps"] == [] and "not found" in missing["error"]


def test_migrate_nodes_o_json_reports_each_node_and_pod(cluster) -> None:
    node = next(p for p in cluster.pods() if p["metadata"]["labels"].get("app") == "bert")["spec"]["nodeName"]
    report = _report(cluster, "migrate", "nodes", node)
    assert report["kind"] == "NodeWave" and report["dryRun"] is True
    assert report["steps"][0] == {"object": f"node/{node}", "result": "would be cordoned", "notes": []}
    assert report["steps"][-1]["result"].startswith("would be labelled ")


# ----------------------------------------------------------------- the schemas (docs/schemas/)

def _object_schemas(schema: Any, path: str = "") -> Iterator[tuple[str, dict]]:
    if isinstance(schema, dict):
        if "properties" in schema:
            yield path, schema
        for key, value in schema.items():
            yield from _object_schemas(value, f"{path}/{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            yield from _object_schemas(value, f"{path}/{index}")


SCHEMA_FILES = sorted(SCHEMAS.glob("*.json"))


@pytest.mark.parametrize("path", SCHEMA_FILES, ids=lambda p: p.stem)
def test_each_schema_is_a_json_schema_for_its_kind(path: Path) -> None:
    import jsonschema

    schema = json.loads(path.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["title"] == path.stem
    assert schema["properties"]["kind"] == {"const": path.stem}
    assert schema["properties"]["apiVersion"] == {"const": REPORT_API_VERSION}
    assert schema["required"][:2] == ["apiVersion", "kind"]


@pytest.mark.parametrize("path", SCHEMA_FILES, ids=lambda p: p.stem)
def test_every_key_of_a_report_is_camel_case(path: Path) -> None:
    """Each object the schema describes lists its keys (no others allowed), all camelCase; maps keyed
    by data (attributes, capacities, resources) are `additionalProperties` of a value type."""
    for where, schema in _object_schemas(json.loads(path.read_text())):
        assert schema.get("additionalProperties") is False, f"{path.name}{where}: keys other than its own"
        for key in schema["properties"]:
            assert re.fullmatch(r"[a-z][a-zA-Z0-9]*", key), f"{path.name}{where}: {key!r} is not camelCase"


def test_a_report_that_breaks_its_schema_fails_the_test_that_printed_it() -> None:
    node = {"apiVersion": REPORT_API_VERSION, "kind": "GpuNode", "name": "n", "draNode": True,
            "draNodeLabel": None, "devices": [], "legacyResources": [], "legacyPods": [], "findings": []}
    assert check_output(json.dumps(object_list([node])), "json") == 1
    assert check_output(yaml.safe_dump(node), "yaml") == 1
    with pytest.raises(AssertionError, match="gpu_count"):
        check_output(json.dumps({**node, "gpu_count": 1}), "json")
    with pytest.raises(AssertionError, match="has no schema"):
        check_output(json.dumps({**node, "kind": "GpuThing"}), "json")
