"""describe and doctor in a real terminal (tmux) 80 and 160 columns wide: what a person sees is
exactly what a pipe gets (no cell wrapped or folded to fit the terminal, no line cropped); the
terminal itself wraps lines longer than its width, as it does for kubectl, and tmux joins them back."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests import builders as b

REPO = Path(__file__).resolve().parent.parent
TMUX = shutil.which("tmux")
pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed (scripts/bootstrap installs it "
                                                     "with apt-get where it can)")


@pytest.fixture
def wide_cluster(k8s_double):
    long_product = "NVIDIA H100 80GB HBM3 with a product name long enough to pass 80 columns"
    k8s_double.seed(*b.nvidia_device_classes(),
                    b.dra_node("dra-a", legacy={"nvidia.com/gpu": "8"}), b.gpu_slice("dra-a", 2, product=long_product),
                    b.dra_node("dra-b"), b.gpu_slice("dra-b", 2),
                    b.node("legacy-1", legacy={"nvidia.com/gpu": "4", "nvidia.com/gpumem": "40960"}),
                    b.pod("old-job", node_name="legacy-1", limits={"nvidia.com/gpu": 2}))
    return k8s_double


def run_in_terminal(columns: int, args: list[str], env: dict[str, str]) -> str:
    socket = f"kubectl-gpu-test-{uuid.uuid4().hex[:8]}"
    marker = f"END-{uuid.uuid4().hex[:8]}"
    command = " ".join([sys.executable, "-m", "kubectl_gpu.cli.main", *args])
    tmux = [TMUX, "-L", socket, "-f", os.devnull]
    subprocess.run([*tmux, "new-session", "-d", "-x", str(columns), "-y", "200", "-e", f"KUBECONFIG={env['KUBECONFIG']}",
                    "-e", f"PYTHONPATH={REPO}", "-e", "TERM=xterm-256color", "-e", "NO_COLOR=",
                    f"{command}; echo {marker}; sleep 60"], check=True, env=env)
    try:
        for _ in range(600):  # waiting for the command, not timing it
            screen = subprocess.run([*tmux, "capture-pane", "-p", "-J", "-S", "-"], capture_output=True,
                                    text=True, check=True).stdout
            if marker in screen:
                return screen[:screen.index(marker)]
            time.sleep(0.1)
        raise AssertionError(f"the command did not finish in the terminal:\n{screen}")
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


def _sections(lines: list[str]) -> tuple[list[str], list[str]]:
    """The lines before the findings (tables, headings) and the findings' lines."""
    start = next((i for i, line in enumerate(lines) if line.startswith("Findings:")), len(lines))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("  ")), len(lines))
    return lines[:start] + lines[end:], lines[start:end]


@pytest.mark.parametrize("columns", [80, 160])
@pytest.mark.parametrize("args", [["describe", "-o", "wide"], ["describe", "node", "dra-a"], ["doctor", "-o", "wide"]],
                         ids=" ".join)
def test_the_terminal_shows_the_tables_a_pipe_gets_and_wraps_only_the_findings(wide_cluster, columns, args):
    """Tables are never wrapped (the terminal wraps a line too long for it, as for kubectl); the
    findings' sentences are wrapped to the terminal's width, the lines after the first indented under
    it, words whole (kubectl_gpu/prose.py); piped, each finding is one line."""
    env = {**os.environ, "KUBECONFIG": wide_cluster.kubeconfig_path(), "PYTHONPATH": str(REPO)}
    env.pop("NO_COLOR", None)
    piped = subprocess.run([sys.executable, "-m", "kubectl_gpu.cli.main", *args], capture_output=True, text=True,
                           env=env, timeout=120).stdout.rstrip("\n").splitlines()
    screen = run_in_terminal(columns, args, env)
    shown = [line.rstrip() for line in screen.splitlines()]
    while shown and not shown[-1]:
        shown.pop()
    tables, findings = _sections(shown)
    piped_tables, piped_findings = _sections(piped)
    assert tables == piped_tables
    assert any(len(line) > 80 for line in tables) or columns == 160  # the 80-column case did wrap lines
    assert findings and " ".join(findings).split() == " ".join(piped_findings).split()  # the same words
    too_long = [line for line in findings if len(line) > columns and len(line.split()) > 1]
    assert not too_long  # only a word longer than the terminal (a command to copy) passes its edge
    assert any(len(line) > columns for line in piped_findings)  # so the terminal's lines were wrapped by us
    for line in findings[1:]:  # a finding, its continuation lines, its fix and the fix's continuation lines
        assert line.startswith(("  ERROR ", "  WARNING ", "  INFO ", "    fix: ", " " * 7)), line


def test_describe_by_default_fits_an_80_column_terminal(wide_cluster):
    """kubectl's default tables fit 80 columns; the long product name is -o wide's."""
    env = {**os.environ, "KUBECONFIG": wide_cluster.kubeconfig_path(), "PYTHONPATH": str(REPO)}
    env.pop("NO_COLOR", None)
    shown = [line.rstrip() for line in run_in_terminal(80, ["describe"], env).splitlines()]
    table = shown[:shown.index("")] if "" in shown else shown
    assert table[0].split()[:3] == ["NODE", "DRA", "DRA"] and len(table) == 4, shown
    assert max(len(line) for line in table) <= 80, table


def test_migrate_wraps_its_report_notes_to_the_terminal_and_not_into_a_pipe(tmp_path):
    manifest = tmp_path / "half.yaml"
    manifest.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: main\n"
                        "    image: cuda\n    resources:\n      limits:\n        aliyun.com/gpu-mem: 8\n")
    env = {**os.environ, "KUBECONFIG": str(tmp_path / "none"), "PYTHONPATH": str(REPO)}
    env.pop("NO_COLOR", None)
    piped = subprocess.run([sys.executable, "-m", "kubectl_gpu.cli.main", "migrate", str(manifest)],
                           capture_output=True, text=True, env=env, timeout=120).stderr.splitlines()
    (note,) = [line for line in piped if "warning:" in line]
    assert len(note) > 80  # one line on the pipe
    shown = [line.rstrip() for line in run_in_terminal(80, ["migrate", str(manifest), ">/dev/null"], env).splitlines()]
    start = next(i for i, line in enumerate(shown) if "warning:" in line)
    lines = [shown[start]] + [line for line in shown[start + 1:start + 4] if line.startswith(" " * 15)]
    assert len(lines) > 1 and all(len(line) <= 80 for line in lines), shown
    assert " ".join(lines).split() == note.split()


def test_plan_wraps_each_workloads_sentence_to_the_terminal_and_not_into_a_pipe(k8s_double):
    """The lines under plan's workload table say why a workload cannot move (a sentence, often
    longer than 80 columns): wrapped to the terminal like describe's findings, one line piped."""
    from tests import fleet_cluster as fc

    broken = fc.workload("Deployment", "broken", "default",
                         fc.template("broken", fc.container("150", resource="nvidia.com/vcuda-core")))
    k8s_double.seed(fc.node("legacy-1"), fc.node("dra-1", dra=True), fc.resource_slice("dra-1"), fc.device_class(),
                    broken)
    env = {**os.environ, "KUBECONFIG": k8s_double.kubeconfig_path(), "PYTHONPATH": str(REPO)}
    env.pop("NO_COLOR", None)
    piped = subprocess.run([sys.executable, "-m", "kubectl_gpu.cli.main", "plan"], capture_output=True, text=True,
                           env=env, timeout=120).stdout.splitlines()
    (reason,) = [line for line in piped if line.startswith("  default/deployment/broken: ")]
    assert len(reason) > 80  # one line on the pipe
    shown = [line.rstrip() for line in run_in_terminal(80, ["plan", "2>/dev/null"], env).splitlines()]
    start = next(i for i, line in enumerate(shown) if line.startswith("  default/deployment/broken: "))
    lines = [shown[start]] + [line for line in shown[start + 1:start + 4] if line.startswith(" " * 4)]
    assert len(lines) > 1 and all(len(line) <= 80 for line in lines), shown
    assert " ".join(lines).split() == reason.split()


def test_explain_wraps_its_verdicts_and_notes_to_the_terminal_and_not_into_a_pipe(tmp_path):
    """explain's sentences (a claim's verdict, notes, each request's reason) are wrapped to the
    terminal like describe's findings, the lines after the first indented under it; piped, one line."""
    from tests.corpus import claim_fixture

    args = ["explain", "-f", str(claim_fixture("gpu-test6-a100-index")), "--slices",
            str(REPO / "tests" / "data" / "slices" / "nvidia-a100-mig-v1beta1.yaml")]
    env = {**os.environ, "KUBECONFIG": str(tmp_path / "none"), "PYTHONPATH": str(REPO)}
    env.pop("NO_COLOR", None)
    piped = subprocess.run([sys.executable, "-m", "kubectl_gpu.cli.main", *args], capture_output=True, text=True,
                           env=env, timeout=120).stdout.splitlines()
    sentences = [line for line in piped if line.startswith(("  cannot be allocated", "  note: "))]
    assert len(sentences) == 2 and all(len(line) > 80 for line in sentences)
    shown = [line.rstrip() for line in run_in_terminal(80, args, env).splitlines()]
    for sentence in sentences:
        start = next(i for i, line in enumerate(shown) if line and sentence.startswith(line))
        end = next(i for i in range(start + 1, len(shown)) if not shown[i].startswith(" " * 4))
        lines = shown[start:end]
        assert len(lines) > 1, shown
        assert all(len(line) <= 80 for line in lines if len(line.split()) > 1), shown
        assert " ".join(lines).split() == sentence.split()
    tables = [line for line in shown if line.startswith(("REQUEST ", "gpu "))]
    assert tables == [line for line in piped if line.startswith(("REQUEST ", "gpu "))]  # tables are never wrapped


def test_the_fleet_commands_wrap_their_steps_to_the_terminal_and_not_into_a_pipe(k8s_double):
    """migrate --from-cluster, migrate nodes and rollback say what each step did in a sentence
    (what the operator must do next): wrapped to the terminal, one line piped."""
    import json

    from kubectl_gpu.dra.facts import NODE_WAVE_ANNOTATION
    from tests import fleet_cluster as fc

    switched = fc.node("legacy-1", dra=True)
    switched["metadata"]["annotations"] = {NODE_WAVE_ANNOTATION: json.dumps(
        {"labels": {"ack.node.gpu.schedule": None}, "unschedulable": False})}
    switched["spec"] = {"unschedulable": True}
    k8s_double.seed(switched)
    env = {**os.environ, "KUBECONFIG": k8s_double.kubeconfig_path(), "PYTHONPATH": str(REPO)}
    env.pop("NO_COLOR", None)
    args = ["rollback", "node/legacy-1"]
    piped = subprocess.run([sys.executable, "-m", "kubectl_gpu.cli.main", *args], capture_output=True, text=True,
                           env=env, timeout=120).stdout.splitlines()
    step = piped[0]
    assert step.startswith("node/legacy-1: would be uncordoned") and len(step) > 80
    shown = [line.rstrip() for line in run_in_terminal(80, args, env).splitlines()]
    end = next(i for i in range(1, len(shown)) if not shown[i].startswith(" " * 4))
    assert end > 1 and all(len(line) <= 80 for line in shown[:end]), shown
    assert " ".join(shown[:end]).split() == step.split()


def test_plan_wraps_what_it_read_of_the_cluster_on_stderr_to_the_terminal(k8s_double):
    """The cluster profile plan prints on stderr before its tables (a long sentence) is wrapped
    like its other sentences."""
    from tests import fleet_cluster as fc

    k8s_double.seed(fc.node("legacy-1"), fc.node("dra-1", dra=True), fc.resource_slice("dra-1"), fc.device_class())
    env = {**os.environ, "KUBECONFIG": k8s_double.kubeconfig_path(), "PYTHONPATH": str(REPO)}
    env.pop("NO_COLOR", None)
    piped = subprocess.run([sys.executable, "-m", "kubectl_gpu.cli.main", "plan"], capture_output=True, text=True,
                           env=env, timeout=120).stderr.splitlines()
    profile = piped[0]
    assert profile.startswith("cluster profile from cluster ") and len(profile) > 80
    shown = [line.rstrip() for line in run_in_terminal(80, ["plan", ">/dev/null"], env).splitlines()]
    end = next(i for i in range(1, len(shown)) if not shown[i].startswith(" " * 4))
    assert end > 1 and all(len(line) <= 80 for line in shown[:end]), shown
    assert " ".join(shown[:end]).split() == profile.split()
