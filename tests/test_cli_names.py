"""The plugin answers a mistyped command and `version` as kubectl does."""
from __future__ import annotations

from click.testing import CliRunner

from kubectl_gpu.cli.main import main


def test_a_mistyped_command_gets_kubectls_did_you_mean():
    result = CliRunner().invoke(main, ["migarte", "deploy.yaml"])
    assert result.exit_code == 2
    assert 'unknown command "migarte" for "kubectl gpu"' in result.output
    assert "Did you mean this?\n\tmigrate" in result.output


def test_a_command_nothing_resembles_gets_no_suggestion():
    result = CliRunner().invoke(main, ["frobnicate"])
    assert result.exit_code == 2 and "Did you mean" not in result.output


def test_version_is_a_command_as_in_kubectl():
    from importlib.metadata import version

    result = CliRunner().invoke(main, ["version"])
    assert result.exit_code == 0 and result.output == f"kubectl-gpu {version('kubectl-gpu')}\n"
