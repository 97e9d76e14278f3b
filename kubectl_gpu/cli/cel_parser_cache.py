"""Keep CEL parsing work between runs, in the user's cache directory: cel-python's parser tables,
and the selectors parsed with them.

Selectors are parsed with cel-python's lark grammar (kubectl_gpu/cel/parser.py).  lark computes
the LALR tables of that grammar when the first parser is made: 0.27 s of CPU, every process, more
than half of the 0.5 s `kubectl gpu explain -f claim.yaml --slices slices.yaml` may take.  lark
can save the finished parser and load it again (its ``cache=`` option, 0.03 s), keyed by a hash
of the grammar, the options, lark's and Python's versions: a file written for another grammar is
never used, lark builds the tables again.  The parser is still built by cel-python itself, with
its own grammar and options; only lark's ``cache`` is added.

Loading cel-python, lark and pendulum at all costs another 0.1 s, and the selectors of a cluster
(its DeviceClasses', its claims') are the same from run to run.  So each parsed selector is kept
too (:class:`ParsedSelectorFiles`), as the AST the checker and the fast path read
(kubectl_gpu/cel/syntax.py ``to_json``), keyed by its exact text and by the parser that made it:
a run that meets only selectors parsed before never loads cel-python.

The files live in ``$XDG_CACHE_HOME/kubectl-gpu`` (``~/.cache/kubectl-gpu``), a directory only
its owner can write, because lark's cache is a pickle.  When that directory cannot be used
(read-only home, someone else's directory), nothing is kept and everything is parsed as before.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import sys
from pathlib import Path

from kubectl_gpu.cli.user_cache import usable_cache_directory


def build_cel_parser() -> None:
    """Make cel-python's parser (its ``CELParser.CEL_PARSER``) through lark's cache.

    Registered with kubectl_gpu.cel.parser_hook by the CLI and called before the first parse."""
    import tempfile

    import celpy
    import lark
    from celpy import celparser

    if celparser.CELParser.CEL_PARSER is not None:
        return
    directory = usable_cache_directory()
    if directory is None:
        return  # cel-python builds it on first use, as without a cache
    try:
        grammar = (Path(celpy.__file__).parent / "cel.lark").read_bytes()
    except OSError:
        return
    # One file per grammar, lark and Python: a file that exists is complete and is for this parser.
    name = (f"cel-parser-{hashlib.sha256(grammar).hexdigest()[:16]}-lark-{lark.__version__}"
            f"-py{sys.version_info[0]}.{sys.version_info[1]}.lark")
    target = directory / name
    if target.exists():
        _make_parser(celparser, target)  # lark checks the hash inside and rebuilds if it differs
        return
    # First run: write beside the target and rename, so a concurrent run never reads half a file.
    handle, partial = tempfile.mkstemp(prefix=".cel-parser-", dir=directory)
    os.close(handle)
    os.unlink(partial)  # lark writes the file itself
    try:
        _make_parser(celparser, Path(partial))
        if os.path.exists(partial):
            os.replace(partial, target)
    except OSError:
        pass
    finally:
        if os.path.exists(partial):
            os.unlink(partial)


def _make_parser(celparser, cache_file: Path) -> None:
    """cel-python's CELParser() with lark's ``cache=cache_file`` added to its own Lark options."""
    original = celparser.Lark
    celparser.Lark = functools.partial(original, cache=str(cache_file))
    try:
        celparser.CELParser()
    finally:
        celparser.Lark = original


# What the AST of a text depends on: the grammar and how cel-python drives lark (celpy/cel.lark,
# celpy/celparser.py), how it unescapes string and bytes literals (celstr, celbytes in
# celpy/evaluation.py; cel-python states no version of its own), lark's version (lark/__init__.py),
# and our tree-to-AST builder and AST classes (kubectl_gpu/cel/parser.py, syntax.py).  Their bytes
# are hashed, so an upgrade of either library, or a change to either module, makes every kept
# selector a miss.
_PARSER_SOURCES = (("celpy", "cel.lark"), ("celpy", "celparser.py"), ("celpy", "evaluation.py"),
                   ("lark", "__init__.py"), ("kubectl_gpu.cel", "parser.py"), ("kubectl_gpu.cel", "syntax.py"))


def parser_identity() -> str | None:
    """A hash of every file the parse of a CEL text depends on (None when one cannot be read:
    nothing is kept then).  Finding a package does not import it."""
    digest = hashlib.sha256()
    try:
        for package, name in _PARSER_SOURCES:
            spec = importlib.util.find_spec(package)
            locations = spec.submodule_search_locations if spec is not None else None
            if not locations:
                return None
            source = Path(list(locations)[0], name).read_bytes()
            digest.update(f"{package}/{name} {len(source)}\n".encode())
            digest.update(source)
    except (OSError, ImportError, ValueError):
        return None
    return digest.hexdigest()


class ParsedSelectorFiles:
    """kubectl_gpu.cel's ParsedStore: one file per selector, ``cel-ast-<hash>.json``.

    A file names its parser (:func:`parser_identity`) and its exact expression, and starts with
    the SHA-256 of the rest: an entry is answered only when all three match, so a file written by
    another version, for another text (a hash collision), half-written or damaged is a miss and
    the selector is parsed again (and its file rewritten).  Files are written beside their name
    and renamed into place, so concurrent runs never read half a file: the last rename wins, and
    each is complete."""

    def __init__(self, directory: Path, identity: str) -> None:
        self.directory = directory
        self.identity = identity

    @classmethod
    def in_user_cache(cls) -> "ParsedSelectorFiles | None":
        directory = usable_cache_directory()
        identity = parser_identity() if directory is not None else None
        return cls(directory, identity) if directory is not None and identity is not None else None

    def _path(self, expression: str) -> Path:
        key = hashlib.sha256(f"{self.identity}\n{expression}".encode("utf-8", "surrogatepass")).hexdigest()
        return self.directory / f"cel-ast-{key[:40]}.json"

    def get(self, expression: str) -> str | None:
        try:
            data = self._path(expression).read_bytes()
        except OSError:
            return None
        digest, _, payload = data.partition(b"\n")
        if hashlib.sha256(payload).hexdigest().encode() != digest:
            return None
        try:
            entry = json.loads(payload)
        except ValueError:
            return None
        if (not isinstance(entry, dict) or entry.get("identity") != self.identity
                or entry.get("expression") != expression or not isinstance(entry.get("ast"), str)):
            return None
        return entry["ast"]

    def put(self, expression: str, parsed: str) -> None:
        import tempfile

        payload = json.dumps({"identity": self.identity, "expression": expression, "ast": parsed}).encode()
        data = hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload
        try:
            handle, partial = tempfile.mkstemp(prefix=".cel-ast-", dir=self.directory)
        except OSError:
            return  # a full or read-only disk: the selector is parsed again next time
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(partial, self._path(expression))
        except OSError:
            try:
                os.unlink(partial)
            except OSError:
                pass
