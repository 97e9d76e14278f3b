"""Fleet operations that must never leave a cluster half-done or silent (issue 29, first part).

Driven through the real CLI against the API double's mixed cluster (tests/fleet_cluster.py):
`rollback` takes the names kubectl takes, a named object that does not exist is the answer "no"
(exit 1), a node wave whose evictions are refused leaves its nodes as they were, `rollback
node/NAME` undoes a wave, and long waits say on stderr what they wait for, in the words
`kubectl drain` and `kubectl rollout status` use.
"""
from __future__ import annotations

from kubectl_gpu.dra.facts import NODE_WAVE_ANNOTATION
from kubectl_gpu.fleet.cluster_io import send
from tests.test_fleet_e2e import cluster  # noqa: F401  (the fixture)

DRA_LABEL = "ack.node.gpu.schedule"


def legacy_limit(cluster, kind_plural: str, name: str, namespace: str) -> str | None:
    obj = cluster.double.get(kind_plural, name, namespace)
    limits = obj["spec"]["template"]["spec"]["containers"][0].get("resources", {}).get("limits", {})
    return limits.get("nvidia.com/gpu")


# ----------------------------------------------------------------- rollback's names

def test_rollback_takes_kubectls_short_names(cluster):
    cluster.kubectl_gpu("migrate", "--from-cluster", "-A", "--apply", "--timeout", "5s")
    assert legacy_limit(cluster, "deployments", "infer", "serving") is None
    output = cluster.kubectl_gpu("rollback", "deploy/infer", "-n", "serving", "--apply", "--timeout", "5s")
    assert "Deployment/serving/infer: rolled back" in output
    assert legacy_limit(cluster, "deployments", "infer", "serving") == "1"
    # The singular and the plural, any case, and KIND.GROUP name it too; only that object moves.
    for ref in ("deployment/web", "Deployments/web", "deployments.apps/web"):
        cluster.kubectl_gpu("migrate", "--from-cluster", "-A", "--apply", "--timeout", "5s")
        output = cluster.kubectl_gpu("rollback", ref, "-n", "serving")
        assert output.splitlines()[0] == "Deployment/serving/web: would roll back (server dry run)", ref


def test_rollback_of_an_object_that_does_not_exist_is_the_answer_no(cluster):
    result = cluster.kubectl_gpu("rollback", "deployment/nosuch", "-n", "serving", expect=1)
    assert 'deployments.apps "nosuch" not found in namespace serving' in result


def test_rollback_of_a_bare_name_or_an_unknown_kind_is_a_usage_error(cluster):
    output = cluster.kubectl_gpu("rollback", "infer", "-n", "serving", expect=2)
    assert "KIND/NAME" in output and "deployment/infer" in output
    output = cluster.kubectl_gpu("rollback", "deploymnet/infer", "-n", "serving", expect=2)
    assert 'the server doesn\'t have a resource type "deploymnet"' in output


def test_rollback_of_a_named_object_with_nothing_recorded_says_which(cluster):
    output = cluster.kubectl_gpu("rollback", "deploy/infer", "-n", "serving")
    assert "Deployment/serving/infer: nothing to roll back" in output


# ----------------------------------------------------------------- node waves

def _switchable_node(cluster) -> str:
    """The node of a PyTorchJob worker (the double's scheduler puts both on one legacy node): its
    workers fit on the other legacy nodes, so its wave passes plan's checks."""
    return next(p["spec"]["nodeName"] for p in cluster.pods() if p["metadata"]["name"].startswith("bert-worker-"))


def test_a_wave_whose_evictions_are_refused_leaves_its_node_as_it_was(cluster):
    """The budget changed between the plan's check and the eviction (eviction.go answers 429): the
    wave stops; the node must not stay cordoned and marked as a DRA node while the device plugin
    still advertises its GPUs and the legacy pod still runs (doctor would see double counting)."""
    node = _switchable_node(cluster)
    before = cluster.double.get("nodes", node, namespace="")
    cluster.double.fail("create", "pods/eviction", status=429, times=None, reason="TooManyRequests",
                        message="Cannot evict pod as it would violate the pod's disruption budget.")
    output = cluster.kubectl_gpu("migrate", "nodes", node, "--apply", "--timeout", "1ms", expect=3)
    after = cluster.double.get("nodes", node, namespace="")
    assert not after["spec"].get("unschedulable")
    assert DRA_LABEL not in after["metadata"].get("labels", {})
    assert NODE_WAVE_ANNOTATION not in after["metadata"].get("annotations", {})
    assert after["metadata"]["labels"] == before["metadata"]["labels"]
    assert f"node/{node}: uncordoned" in output
    assert any(p["spec"].get("nodeName") == node for p in cluster.pods())  # the legacy pod still runs
    assert cluster.double_counting() == []


def test_a_node_cordoned_before_the_wave_stays_cordoned_when_the_wave_is_undone(cluster):
    node = _switchable_node(cluster)
    send(cluster.api, "PATCH", f"/api/v1/nodes/{node}", {"spec": {"unschedulable": True}},
         content_type="application/merge-patch+json")
    cluster.double.fail("create", "pods/eviction", status=429, times=None, reason="TooManyRequests",
                        message="Cannot evict pod as it would violate the pod's disruption budget.")
    cluster.kubectl_gpu("migrate", "nodes", node, "--apply", "--timeout", "1ms", expect=3)
    assert cluster.double.get("nodes", node, namespace="")["spec"]["unschedulable"] is True


def test_a_node_is_labelled_only_after_its_evictions_succeeded(cluster):
    node = _switchable_node(cluster)
    cluster.double.reset_requests()
    output = cluster.kubectl_gpu("migrate", "nodes", node, "--apply", "--timeout", "5s")
    assert "switched 1 node(s)" in output
    order = [r.resource_path for r in cluster.double.requests if r.verb in ("patch", "create")
             and r.resource_path in ("nodes", "pods/eviction")]
    assert order[0] == "nodes" and order[-1] == "nodes" and "pods/eviction" in order  # cordon ... label
    labels = cluster.double.get("nodes", node, namespace="")["metadata"]["labels"]
    assert labels[DRA_LABEL] == "disabled"


def test_rollback_node_undoes_a_wave(cluster):
    node = _switchable_node(cluster)
    before = cluster.double.get("nodes", node, namespace="")
    cluster.kubectl_gpu("migrate", "nodes", node, "--apply", "--timeout", "5s")
    dry = cluster.kubectl_gpu("rollback", f"node/{node}")
    assert f"node/{node}: would be uncordoned" in dry and "server dry run" in dry
    assert cluster.double.get("nodes", node, namespace="")["spec"]["unschedulable"] is True
    output = cluster.kubectl_gpu("rollback", f"no/{node}", "--apply")
    after = cluster.double.get("nodes", node, namespace="")
    assert f"node/{node}: uncordoned" in output
    assert not after["spec"].get("unschedulable")
    assert after["metadata"]["labels"] == before["metadata"]["labels"]
    assert NODE_WAVE_ANNOTATION not in after["metadata"].get("annotations", {})
    assert "device plugin" in output  # what the operator must turn back on


def test_rollback_node_restores_a_label_value_the_wave_replaced(cluster):
    node = _switchable_node(cluster)
    send(cluster.api, "PATCH", f"/api/v1/nodes/{node}", {"metadata": {"labels": {DRA_LABEL: "enabled"}}},
         content_type="application/merge-patch+json")
    cluster.kubectl_gpu("migrate", "nodes", node, "--apply", "--timeout", "5s")
    assert cluster.double.get("nodes", node, namespace="")["metadata"]["labels"][DRA_LABEL] == "disabled"
    cluster.kubectl_gpu("rollback", f"node/{node}", "--apply")
    assert cluster.double.get("nodes", node, namespace="")["metadata"]["labels"][DRA_LABEL] == "enabled"


def test_rollback_node_of_a_node_no_wave_touched_or_no_node(cluster):
    untouched = next(n for n in ("legacy-3", "legacy-4") if n != _switchable_node(cluster))
    output = cluster.kubectl_gpu("rollback", f"node/{untouched}", "--apply")
    assert f"node/{untouched}: nothing to roll back" in output
    output = cluster.kubectl_gpu("rollback", "node/nosuch", expect=1)
    assert 'nodes "nosuch" not found' in output


# ----------------------------------------------------------------- long waits speak

def test_refused_evictions_are_reported_as_kubectl_drain_reports_them(cluster):
    node = _switchable_node(cluster)
    worker = next(p["metadata"]["name"] for p in cluster.pods() if p["spec"].get("nodeName") == node)
    cluster.double.fail("create", "pods/eviction", status=429, times=1, reason="TooManyRequests",
                        message="Cannot evict pod as it would violate the pod's disruption budget.")
    result = cluster.runner.invoke(__import__("kubectl_gpu.cli.main", fromlist=["main"]).main,
                                   ["migrate", "nodes", node, "--apply", "--timeout", "30s"],
                                   env=cluster.double.kubectl_env(), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert f"evicting pod ml/{worker}" in result.stderr
    assert (f'error when evicting pods/"{worker}" -n "ml" (will retry after 2s): Cannot evict pod as it would '
            f"violate the pod's disruption budget.") in result.stderr


def test_a_rollout_wait_says_what_it_waits_for(cluster):
    from click.testing import CliRunner

    from kubectl_gpu.cli.main import main

    cluster.double.stall("deployments", "infer", "serving")
    result = CliRunner().invoke(main, ["migrate", "--from-cluster", "-n", "serving", "--apply", "--timeout", "2s"],
                                env=cluster.double.kubectl_env(), catch_exceptions=False)
    assert result.exit_code == 3
    assert 'Waiting for deployment "infer" rollout to finish:' in result.stderr


def test_reading_the_cluster_shows_the_consoles_progress(cluster, monkeypatch):
    """Reading a large cluster takes a while: plan, migrate --from-cluster and migrate nodes show
    the console's progress (a spinner on a terminal's stderr, nothing when piped)."""
    from contextlib import nullcontext

    import kubectl_gpu.cli.console as console

    shown: list[str] = []
    monkeypatch.setattr(console, "progress", lambda message, stream=None: shown.append(message) or nullcontext())
    for args in (["plan", "-o", "json"], ["migrate", "--from-cluster", "-A"], ["migrate", "nodes", "legacy-4"]):
        shown.clear()
        cluster.kubectl_gpu(*args, expect=None)
        assert shown and shown[0].startswith("reading the cluster at "), args


def test_a_rollback_whose_rollout_stalls_does_not_advise_rolling_back(cluster):
    """migrate's stalled rollout can be undone by `kubectl gpu rollback`; rollback's own cannot:
    it names what kubectl follows a rollout with instead."""
    from click.testing import CliRunner

    from kubectl_gpu.cli.main import main

    cluster.kubectl_gpu("migrate", "--from-cluster", "-n", "serving", "--apply", "--timeout", "5s")
    cluster.double.stall("deployments", "infer", "serving")
    result = CliRunner().invoke(main, ["rollback", "deploy/infer", "-n", "serving", "--apply", "--timeout", "2s"],
                                env=cluster.double.kubectl_env(), catch_exceptions=False)
    assert result.exit_code == 3
    assert "did not become ready within 2s" in result.stderr
    assert "kubectl gpu rollback can restore it" not in result.stderr
    assert "kubectl rollout status deployment/infer -n serving" in result.stderr


def test_a_wave_the_api_will_not_undo_prints_the_commands_that_undo_it(cluster, monkeypatch):
    """Evictions refused, then the write that puts the node back refused too: the exact kubectl
    commands that undo the wave, on stderr (the node stays cordoned and recorded meanwhile)."""
    import kubectl_gpu.fleet.execute as execute

    node = _switchable_node(cluster)
    cluster.double.fail("create", "pods/eviction", status=429, times=None, reason="TooManyRequests",
                        message="Cannot evict pod as it would violate the pod's disruption budget.")

    def refused(*_args, **_kwargs):
        raise execute.StepFailed(f"node/{node}: the API server refused the write")

    monkeypatch.setattr(execute, "undo_wave", refused)
    from click.testing import CliRunner

    from kubectl_gpu.cli.main import main

    result = CliRunner().invoke(main, ["migrate", "nodes", node, "--apply", "--timeout", "1ms"],
                                env=cluster.double.kubectl_env(), catch_exceptions=False)
    assert result.exit_code == 3
    assert f"node/{node}: could not be put back" in result.stderr
    assert f"  kubectl uncordon {node}\n" in result.stderr
    assert f"  kubectl annotate node {node} {NODE_WAVE_ANNOTATION}-\n" in result.stderr


def test_an_interrupted_wave_puts_its_nodes_back(cluster, monkeypatch):
    """Ctrl-C while refused evictions are retried (up to --timeout, 5m by default): the nodes the
    wave cordoned are put back before the command ends as interrupted (130)."""
    import kubectl_gpu.cli.migrate_nodes as migrate_nodes

    node = _switchable_node(cluster)

    def interrupted(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(migrate_nodes, "_evict_all", interrupted)
    from click.testing import CliRunner

    from kubectl_gpu.cli.main import main

    result = CliRunner().invoke(main, ["migrate", "nodes", node, "--apply"], env=cluster.double.kubectl_env(),
                                catch_exceptions=False)
    assert result.exit_code == 130
    after = cluster.double.get("nodes", node, namespace="")
    assert not after["spec"].get("unschedulable")
    assert NODE_WAVE_ANNOTATION not in after["metadata"].get("annotations", {})
    assert f"node/{node}: uncordoned (the wave stopped: the node is as it was)" in result.output


def test_ctrl_c_during_refused_evictions_puts_the_node_back_in_the_executable(cluster):
    """The executable ends on Ctrl-C within a grace second (kubectl_gpu/cli/main.py run); putting a
    wave's nodes back is waited for (exits.undoing_after_interrupt), then it exits 130."""
    import signal
    import subprocess
    import sys
    import time

    node = _switchable_node(cluster)
    cluster.double.fail("create", "pods/eviction", status=429, times=None, reason="TooManyRequests",
                        message="Cannot evict pod as it would violate the pod's disruption budget.")
    process = subprocess.Popen([sys.executable, "-m", "kubectl_gpu.cli.main", "migrate", "nodes", node, "--apply",
                                "--timeout", "5m"], env=cluster.double.kubectl_env(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    for _ in range(600):  # waiting for the retries to begin, not timing them
        if cluster.double.count("create", "pods/eviction") >= 1:
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    after = cluster.double.get("nodes", node, namespace="")
    assert not after["spec"].get("unschedulable") and NODE_WAVE_ANNOTATION not in after["metadata"].get(
        "annotations", {}), (out, err)
    assert f"node/{node}: uncordoned (the wave stopped: the node is as it was)" in out
