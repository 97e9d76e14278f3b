"""The `kubectl-gpu` executable: `--help` answered from the user's cache, everything else by the
command group (kubectl_gpu/cli/main.py).

A person reads `--help` often, and it should come back as fast as the interpreter starts
(issue 29: within 1.5x `python -c pass`, scripts/bench_migrate.py).  click alone takes most of
an interpreter start to import, and a command's module the rest, so no command can render its
help that fast.  The rendered text is therefore kept, per command line and terminal width, in
the cache directory the CEL parser uses (kubectl_gpu/cli/cel_parser_cache.py): the first
`kubectl gpu migrate --help` renders it through click and keeps it, the next ones print it.

A kept text is used only when its first line, the stamp, matches this run's: Python's version,
where the package lives and the newest modification time of its source files, the terminal
width click wraps help to.  Editing any source file (an option's help, a fact a help quotes)
or upgrading the package makes every kept text stale.  This module imports only what the
interpreter has loaded already (os, sys, io): it is what runs before anything is known.
"""

from __future__ import annotations

import os
import sys

_HELP_FLAGS = ("--help", "-h")
_MAX_WORDS = 4  # `migrate nodes --help`, `migrate --from-cluster --help`: a command, not arguments


def run() -> None:
    argv = sys.argv[1:]
    name = _help_file_name(argv)
    if name is None:
        _run_command()
        return
    directory = _cache_directory()
    stamp = _stamp()
    kept = _read_kept(directory, name, stamp) if directory else None
    if kept is not None:
        sys.stdout.write(kept)
        sys.stdout.flush()
        sys.exit(0)
    text, code = _render(argv)
    sys.stdout.write(text)
    if code in (0, None) and directory:
        _keep(directory, name, stamp, text)
    sys.exit(code)


def _run_command() -> None:
    from kubectl_gpu.cli.main import run as run_group

    run_group()


def _help_file_name(argv: list[str]) -> str | None:
    """A file name for a plain help request (command words and flags, then --help), else None:
    arguments such as file names are not keys of a cache."""
    if not argv or argv[-1] not in _HELP_FLAGS or len(argv) > _MAX_WORDS:
        return None
    words = [word.lstrip("-") for word in argv]
    if not all(word and word.replace("-", "").isalpha() and word.islower() for word in words):
        return None
    return "help-" + "_".join(argv).replace("-", "~") + ".txt"


def _cache_directory() -> str | None:
    from kubectl_gpu.cli.user_cache import usable_cache_directory

    directory = usable_cache_directory()
    return str(directory) if directory is not None else None


def _stamp() -> str:
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    newest = 0
    for folder, _, files in os.walk(package):
        for file in files:
            if file.endswith(".py"):
                try:
                    newest = max(newest, os.stat(os.path.join(folder, file)).st_mtime_ns)
                except OSError:
                    pass
    return f"{sys.version.split()[0]} {package} {newest} {_width()}"


def _width() -> str:
    """What click's help formatter reads for the width (shutil.get_terminal_size): $COLUMNS,
    else the terminal's size."""
    columns = os.environ.get("COLUMNS", "")
    try:
        size = os.get_terminal_size(sys.__stdout__.fileno()).columns
    except (AttributeError, ValueError, OSError):
        size = "-"
    return f"{columns}/{size}"


def _read_kept(directory: str, name: str, stamp: str) -> str | None:
    try:
        with open(os.path.join(directory, name), encoding="utf-8") as kept:
            first, _, text = kept.read().partition("\n")
    except (OSError, UnicodeDecodeError):
        return None
    return text if first == stamp else None


def _render(argv: list[str]) -> tuple[str, int | str | None]:
    """The help as the command group prints it, with its exit code."""
    import io

    real, sys.stdout = sys.stdout, io.StringIO()
    try:
        try:
            _run_command()
            code: int | str | None = 0
        except SystemExit as done:
            code = done.code
        return sys.stdout.getvalue(), code
    finally:
        sys.stdout = real


def _keep(directory: str, name: str, stamp: str, text: str) -> None:
    """Written beside its name and renamed into place: a concurrent run reads a whole text or none."""
    path = os.path.join(directory, name)
    partial = f"{path}.{os.getpid()}"
    try:
        with open(partial, "w", encoding="utf-8") as out:
            out.write(f"{stamp}\n{text}")
        os.replace(partial, path)
    except OSError:
        try:
            os.unlink(partial)
        except OSError:
            pass


if __name__ == "__main__":
    run()
