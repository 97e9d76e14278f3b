"""`kubectl gpu doctor` against the HTTP API double: exit status, findings with fixes, RBAC gaps."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from tests import builders as b
from tests.corpus import claim_fixture, corpus_file



def doctor(double, *args: str):
    return CliRunner().invoke(main, ["doctor", "--kubeconfig", double.kubeconfig_path(), *args],
                              catch_exceptions=False)


def report(double, *args: str) -> tuple[int, dict]:
    result = doctor(double, "-o", "json", *args)
    return result.exit_code, json.loads(result.output)


def codes(data: dict) -> set[tuple[str, str]]:
    return {(f["code"], f["subject"]) for f in data["findings"] if f["severity"] != "info"}


def fixture(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(claim_fixture(name).read_text()) if d]


def corpus(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(corpus_file("dra", name).read_text()) if d]


def healthy_cluster(double, dra_version: str = "v1") -> None:
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kubectl-gpu"}},
                *b.nvidia_device_classes(), b.dra_node("dra-a"), b.gpu_slice("dra-a"),
                b.webhook_configuration("MutatingWebhookConfiguration"),
                b.webhook_configuration("ValidatingWebhookConfiguration"),
                b.service(), b.endpoints(ready=2),
                b.template("kubectl-gpu-1x-gpu", managed=True), b.deployment("web", template_name="kubectl-gpu-1x-gpu")]
    for obj in objects:  # v1beta2 has the v1 shape
        if obj["apiVersion"] == "resource.k8s.io/v1":
            obj["apiVersion"] = f"resource.k8s.io/{dra_version}"
    double.seed(*objects)


def test_healthy_cluster_exits_zero(k8s_double):
    healthy_cluster(k8s_double)
    status, data = report(k8s_double)
    assert status == 0, data["findings"]
    assert data["healthy"] is True
    assert data["servedDRAVersions"] == ["v1", "v1beta2", "v1beta1"]
    assert {c["name"]: c["status"] for c in data["checks"]} == {
        "api-versions": "ok", "double-counting": "ok", "extended-resources": "ok", "webhook": "ok",
        "selectors": "ok", "unused-templates": "ok", "device-taints": "ok", "quotas": "ok",
        "dra-node-resources": "ok"}
    table = doctor(k8s_double)
    assert table.exit_code == 0 and "No problems found." in table.output


def test_every_problem_is_found_with_a_fix_and_exits_one(k8s_double):
    healthy_cluster(k8s_double)
    k8s_double.delete("endpoints", "kubectl-gpu-webhook", "kubectl-gpu")
    mig_class = [d for d in fixture("mig-1g-12gb-extended-resource")
                 if d["kind"] in ("DeviceClass", "Namespace")]
    k8s_double.seed(
        *mig_class,
        b.dra_node("dra-bad", legacy={"nvidia.com/gpu": "8"}), b.gpu_slice("dra-bad"),
        b.node("gh200", legacy={"nvidia.com/mig-1g.12gb": "14"}),
        b.template("pinned", "default", requests=[b.exact_request(
            selectors=["device.attributes['gpu.nvidia.com'].minor == 0"])]),
        b.template("kubectl-gpu-orphan", managed=True),
    )
    status, data = report(k8s_double)
    assert status == 1 and data["healthy"] is False
    assert codes(data) == {
        ("double-counting", "node/dra-bad"),
        ("extended-resource-overlap", "deviceclass/mig-1g-12gb.gpu.nvidia.com"),
        ("webhook-not-ready", "mutatingwebhookconfiguration/kubectl-gpu-webhook"),
        ("webhook-not-ready", "validatingwebhookconfiguration/kubectl-gpu-webhook"),
        ("unpublished-attribute", "resourceclaimtemplate/default/pinned"),
        ("unused-managed-object", "resourceclaimtemplate/default/kubectl-gpu-orphan"),
    }
    assert all(f["fix"] for f in data["findings"])
    table = doctor(k8s_double)
    assert table.exit_code == 1 and "6 problem(s) found." in table.output


def test_corpus_example_driver_templates_against_its_slices(k8s_double):
    listing = yaml.safe_load(corpus_file("dra", "kubernetes-sigs__dra-example-driver__README.md__L189-L320.yaml").read_text())
    k8s_double.seed(listing, corpus("kubernetes-sigs__dra-example-driver__demo_examples_cel-selector_cel-selector.yaml"),
                    b.device_class("gpu.example.com", "device.driver == 'gpu.example.com'"))
    status, data = report(k8s_double)
    assert status == 0, data["findings"]
    selectors = next(c for c in data["checks"] if c["name"] == "selectors")
    assert "8 published device(s)" in selectors["summary"]


def test_namespace_flag_limits_namespaced_checks(k8s_double):
    k8s_double.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
                    b.template("kubectl-gpu-orphan", "team-a", managed=True))
    assert ("unused-managed-object", "resourceclaimtemplate/team-a/kubectl-gpu-orphan") in codes(report(k8s_double)[1])
    status, data = report(k8s_double, "-n", "default")
    assert status == 0 and codes(data) == set()


def test_forbidden_resources_skip_their_checks_and_fail(k8s_double):
    healthy_cluster(k8s_double)
    k8s_double.fail("list", "mutatingwebhookconfigurations", status=403, times=None,
                    message="mutatingwebhookconfigurations.admissionregistration.k8s.io is forbidden")
    status, data = report(k8s_double)
    assert status == 1
    webhook = next(c for c in data["checks"] if c["name"] == "webhook")
    assert webhook["status"] == "skipped" and "forbidden" in webhook["skipped"]
    assert {c["name"] for c in data["checks"] if c["status"] == "skipped"} == {"webhook"}


def test_older_cluster_without_dra_v1(k8s_double):
    from tests.k8sdouble import K8sDouble

    with K8sDouble(kubernetes_version="1.33", disabled_group_versions=["resource.k8s.io/v1"]) as double:
        healthy_cluster(double, "v1beta2")
        status, data = report(double)
        assert status == 1
        assert codes(data) == {("dra-v1-not-served", "apigroup/resource.k8s.io")}
        assert "--api-version v1beta2" in data["findings"][0]["fix"]


def test_unreachable_cluster_exits_four(k8s_double, tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(Path(k8s_double.kubeconfig_path()).read_text())
    k8s_double.stop()
    result = CliRunner().invoke(main, ["doctor", "--kubeconfig", str(kubeconfig)])
    assert result.exit_code == 4
    assert "cannot reach the API server" in result.output


def test_a_renamed_gpu_resource_declared_on_the_command_line_fails_on_a_dra_node(k8s_double):
    healthy_cluster(k8s_double)
    k8s_double.seed(b.dra_node("dra-9", legacy={"nvidia.com/a100": "8"}))
    assert doctor(k8s_double).exit_code == 0  # unknown to kubectl-gpu: listed, not failed
    declared = doctor(k8s_double, "--extra-legacy-resource", "nvidia.com/a100")
    assert declared.exit_code == 1 and "nvidia.com/a100" in declared.output


def test_doctor_wide_shows_every_summary_whole_and_no_headers_drops_the_header(k8s_double):
    """Every flag doctor's --help offers does what kubectl's does: -o wide elides no cell,
    --no-headers prints the checks without their header line."""
    healthy_cluster(k8s_double)
    narrow = doctor(k8s_double).output.splitlines()
    checks = narrow[:narrow.index("")]
    assert checks[0].split() == ["CHECK", "STATUS", "LOOKED", "AT"]
    wide = doctor(k8s_double, "-o", "wide").output.splitlines()
    assert not any("…" in line for line in wide[:wide.index("")])
    data = report(k8s_double)[1]
    for check in data["checks"]:
        assert any(line.endswith(check["summary"]) for line in wide), check["summary"]
    bare = doctor(k8s_double, "--no-headers").output.splitlines()
    assert [line.split() for line in bare[:bare.index("")]] == [line.split() for line in checks[1:]]


def test_doctor_names_each_check_whole_within_80_columns_and_says_what_it_checks_under_o_wide(k8s_double):
    """A check's title is a sentence that 80 columns would cut ("GPUs offered by both the device
    plugin and a DR…"): the default table names each check by its short name (the JSON's `name`),
    -o wide adds the sentence."""
    healthy_cluster(k8s_double)
    data = report(k8s_double)[1]
    narrow = doctor(k8s_double).output.splitlines()
    table = narrow[:narrow.index("")]
    assert max(len(line) for line in table) <= 80, table
    assert [line.split()[0] for line in table[1:]] == [c["name"] for c in data["checks"]]
    wide = doctor(k8s_double, "-o", "wide").output.splitlines()
    assert wide[0].split()[:4] == ["CHECK", "STATUS", "WHAT", "IT"]
    for check in data["checks"]:
        assert any(line.startswith(check["name"] + " ") and check["title"] in line for line in wide), check
