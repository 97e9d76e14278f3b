"""`kubectl gpu`: the command group.  kubectl finds this program as `kubectl-gpu` on PATH.

Each subcommand lives in its own module (kubectl_gpu/cli/<name>.py, exposing `command`)
and is imported only when it runs, so `kubectl gpu migrate` never pays for NVML or the
Kubernetes client.
"""

from __future__ import annotations

import _thread
import gc
import importlib
import os
import signal
import sys
import time
from typing import Any

import click

from kubectl_gpu.cli import exits
from kubectl_gpu.k8s.name_completion import complete_namespaces

# kubectl runs plugins by their file name (kubectl-gpu); people type `kubectl gpu`, so usage lines
# and examples say that (kubectl's own plugin docs: "kubectl foo" runs "kubectl-foo").
PLUGIN_NAME = "kubectl gpu"

SUBCOMMANDS: dict[str, str] = {
    "migrate": "Rewrite legacy GPU requests in manifests into DRA ResourceClaimTemplates.",
    "describe": "Show GPUs, who holds them, and why a pod is pending.",
    "explain": "Explain how each device request of a claim or pod matches the cluster's devices.",
    "doctor": "Check a cluster for double counting and migration problems.",
    "inventory": "Show this node's GPUs as the NVIDIA DRA driver will publish them.",
    "completion": "Print the shell completion script (bash, zsh, fish).",
    "plan": "Plan the move of a live cluster to DRA: workloads, and node waves with capacity checks.",
    "rollback": "Restore workloads migrated with --from-cluster --apply, or nodes a wave switched.",
    "version": "Print the version of kubectl-gpu.",
}


def _has_inputs(args: list[str]) -> bool:
    """Whether `migrate` ARGS name FILE|DIR|- inputs (positional arguments), not only options."""
    commands = [importlib.import_module(f"kubectl_gpu.cli.{m}").command for m in ("migrate", "migrate_cluster")]
    takes_value = {name for c in commands for p in c.params if isinstance(p, click.Option) and not p.is_flag
                   for name in p.opts}
    skip = False
    for index, arg in enumerate(args):
        if skip:
            skip = False
        elif arg == "--":
            return index + 1 < len(args)
        elif arg == "-" or not arg.startswith("-"):
            return True
        elif arg in ("-f", "--filename") or arg.startswith(("--filename=", "-f")):
            return index + 1 < len(args) or arg not in ("-f", "--filename")
        elif "=" not in arg and arg in takes_value:
            skip = True
    return False


def _keep_parsing_in_user_cache() -> None:
    """cel-python's parser tables and the selectors it parses, kept in the user's cache directory
    (kubectl_gpu/cli/cel_parser_cache.py); set up only when a selector needs that parser."""
    from kubectl_gpu.cel.parser_hook import set_parsed_store, set_parser_builder
    from kubectl_gpu.cli.cel_parser_cache import ParsedSelectorFiles, build_cel_parser

    set_parser_builder(build_cel_parser)
    set_parsed_store(ParsedSelectorFiles.in_user_cache())


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in SUBCOMMANDS:
            return None
        if name == "version":
            return _version_command
        module = importlib.import_module(f"kubectl_gpu.cli.{name}")
        if "kubectl_gpu.cel" in sys.modules:  # the command may compile CEL: keep what parsing makes
            from kubectl_gpu.cel.parser_hook import set_up_before_reference_parsing

            set_up_before_reference_parsing(_keep_parsing_in_user_cache)
        return module.command

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as error:  # `kubectl gpu --foo`: kubectl's one line, not click's usage block
            raise exits.UsageErrorLine.of(error) from None

    def main(self, args: Any = None, prog_name: str | None = None, **extra: Any) -> Any:
        # `kubectl gpu`, whether kubectl ran us or the user typed kubectl-gpu or python -m.
        prog_name = prog_name or PLUGIN_NAME
        extra.setdefault("complete_var", "_KUBECTL_GPU_COMPLETE")  # kubectl_gpu.cli.completion.COMPLETE_VAR
        return super().main(args, prog_name, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        # click turns Ctrl-C into "Aborted!" and exit 1, which scripts read as "findings"; a shell
        # reports an interrupted command as 128 + SIGINT.
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("", err=True)
            ctx.exit(exits.INTERRUPTED)
        except OSError as error:  # stdout gone or full: click would exit 1 (EPIPE) or show a traceback
            code = exits.output_failure(error)
            if code is None:
                exits.internal_error(error)
            ctx.exit(code)
        except click.UsageError as error:
            if error.ctx is None:  # click's parser names no context for a flag missing its value
                error.ctx = _context_of(ctx, *ctx.meta.get(_RESOLVED, (None, None, [])))
            raise exits.UsageErrorLine.of(error) from None
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as error:  # a bug: Python's exit 1 would read as "the answer is no"
            exits.internal_error(error)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        resolved = self._resolve(ctx, args)
        ctx.meta[_RESOLVED] = resolved
        return resolved

    def _resolve(self, ctx: click.Context, args: list[str]):
        if args and not args[0].startswith("-") and args[0] not in SUBCOMMANDS:
            import difflib

            close = difflib.get_close_matches(args[0], list(SUBCOMMANDS), n=1, cutoff=0.6)
            hint = f"\n\nDid you mean this?\n\t{close[0]}" if close else ""
            ctx.fail(f'unknown command "{args[0]}" for "{PLUGIN_NAME}"{hint}')
        # `migrate nodes` and `migrate --from-cluster` act on a live cluster: their own commands
        # (kubectl_gpu/cli/migrate_nodes.py, migrate_cluster.py), not migrate's file inputs.
        if args and args[0] == "migrate":
            if args[1:2] == ["nodes"]:
                return _with_global_flags(ctx, "migrate nodes",
                                          importlib.import_module("kubectl_gpu.cli.migrate_nodes").command, args[2:])
            if "--from-cluster" in args[1:] and not _has_inputs(args[1:]):
                # With FILE inputs, --from-cluster reads the cluster's profile for translating files.
                return _with_global_flags(ctx, "migrate",
                                          importlib.import_module("kubectl_gpu.cli.migrate_cluster").command, args[1:])
        return _with_global_flags(ctx, *super().resolve_command(ctx, args))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Help must not import every subcommand (and its dependencies) just to list them.
        with formatter.section("Commands"):
            formatter.write_dl([(name, SUBCOMMANDS[name]) for name in sorted(SUBCOMMANDS)])


_RESOLVED = "kubectl_gpu.resolved"  # ctx.meta: the command the words named (name, command, its args)


def _context_of(parent: click.Context, name: str | None, command: click.Command | None,
                args: list[str]) -> click.Context:
    """The context of the command the words name (`describe node` within `describe`), for the
    `See '... --help'` line of an error click raised before that context existed."""
    if command is None:
        return parent
    context = click.Context(command, info_name=name, parent=parent)
    if isinstance(command, click.Group):
        for index, word in enumerate(args):
            sub = None if word.startswith("-") else command.get_command(context, word)
            if sub is not None:
                return _context_of(context, sub.name, sub, args[index + 1:])
    return context


# kubectl's global flags, which kubectl hands to a plugin where the user typed them: `kubectl gpu
# -n serving describe` runs `kubectl-gpu -n serving describe`.  Given before the command, each is
# handed to the command as if typed after it (a value typed after it wins, as in kubectl), so it
# is checked and used in one place: the command's own option.  A command that reads no cluster
# (version, completion: none of these is its flag) takes them and has no use for them, as
# `kubectl --context prod version` does; one that reads a cluster refuses a flag it does not take.
GLOBAL_FLAGS = {"kubeconfig": "--kubeconfig", "context": "--context", "namespace": "-n/--namespace",
                "request_timeout": "--request-timeout"}


def _with_global_flags(ctx: click.Context, name: str | None, command: click.Command | None,
                       args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
    given = {key: value for key, value in ctx.params.items() if key in GLOBAL_FLAGS and value is not None}
    taken = {p.name for p in command.params} if command is not None else set()
    if given and command is not None and taken & GLOBAL_FLAGS.keys():
        for key in given:
            if key not in taken:
                raise click.UsageError(f"{GLOBAL_FLAGS[key]} is not a flag of {PLUGIN_NAME} {command.name}", ctx)
        ctx.default_map = {**(ctx.default_map or {}), name: given}
    return name, command, args


DISTRIBUTION = "kubectl-gpu"  # the package's name (pyproject.toml), whose version both print
VERSION_LINE = "kubectl-gpu %(version)s"  # `kubectl gpu version` and `kubectl gpu --version`

_EXAMPLES = """\b
Examples:
  kubectl gpu migrate deploy.yaml > deploy-dra.yaml
  kubectl gpu -n serving describe
  kubectl gpu --context prod doctor
  kubectl gpu migrate --help       # each command's own flags and examples
"""


@click.group(cls=LazyGroup, epilog=exits.epilog(_EXAMPLES), context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name=DISTRIBUTION, message=VERSION_LINE)
@click.option("--kubeconfig", default=None, metavar="PATH", help="Path to the kubeconfig file, for the command.")
@click.option("--context", default=None, metavar="NAME", help="The kubeconfig context, for the command.")
@click.option("-n", "--namespace", default=None, metavar="NAMESPACE", shell_complete=complete_namespaces,
              help="The namespace, for the command.")
@click.option("--request-timeout", default=None, metavar="DURATION",
              help="How long to wait for each answer of the API server, for the command.")
def main(**_global_flags: Any) -> None:
    """Move GPU workloads from device plugins to Kubernetes DRA, safely.

    kubectl's global flags may come before the command (kubectl gpu -n NS describe) or after it."""


@click.command("version", epilog=exits.epilog("""\b
Examples:
  kubectl gpu version
  kubectl gpu --version
"""), context_settings={"help_option_names": ["-h", "--help"]})
def _version_command() -> None:
    """Print the version of kubectl-gpu (as `kubectl gpu --version`)."""
    from importlib.metadata import version

    click.echo(VERSION_LINE % {"version": version(DISTRIBUTION)})


def run() -> None:
    """The `kubectl-gpu` executable.  On Ctrl-C, exit at once with 130 (128 + SIGINT, what shells
    report), wherever the signal lands.

    A KeyboardInterrupt alone cannot promise that: click turns one raised outside a command
    (parsing, closing its context) into "Aborted!" and exit 1; an `except` clause that imports to
    name its exceptions, or a half-finished lazy import, can replace it with an ImportError; one
    raised in a finalizer is printed and dropped.  Any exit other than ours then runs the normal
    interpreter shutdown, which joins the threads still waiting on a request (inspect/fetch.py's
    lists; up to --request-timeout).  So the handler below remembers the interrupt, whatever it becomes,
    and the process ends with os._exit(130), skipping those joins."""
    signal.signal(signal.SIGINT, _on_interrupt)
    _escape_what_stdout_cannot_encode()
    try:
        main()
    except BaseException as exc:
        if _interrupted or isinstance(exc, KeyboardInterrupt) or (
                isinstance(exc, SystemExit) and exc.code == exits.INTERRUPTED):
            _exit_now(exits.INTERRUPTED)
        if isinstance(exc, OSError) and (code := exits.output_failure(exc)) is not None:
            _exit_now(code)  # stdout failed outside a command (e.g. --help into /dev/full)
        if isinstance(exc, SystemExit):
            try:  # what is still buffered goes now, so a reader that left or a full disk is reported
                sys.stdout.flush()
            except OSError as error:
                if (code := exits.output_failure(error)) is not None:
                    _exit_now(code)
        if isinstance(exc, SystemExit) and exits.teardown_needless:
            _end_without_teardown(exc.code)
        raise
    finally:
        # The command is done and the interpreter exits next.  Its exit runs one last full pass of
        # the cycle collector over every object still alive (explain: 8,000 devices' results, 0.01-
        # 0.02 s) although reference counting frees them all; frozen, the pass leaves them alone.
        gc.freeze()


def _escape_what_stdout_cannot_encode() -> None:
    """Names come from files nobody validated: a lone surrogate (YAML's "\\ud800") or, on a
    non-UTF-8 locale, any character the encoding lacks would stop a table mid-write.  Write it as
    a backslash escape instead, as Python's stderr already does (YAML and JSON outputs escape such
    characters themselves, so they stay valid)."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None and getattr(sys.stdout, "errors", None) == "strict":
        reconfigure(errors="backslashreplace")


# Time the main thread has after Ctrl-C to run its `finally` blocks (a half-written temporary file
# is removed: kubectl_gpu/manifests/output.py) before the process ends anyway.
_GRACE_SECONDS = 1.0
_interrupted = False


def _on_interrupt(signum: int, frame: Any) -> None:
    global _interrupted
    if _interrupted:  # a second Ctrl-C: no more waiting
        os._exit(exits.INTERRUPTED)
    _interrupted = True
    # A bare thread (not threading.Thread, whose start takes locks the interrupted code may hold)
    # ends the process if the KeyboardInterrupt below is swallowed or the main thread is stuck.
    _thread.start_new_thread(_exit_after_grace, ())
    raise KeyboardInterrupt


def _exit_after_grace() -> None:
    time.sleep(_GRACE_SECONDS)
    while exits.undoing:  # a node wave being put back (exits.undoing_after_interrupt): let it finish
        time.sleep(0.05)
    os._exit(exits.INTERRUPTED)  # no flush: the main thread may hold the streams' locks


def _end_without_teardown(code: Any) -> None:
    """End the process with ``code`` as the interpreter would, minus freeing every object.

    What the interpreter's exit does besides freeing memory, done here in its order: wait for
    other threads (here: do nothing unless every other thread is a daemon), run the atexit handlers (logging's
    flush, weakref finalizers such as temporary directories' removal), flush stdout and stderr.
    Any doubt (a code that is not an int, since Python prints a string code; a flush that fails,
    which Python reports and turns into exit 120) returns, and the normal exit happens."""
    if not (code is None or code.__class__ is int):
        return
    threading = sys.modules.get("threading")
    if threading is not None and any(not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        return  # the interpreter would wait for it; daemon threads it ends without waiting
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            return
    os._exit(code or 0)


def _exit_now(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


if __name__ == "__main__":
    run()
