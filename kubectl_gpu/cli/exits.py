"""One exit-code table for every `kubectl gpu` command, and the one place that turns the errors a
person can fix into `error: ...` on stderr and that code.

kubectl itself exits 1 for any error; scripts around GPU migrations need to tell "the cluster said
no" from "the cluster was not there", so the codes below keep kubectl's 0/1 meaning (1: the answer
is no, like `kubectl diff` with differences) and give usage, reachability and RBAC their own.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Callable, Iterator, NoReturn

import click

OK = 0
FINDINGS = 1  # the answer is no: problems found, not allocatable, differences, object not found
USAGE = 2  # click's own code for usage errors
NOT_MIGRATED = 3  # some input could not be processed (migrated, read by inventory); the rest was
UNREACHABLE = 4
FORBIDDEN = 5
NO_NVML_LIBRARY, NO_GPU, NVML_FAILED = 6, 7, 8  # inventory's own: kubectl_gpu.inventory.failures.ExitCode
LEGACY_LEFT = 9  # migrate --check/--diff: GPU requests are left that migrate cannot rewrite
INTERRUPTED = 130  # 128 + SIGINT, what shells report for Ctrl-C
BROKEN_PIPE = 141  # 128 + SIGPIPE: the reader of stdout went away (`| head`); kubectl dies of SIGPIPE
WRITE_FAILED = 74  # sysexits.h EX_IOERR: stdout could not be written (a full disk, /dev/full, an I/O error)
INTERNAL_ERROR = 70  # sysexits.h EX_SOFTWARE: a bug in kubectl-gpu, never an answer

# Set by a command just before its final sys.exit when everything it produced went to stdout and
# stderr and every file it opened is closed: the executable (kubectl_gpu/cli/main.py, run) may then
# end the process without freeing its objects one by one (see skip_teardown).
teardown_needless = False


def skip_teardown() -> None:
    """Say that this command's end leaves the interpreter's teardown nothing to do but free memory.

    After explain over 8,000 devices, freeing the parsed slices, the devices and their results
    one by one is ~60 M instructions (callgrind: 2,243 M -> 2,183 M for the whole run, ~0.015 s) of
    work the kernel does at once when the process ends.  Only the executable acts on it (run(), after flushing stdout and stderr and
    running the atexit handlers, as the interpreter's own exit does); in-process callers (click's
    CliRunner, the tests) never see a difference."""
    global teardown_needless
    teardown_needless = True

# Set while a command puts back what it changed on a cluster after Ctrl-C (migrate nodes uncordons
# the wave's nodes): the executable's grace after an interrupt (kubectl_gpu/cli/main.py) waits for
# it instead of ending the process with the nodes half-switched; a second Ctrl-C still ends it.
undoing = False


@contextmanager
def undoing_after_interrupt() -> Iterator[None]:
    global undoing
    undoing = True
    try:
        yield
    finally:
        undoing = False


TABLE = f"""\b
Exit codes (the same for every kubectl gpu command):
  0    success, nothing to report
  1    the answer is no: doctor found problems, explain found a claim that
       cannot be allocated, migrate --check/--diff found changes, plan or
       migrate nodes refused a wave, or the named object does not exist
  2    usage: a bad flag or argument, an unreadable input file or kubeconfig
  3    some input could not be processed, the rest was: migrate could not
       migrate a document, inventory could not read a GPU, migrate
       --from-cluster or rollback stopped at a refused write or an unready
       rollout (stderr says which)
  4    the API server could not be reached, did not answer in time
       (--request-timeout) or failed the request
  5    forbidden: the credentials were rejected, or RBAC refuses a read the
       command cannot do without
  {NO_NVML_LIBRARY}    inventory: no NVIDIA driver library (libnvidia-ml.so.1) here
  {NO_GPU}    inventory: no usable GPU (driver not loaded, no permission, 0 GPUs)
  {NVML_FAILED}    inventory: NVML failed before it could list the GPUs
  {LEGACY_LEFT}    migrate --check/--diff: legacy GPU requests are left that migrate
       cannot rewrite (a container spec outside a pod template, a request
       inside a string, an operator's GPU count field); the report names
       each place and what to do there
  {INTERNAL_ERROR}   internal error: a bug in kubectl-gpu, not an answer (the traceback
       and one error line on stderr; sysexits.h EX_SOFTWARE)
  {WRITE_FAILED}   the output could not be written (a full disk, an I/O error):
       one error line on stderr (sysexits.h EX_IOERR)
  130  interrupted (Ctrl-C)
  141  stdout was closed by its reader (`| head`): stopped quietly, as
       kubectl does"""


def epilog(extra: str = "") -> str:
    """The exit-code table, after a command's own notes and examples."""
    return f"{extra.rstrip()}\n\n{TABLE}" if extra else TABLE


def code_for(exc: BaseException) -> int:
    """The exit code of an error from the cluster side (kubeconfig, API, lookups)."""
    from kubectl_gpu.k8s import ApiError, KubeconfigError

    if isinstance(exc, KubeconfigError):
        return USAGE
    if isinstance(exc, ApiError):
        if exc.unreachable:
            return UNREACHABLE
        if exc.forbidden:
            return FORBIDDEN
        return FINDINGS if exc.not_found else UNREACHABLE
    return FINDINGS


class ErrorLine(click.ClickException):
    """An error a person can fix, shown as kubectl shows one: `error: MESSAGE` on stderr."""

    def show(self, file=None) -> None:
        click.echo(f"error: {self.format_message()}", file=file, err=True)


class UsageErrorLine(click.UsageError):
    """A usage error in kubectl's two lines, not click's usage block:

        error: unknown flag: --foo
        See 'kubectl gpu migrate --help' for usage.

    (cobra's and kubectl's words: `unknown flag: --foo`, `unknown shorthand flag: 'x' in -x`;
    the code stays this table's USAGE, where kubectl exits 1 for every error.)"""

    exit_code = USAGE

    def __init__(self, error: click.UsageError) -> None:
        super().__init__(error.message, error.ctx)
        self.error = error

    def format_message(self) -> str:
        error = self.error
        if isinstance(error, click.NoSuchOption):
            name = error.option_name
            text = (f"unknown flag: {name}" if name.startswith("--")
                    else f"unknown shorthand flag: '{name[1:2]}' in {name}")
            if error.possibilities:
                text += f" (did you mean {' or '.join(sorted(error.possibilities))}?)"
            return text
        text = error.format_message().removesuffix(".")
        # click lists a choice's values one a line ("Choose from:\n\tbash,\n\tzsh"): kubectl's one line.
        head, sep, choices = text.partition(". Choose from:")
        if sep:
            text = f"{head} (one of {' '.join(choices.split()).rstrip('.,')})"
        # click's sentences start with a capital ("Missing argument ..."); kubectl's errors do not.
        return text[:1].lower() + text[1:] if text[1:2].islower() else text

    def show(self, file=None) -> None:
        message = self.format_message()
        click.echo(f"error: {message}" + ("\n" if "\n" in message else ""), file=file, err=True)
        click.echo(f"See '{_command_line(self.ctx)} --help' for usage.", file=file, err=True)

    @classmethod
    def of(cls, error: click.UsageError) -> "UsageErrorLine":
        return error if isinstance(error, cls) else cls(error)


def _command_line(ctx: click.Context | None) -> str:
    """The words that run the command: `kubectl gpu migrate nodes`, `kubectl gpu migrate --from-cluster`
    (commands reached by a word or flag name themselves after it)."""
    if ctx is not None and ctx.parent is not None and ctx.command.name:
        return f"{_command_line(ctx.parent)} {ctx.command.name}"
    from kubectl_gpu.cli.main import PLUGIN_NAME  # what people type, however the program was started

    return PLUGIN_NAME


def bad_input(exc: BaseException) -> click.ClickException:
    """`error: <message>` and exit 2 (usage), for input a person must fix
    (kubectl_gpu.input_error.InputError)."""
    error = ErrorLine(str(exc))
    error.exit_code = USAGE
    return error


def internal_error(exc: BaseException) -> NoReturn:
    """A bug: the traceback for the report, one `error:` line, and a code no answer uses (exit 1
    would read as "the answer is no")."""
    import traceback

    traceback.print_exception(exc, file=sys.stderr)
    click.echo(f"error: internal error ({type(exc).__name__}: {exc}); this is a bug in kubectl-gpu, "
               "please report it with the command that caused it", err=True)
    sys.exit(INTERNAL_ERROR)


def fail(exc: BaseException) -> NoReturn:
    click.echo(f"error: {exc}", err=True)
    sys.exit(code_for(exc))


def cluster_errors() -> tuple[type[BaseException], ...]:
    from kubectl_gpu.inspect.fetch import NothingToExplain
    from kubectl_gpu.k8s import ApiError, KubeconfigError

    return (KubeconfigError, ApiError, NothingToExplain)  # ApiError holds NotFound


def run_reporting_errors(action: Callable[[], None]) -> None:
    """Run `action`; errors a person can fix become one `error:` line and their exit code."""
    try:
        action()
    except Exception as exc:  # not `except cluster_errors()`: importing while Ctrl-C unwinds can fail
        if not isinstance(exc, cluster_errors()):
            raise
        fail(exc)



def output_failure(error: OSError) -> int | None:
    """The exit code when ``error`` is stdout failing, after saying so: BROKEN_PIPE quietly when its
    reader went away, WRITE_FAILED with one `error:` line when it cannot be written.  None when
    the error is not stdout's (the caller re-raises it).  Either way stdout is then pointed at
    /dev/null, so the interpreter's own flush at exit cannot fail again and print a traceback."""
    import errno

    write_errnos = {errno.ENOSPC, errno.EFBIG, errno.EIO, getattr(errno, "EDQUOT", errno.ENOSPC)}
    if isinstance(error, BrokenPipeError):
        code = BROKEN_PIPE
    elif error.errno in write_errnos:  # only output is written without its own handling (files name theirs)
        click.echo(f"error: cannot write the output: {error.strerror or error}", err=True)
        code = WRITE_FAILED
    else:
        return None
    _silence_stdout()
    return code


def _silence_stdout() -> None:
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
