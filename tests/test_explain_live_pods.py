"""Live `explain` judges claims as the scheduler allocates them (issue 24): `-A` / `-l` allocate
each pod's claims together on one node (k8s.io/dynamic-resource-allocation structured: one
Allocate call per pod and node, every claim of the pod in it), and `--node NAME` reads that
Node from the cluster, whose labels decide which node selectors of network-attached slices
reach it (ResourceSlice spec.nodeSelector; the allocator's node selection)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from tests import builders as b


def explain(double, *args: str):
    result = CliRunner().invoke(main, ["explain", *args, "--kubeconfig", double.kubeconfig_path(namespace="ml"),
                                       "-o", "json"], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, {f"{i['namespace']}/{i['name']}": i for i in json.loads(result.stdout)["items"]}


def test_every_pod_with_claims_has_its_claims_judged_together(k8s_double):
    """One GPU: each of pod two-claims' claims fits alone, not both at once; pod lone's claim fits."""
    k8s_double.seed(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
        *b.nvidia_device_classes(), b.dra_node("dra-a"), b.gpu_slice("dra-a", 1),
        b.claim("first", "ml"), b.claim("second", "ml"), b.claim("alone", "ml"),
        b.pod("two-claims", "ml", phase="Pending", labels={"team": "x"},
              claims=[{"name": "a", "resourceClaimName": "first"}, {"name": "b", "resourceClaimName": "second"}]),
        b.pod("lone", "ml", phase="Pending", labels={"team": "x"},
              claims=[{"name": "gpu", "resourceClaimName": "alone"}]),
    )
    for args in (["-A"], ["-l", "team=x"]):
        code, items = explain(k8s_double, *args)
        assert code == 1, args
        assert not items["ml/first"]["allocatable"] and not items["ml/second"]["allocatable"]
        assert "together with the pod's other claims" in items["ml/first"]["verdict"]
        assert items["ml/alone"]["allocatable"], items["ml/alone"]["verdict"]


def network_attached_slice() -> dict:
    """Devices reachable from the nodes labelled gpu-pool=a (no nodeName: spec.nodeSelector)."""
    slice_obj = b.gpu_slice("fabric", 1)
    spec = slice_obj["spec"]
    del spec["nodeName"]
    spec["nodeSelector"] = {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "gpu-pool", "operator": "In", "values": ["a"]}]}]}
    return slice_obj


def test_node_reads_the_nodes_labels_from_the_cluster(k8s_double):
    k8s_double.seed(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
        *b.nvidia_device_classes(), b.node("in-pool", labels={"gpu-pool": "a"}), b.node("elsewhere"),
        network_attached_slice(), b.claim("waiting", "ml"),
    )
    code, items = explain(k8s_double, "claim/waiting", "--node", "in-pool")
    assert code == 0 and items["ml/waiting"]["allocatable"], items
    code, items = explain(k8s_double, "claim/waiting", "--node", "elsewhere")
    assert code == 1 and not items["ml/waiting"]["allocatable"], items


def device_taint_rule(name: str, api_version: str = "resource.k8s.io/v1beta2", **selector: str) -> dict:
    """A DeviceTaintRule (KEP-5055; k8s.io/api resource/v1beta2 DeviceTaintRuleSpec: a
    deviceSelector by driver, pool and device, and one taint)."""
    return {"apiVersion": api_version, "kind": "DeviceTaintRule", "metadata": {"name": name},
            "spec": {"deviceSelector": selector, "taint": {"key": "maintenance", "effect": "NoSchedule"}}}


def test_device_taint_rules_are_read_from_the_cluster(k8s_double):
    """The rule taints gpu-0 of dra-a; with DRADeviceTaintRules on (1.37) the one-GPU claim gets the
    other GPU, and a two-GPU claim gets none."""
    k8s_double.seed(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
        *b.nvidia_device_classes(), b.dra_node("dra-a"), b.gpu_slice("dra-a", 2),
        b.claim("one", "ml"), b.claim("two", "ml", requests=[b.exact_request(count=2)]),
        device_taint_rule("gpu-0-maintenance", driver=b.NVIDIA, pool="dra-a", device="gpu-0"),
    )
    code, items = explain(k8s_double, "claim/one", "--kubernetes-version", "1.37")
    assert code == 0 and [d["device"] for d in items["ml/one"]["allocation"]] == ["gpu-1"], items
    code, items = explain(k8s_double, "claim/two", "--kubernetes-version", "1.37")
    assert code == 1, items
    # Before 1.37 DRADeviceTaintRules is off by default: the scheduler ignores the rule.
    code, items = explain(k8s_double, "claim/two", "--kubernetes-version", "1.36")
    assert code == 0, items


def test_device_taint_rules_are_read_from_files(tmp_path):
    import yaml

    files = tmp_path / "objects.yaml"
    files.write_text(yaml.safe_dump_all([
        b.claim("two", "ml", requests=[b.exact_request(count=2)]), b.gpu_slice("dra-a", 2),
        device_taint_rule("whole-pool", "resource.k8s.io/v1alpha3", pool="dra-a")]))
    result = CliRunner().invoke(main, ["explain", "-f", str(files), "--kubernetes-version", "1.37", "-o", "json"])
    assert result.exit_code == 1, result.output
    assert "ignored" not in result.output


def test_a_rule_without_a_device_selector_taints_nothing_and_alpha_selectors_are_refused_with_what_to_change():
    from kubectl_gpu.explain.taint_rules import InvalidTaintRule, read_taint_rule

    rule = device_taint_rule("none")
    del rule["spec"]["deviceSelector"]
    assert read_taint_rule(rule) is None  # "Without a selector, no devices are matched."
    everything = read_taint_rule(device_taint_rule("all"))
    assert everything is not None and (everything.driver, everything.pool, everything.device) == ("", "", "")
    old = device_taint_rule("by-class", "resource.k8s.io/v1alpha3", deviceClassName="gpu.nvidia.com")
    with pytest.raises(InvalidTaintRule, match="deviceClassName .*driver, pool and device"):
        read_taint_rule(old)  # a 1.33-1.34 class selector is not taken as selecting every device


def test_explain_help_says_which_allocator_features_each_release_turns_on():
    """The table comes from dra/gates.py's defaults (one home): device taints and partitionable
    devices from 1.36, DeviceTaintRules from 1.37, list-type attributes only with their gate."""
    from kubectl_gpu.allocator.features import releases_text

    text = CliRunner().invoke(main, ["explain", "--help"]).output
    for line in releases_text(76).splitlines():
        assert line in text
    assert "1.37+      DeviceTaintRules" in text and "gate only  list-type attributes" in text
    assert "1.36+      partitionable devices" in text
