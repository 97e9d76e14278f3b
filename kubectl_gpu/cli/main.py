"""`kubectl gpu`: the command group.  kubectl finds this program as `kubectl-gpu` on PATH.

Each subcommand lives in its own module (kubectl_gpu/cli/<name>.py, exposing `command`)
and is imported only when it runs, so `kubectl gpu migrate` never pays for NVML or the
Kubernetes client.
"""

from __future__ import annotations

import importlib

import click

SUBCOMMANDS: dict[str, str] = {
    "migrate": "Rewrite legacy GPU requests in manifests into DRA ResourceClaimTemplates.",
    "describe": "Show GPUs, who holds them, and why a pod is pending.",
    "explain": "Explain how each device request of a claim or pod matches the cluster's devices.",
    "doctor": "Check a cluster for double counting and migration problems.",
    "inventory": "Show this node's GPUs as the NVIDIA DRA driver will publish them.",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in SUBCOMMANDS:
            return None
        module = importlib.import_module(f"kubectl_gpu.cli.{name}")
        return module.command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Help must not import every subcommand (and its dependencies) just to list them.
        with formatter.section("Commands"):
            formatter.write_dl([(name, SUBCOMMANDS[name]) for name in sorted(SUBCOMMANDS)])


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kubectl-gpu")
def main() -> None:
    """Move GPU workloads from device plugins to Kubernetes DRA, safely."""


if __name__ == "__main__":
    main()
