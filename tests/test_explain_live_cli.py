"""`kubectl gpu explain` against a live cluster (the API double): a pod, a claim by name
(claim/NAME, as kubectl's TYPE/NAME), every pod with claims (-A, -l), and -f files explained
against the cluster's own ResourceSlices when --slices is not given."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from tests import builders as b


@pytest.fixture
def cluster(k8s_double):
    k8s_double.seed(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
        *b.nvidia_device_classes(), b.dra_node("dra-a"), b.gpu_slice("dra-a", 2),
        b.claim("held", "ml", allocated=[("gpu", "gpu-0")], node_name="dra-a", reserved_for=["a"]),
        b.claim("waiting", "ml"),
        b.template("one-gpu", "default"),
        b.pod("a", "ml", node_name="dra-a", claims=[{"name": "gpu", "resourceClaimName": "held"}],
              labels={"team": "x"}),
        b.pod("b", "ml", phase="Pending", claims=[{"name": "gpu", "resourceClaimName": "waiting"}],
              labels={"team": "x"}),
        b.pod("c", "default", phase="Pending", claims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]),
    )
    return k8s_double


def explain(double, *args: str):
    return CliRunner().invoke(main, ["explain", *args, "--kubeconfig", double.kubeconfig_path(namespace="ml"),
                                     "-o", "json"], catch_exceptions=False)


def names(result) -> list[str]:
    assert result.exit_code in (0, 1), result.output
    return [f"{i['namespace']}/{i['name']}" for i in json.loads(result.stdout)["items"]]


def test_a_claim_by_name(cluster):
    result = explain(cluster, "claim/waiting")
    assert names(result) == ["ml/waiting"] and json.loads(result.stdout)["allocatable"] is True
    assert explain(cluster, "resourceclaim/nope").exit_code == 1  # not found
    assert explain(cluster, "deployment/x").exit_code == 2


def test_every_pod_with_claims_in_the_namespace_by_label_or_everywhere(cluster):
    assert names(explain(cluster, "-l", "team=x")) == ["ml/held", "ml/waiting"]
    assert sorted(names(explain(cluster, "-A"))) == ["default/one-gpu", "ml/held", "ml/waiting"]
    nothing = explain(cluster, "-l", "team=none")
    assert nothing.exit_code == 1 and "has DRA resource claims to explain" in nothing.output


def test_files_are_explained_against_the_live_slices_without_slices_flag(cluster, tmp_path):
    claim = tmp_path / "claim.yaml"
    claim.write_text(yaml.safe_dump(b.claim("two", "ml", requests=[b.exact_request(count=2)])))
    result = explain(cluster, "-f", str(claim))
    data = json.loads(result.stdout)
    assert data["devices"] == 2 and data["resourceSlices"] == 1
    # gpu-0 is held by ml/held (read from the cluster's claims): two GPUs are not free.
    assert result.exit_code == 1 and data["allocatable"] is False


def test_each_reason_is_printed_once(k8s_double):
    k8s_double.seed(*b.nvidia_device_classes(), b.dra_node("dra-a"), b.gpu_slice("dra-a", 2),
                    b.claim("two", requests=[b.exact_request(selectors=["device.attributes['gpu.nvidia.com']"
                                                                        ".productName == 'X'"])]),
                    b.pod("p", phase="Pending", claims=[{"name": "gpu", "resourceClaimName": "two"}]))
    reason = "selector #0 (device.attributes['gpu.nvidia.com'].productName == 'X') rejects 2 of 2"
    for args in (["explain", "claim/two"], ["describe", "pod", "p"]):
        result = CliRunner().invoke(main, [*args, "--kubeconfig", k8s_double.kubeconfig_path()])
        assert result.stdout.count(reason) == 1, result.stdout


def test_a_pending_legacy_pod_gets_a_next_step(k8s_double):
    k8s_double.seed(b.pod("old", phase="Pending", limits={"nvidia.com/gpu": 1}))
    result = CliRunner().invoke(main, ["describe", "pod", "old", "--kubeconfig", k8s_double.kubeconfig_path()])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    # No node at all: nothing offers the resource, and no DRA node to blame (tests/test_describe_pending_legacy.py).
    assert "Next step: no node offers nvidia.com/gpu" in text and "DRA" not in text.split("Next step:")[1]


def test_best_node_is_never_a_node_doctor_flags_for_double_counting(k8s_double, tmp_path):
    """dra-bad has the most free GPUs but also advertises nvidia.com/gpu through the device plugin:
    a GPU there can be handed out twice, so explain suggests the clean node."""
    k8s_double.seed(*b.nvidia_device_classes(),
                    b.dra_node("dra-bad", legacy={"nvidia.com/gpu": "4"}), b.gpu_slice("dra-bad", 4),
                    b.dra_node("dra-ok"), b.gpu_slice("dra-ok", 1),
                    b.claim("one"), b.pod("p", phase="Pending", claims=[{"name": "gpu", "resourceClaimName": "one"}]))
    claim = tmp_path / "claim.yaml"
    claim.write_text(yaml.safe_dump(b.claim("file-claim")))
    for args in (["claim/one"], ["p"], ["-f", str(claim)]):
        result = CliRunner().invoke(main, ["explain", *args, "-o", "json", "--kubeconfig", k8s_double.kubeconfig_path()])
        assert result.exit_code == 0, result.output
        (item,) = json.loads(result.stdout)["items"]
        assert item["node"] == "dra-ok", args
        assert item["requests"][0]["alternatives"][0]["bestNode"] == "dra-ok", args


def test_live_explain_builds_each_slices_devices_once(cluster, monkeypatch):
    """The cluster profile reads the slices (their devices prove gates); explain takes them from it
    rather than building them a second time, and answers the same."""
    import kubectl_gpu.cluster.profile as profile_module
    import kubectl_gpu.explain.inputs as inputs_module

    before = {target: explain(cluster, target).stdout for target in ("b", "claim/waiting", "-A")}
    built: list[str] = []
    real = profile_module.read_slice

    def counting(slice_obj, *args, **kwargs):
        built.append(slice_obj["metadata"]["name"])
        return real(slice_obj, *args, **kwargs)

    monkeypatch.setattr(profile_module, "read_slice", counting)
    monkeypatch.setattr(inputs_module, "read_slice", counting)
    for target, answer in before.items():
        built.clear()
        assert explain(cluster, target).stdout == answer
        assert len(built) == len(set(built)) == 1, (target, built)  # one slice in the cluster, built once
