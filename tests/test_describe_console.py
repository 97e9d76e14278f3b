"""describe's output for people (and doctor's), piped and on a terminal.  Where there is no colour
(piped, NO_COLOR, TERM=dumb) it is printed by kubectl_gpu/kubetable.py's PlainConsole, byte for
byte what rich's console prints, without loading rich (0.03 s of a describe's start-up, issue 29's
budget for a 1,000-node summary); in colour rich's console draws it, with kubectl's bold headers
and the findings' severities in colour.  On a terminal the findings are wrapped to its width,
colour or not (kubectl_gpu/prose.py)."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubectl_gpu.cli import console as console_module
from kubectl_gpu.cli.main import main
from tests import builders as b
from tests.test_cli_startup import loaded_client_modules

REPO = Path(__file__).resolve().parent.parent
ANSI = re.compile(r"\x1b\[[0-9;]*m")
LONG_PRODUCT = "NVIDIA H100 80GB HBM3 with a product name long enough to make a finding pass 80 columns"


@pytest.fixture
def every_kind(k8s_double):
    """DRA nodes, a MIG node, a shared GPU, a device-plugin node, a node counted twice (findings),
    and pods holding GPUs each way, one of them Pending on an unallocated claim (explain's verdicts)."""
    k8s_double.seed(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}}, *b.nvidia_device_classes(),
        b.dra_node("dra-a"), b.dra_node("dra-bad", legacy={"nvidia.com/gpu": "8"}), b.dra_node("mig-a"),
        b.dra_node("share-a"), b.node("legacy-1", legacy={"nvidia.com/gpu": "4"}), b.node("cpu-1"),
        b.gpu_slice("dra-a", 2, product=LONG_PRODUCT), b.gpu_slice("dra-bad"),
        b.gpu_slice("mig-a", devices=[b.gpu_device("mig-a", 0), *(b.mig_device("mig-a", 1, s) for s in range(3))]),
        b.gpu_slice("share-a", 2, shareable=True),
        b.template("one-gpu", "ml"),
        b.pod("train-0", "ml", node_name="dra-a", claims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
              claim_statuses={"gpu": "train-0-gpu"}),
        b.claim("train-0-gpu", "ml", allocated=[("gpu", "gpu-1")], node_name="dra-a", reserved_for=["train-0"],
                owner_pod="train-0"),
        b.claim("mig-0", "ml", allocated=[("gpu", "gpu-1-mig-1g-10gb-1")], node_name="mig-a"),
        b.claim("share-0", "ml", allocated=[("gpu", "gpu-0")], node_name="share-a", consumed={"memory": "4Gi"},
                share_id="a"),
        b.claim("pending", "ml"),
        b.pod("old-job", "ml", node_name="legacy-1", limits={"nvidia.com/gpu": 2}),
        b.pod("sneaky", "default", node_name="dra-bad", limits={"nvidia.com/gpu": 1}),
        b.pod("waiting", "ml", phase="Pending", claims=[{"name": "gpu", "resourceClaimName": "pending"}]),
    )
    return k8s_double


# The cluster summary first (issue 29's 1,000 nodes), then every other form describe prints for people.
SUMMARIES = [[], ["-o", "wide"], ["--no-headers"], ["--tree"], ["-n", "ml"]]
OTHERS = [["node"], ["node", "mig-a", "-o", "wide"], ["node", "dra-bad"], ["node", "--tree"], ["pod", "-A"],
          ["pod", "-A", "-o", "wide"], ["pod", "waiting", "-n", "ml"], ["pod", "train-0", "-n", "ml"],
          ["claim", "-A"], ["claim", "pending", "-n", "ml"], ["claim", "share-0", "-n", "ml", "-o", "wide"],
          ["node", "-l", "nosuch=label"]]
FORMS = SUMMARIES + OTHERS


def describe(double, *args: str) -> str:
    result = CliRunner().invoke(main, ["describe", *args, "--kubeconfig", double.kubeconfig_path()],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("args", FORMS, ids=" ".join)
def test_piped_describe_does_not_load_rich(every_kind, args):
    assert loaded_client_modules("describe", *args, "--kubeconfig", every_kind.kubeconfig_path(),
                                 packages=("rich",)) == []


@pytest.mark.parametrize("args", FORMS, ids=" ".join)
def test_piped_describe_prints_what_richs_console_prints(every_kind, args, monkeypatch):
    plain = describe(every_kind, *args)
    monkeypatch.setattr(console_module, "text_console", lambda stream=None: console_module.console(stream))
    assert describe(every_kind, *args) == plain
    assert plain.strip()


def on_terminal(double, args: list[str], **env: str) -> str:
    """describe's stdout on a terminal 80 columns wide (a pseudo-terminal), as bytes decoded."""
    main_fd, terminal = pty.openpty()
    environment = {**{k: v for k, v in os.environ.items() if k != "NO_COLOR"}, "PYTHONPATH": str(REPO),
                   "COLUMNS": "80", "TERM": "xterm-256color", **env}
    process = subprocess.Popen([sys.executable, "-m", "kubectl_gpu.cli.main", "describe", *args, "--kubeconfig",
                                double.kubeconfig_path()], stdout=terminal, stderr=subprocess.PIPE, env=environment)
    os.close(terminal)
    chunks = []
    while True:
        try:
            chunk = os.read(main_fd, 65536)
        except OSError:  # the terminal closed: the process is done writing
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main_fd)
    assert process.wait(timeout=120) == 0, process.stderr.read().decode()
    process.stderr.close()
    return b"".join(chunks).decode().replace("\r\n", "\n")


@pytest.mark.parametrize("args", [[], ["-o", "wide"], ["node", "dra-bad"]], ids=" ".join)
def test_on_a_terminal_colour_or_not_the_same_text_findings_wrapped_to_its_width(every_kind, args):
    coloured = on_terminal(every_kind, args)
    plain = on_terminal(every_kind, args, NO_COLOR="1")
    assert "\x1b[" in coloured and "\x1b[" not in plain
    assert ANSI.sub("", coloured) == plain
    findings = plain[plain.index("Findings:"):].splitlines()
    piped = describe(every_kind, *args)
    assert len(findings) > len(piped[piped.index("Findings:"):].splitlines())  # wrapped on the terminal only
    assert all(len(line) <= 80 for line in findings)


def test_in_colour_headers_are_bold_and_findings_show_their_severity(every_kind):
    coloured = on_terminal(every_kind, [])
    assert "\x1b[1mNODE\x1b[0m" in coloured  # kubectl's headers, bold
    assert "\x1b[1;31mdouble-counting\x1b[0m" in coloured  # a node's findings, bold red
    assert "\n  \x1b[1;31mERROR\x1b[0m node/dra-bad (double-counting): " in coloured  # a finding's severity
    assert "\x1b[1mFindings:\x1b[0m" in coloured


@pytest.mark.parametrize("args", [[], ["-o", "wide"]], ids=" ".join)
def test_doctor_prints_its_report_alike_without_rich_when_piped(every_kind, args, monkeypatch):
    """doctor's checks and findings are the same Lines and tables: piped, printed without rich."""
    def doctor() -> str:
        result = CliRunner().invoke(main, ["doctor", *args, "--kubeconfig", every_kind.kubeconfig_path()],
                                    catch_exceptions=False)
        assert result.exit_code == 1, result.output  # the node counted twice is a finding
        return result.output

    assert loaded_client_modules("doctor", *args, "--kubeconfig", every_kind.kubeconfig_path(),
                                 packages=("rich",)) == []
    plain = doctor()
    monkeypatch.setattr(console_module, "text_console", lambda stream=None: console_module.console(stream))
    assert doctor() == plain and "double-counting" in plain
