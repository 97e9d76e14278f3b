"""Properties of migrate over generated file-system shapes (issue 14): byte order marks, symbolic
links under `--in-place`, writes that fail part-way, directories that cannot be read.

Whatever the shape: no traceback; each file is written whole or left exactly as it was; the
report and the exit code (`kubectl gpu migrate --help`: 2 = usage error, nothing written;
3 = some file not written, the report lists which were and which were not) say what happened.
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kubectl_gpu.manifests.output as output
from kubectl_gpu.cli.main import main
from kubectl_gpu.manifests import migrate_text

FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def gpu_pod(name: str) -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}  # the pod\nspec:\n  containers:\n"
            "  - name: c\n    image: cuda\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n")


CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n"
MANIFESTS = st.sampled_from([gpu_pod("a"), gpu_pod("b") + "---\n" + CONFIG_MAP, CONFIG_MAP, "\n" + gpu_pod("ü")])


def migrate(*args: str, stdin: bytes | None = None):
    return CliRunner().invoke(main, ["migrate", *args], input=stdin)


def snapshot(root: Path) -> dict[str, tuple[str, bytes | str]]:
    """Every entry under `root`: a link's target, a file's bytes (what a user could see change)."""
    found: dict[str, tuple[str, bytes | str]] = {}
    for path in sorted(root.rglob("*")):
        key = path.relative_to(root).as_posix()
        if path.is_symlink():
            found[key] = ("link", os.readlink(path))
        elif path.is_file():
            found[key] = ("file", path.read_bytes())
    return found


# --- (a) byte order marks -------------------------------------------------------------------

# kubectl reads every file and stdin through unicode.BOMOverride(unicode.UTF8.NewDecoder())
# (k8s.io/cli-runtime/pkg/resource/visitor.go, FileVisitor.Visit): a UTF-8 BOM is dropped and a
# UTF-16 BOM (either byte order) decodes the rest as UTF-16.  What kubectl applies, migrate reads.
ENCODINGS = {"utf-8": b"", "utf-8-sig": b"\xef\xbb\xbf", "utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff"}


def encoded(text: str, encoding: str) -> bytes:
    return ENCODINGS[encoding] + text.encode(encoding.removesuffix("-sig"))


@FAST
@given(manifest=MANIFESTS, encoding=st.sampled_from(list(ENCODINGS)), where=st.sampled_from(["stdin", "file", "in-place"]))
def test_a_byte_order_mark_is_read_as_kubectl_reads_it_and_in_place_keeps_the_encoding(
        manifest: str, encoding: str, where: str) -> None:
    expected = migrate_text(manifest)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "m.yaml"
        path.write_bytes(encoded(manifest, encoding))
        if where == "stdin":
            result = migrate("-", stdin=encoded(manifest, encoding))
        elif where == "file":
            result = migrate(str(path))
        else:
            result = migrate("--in-place", str(path))
        assert result.exit_code == 0, result.output
        assert "Traceback" not in result.output
        if where == "in-place":
            assert result.stdout == ""
            # The file is rewritten in the encoding it was read in, its byte order mark included.
            assert path.read_bytes() == encoded(expected.rendered.text, encoding)
        else:
            assert result.stdout == expected.rendered.text  # a stream for kubectl: UTF-8, no mark
            assert path.read_bytes() == encoded(manifest, encoding)


# --- (b) --in-place on symbolic links ---------------------------------------------------------

@st.composite
def link_chains(draw) -> tuple[int, bool, bool, bool]:
    """(links in the chain, the file lives in another directory, links are absolute, the chain
    ends nowhere)."""
    return (draw(st.integers(1, 3)), draw(st.booleans()), draw(st.booleans()), draw(st.booleans()))


@FAST
@given(chain=link_chains(), manifest=MANIFESTS, named=st.sampled_from(["link", "link and file", "directory"]))
def test_in_place_through_symbolic_links_rewrites_the_file_they_reach_and_never_replaces_a_link(
        chain: tuple[int, bool, bool, bool], manifest: str, named: str) -> None:
    """A link is followed to the file it reaches (as `sed -i --follow-symlinks` does); a link
    that reaches no file is refused by name, before anything is written, also inside a named
    directory (kubectl apply -f DIR fails on it too: its FileVisitor opens every file it walks)."""
    length, elsewhere, absolute, dangling = chain
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        (root / "links").mkdir()
        (root / "data").mkdir()
        target = (root / "data" if elsewhere else root / "links") / "real.yaml"
        if not dangling:
            target.write_text(manifest)
        pointee = target
        links: list[Path] = []
        for index in range(length):
            link = root / "links" / f"link{index}.yaml"
            link.symlink_to(pointee if absolute else os.path.relpath(pointee, link.parent))
            links.append(link)
            pointee = link
        arguments = {"link": [str(links[-1])], "directory": [str(root / "links")],
                     "link and file": [str(links[-1])] + ([] if dangling else [str(target)])}[named]
        before = snapshot(root)
        result = migrate("--in-place", *arguments)
        assert "Traceback" not in result.output
        after = snapshot(root)
        assert {k: v for k, v in after.items() if v[0] == "link"} == {k: v for k, v in before.items() if v[0] == "link"}
        if dangling:
            assert result.exit_code == 2, result.output
            assert str(links[-1]) in result.output and "does not exist" in result.output
            assert after == before  # nothing written: no file appeared where the link points
        else:
            assert result.exit_code == 0, result.output
            assert target.read_text() == migrate_text(manifest).rendered.text
            assert set(after) == set(before)  # no temporary file left, no new file beside a link


# --- (c) writes that fail -------------------------------------------------------------------

def target_of(temporary: str) -> Path:
    """The file a temporary `.NAME.XXXXXX.tmp` (how migrate stages an atomic write) replaces."""
    return Path(temporary).parent / Path(temporary).name[1:].rsplit(".", 2)[0]


ERRNOS = st.sampled_from([errno.ENOSPC, errno.EIO, errno.EACCES])
STAGES = st.sampled_from(["create", "write", "replace"])  # where inside one atomic write the disk fails


@FAST
@given(manifests=st.lists(MANIFESTS, min_size=1, max_size=4),
       mode=st.sampled_from(["--in-place", "--output-dir", "--output-dir under a file"]), failures=st.data())
def test_a_write_that_fails_leaves_each_file_whole_or_untouched_and_the_report_says_which(
        manifests: list[str], mode: str, failures: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        (root / "in").mkdir()
        paths = [root / "in" / f"m{index}.yaml" for index in range(len(manifests))]
        for path, manifest in zip(paths, manifests):
            path.write_text(manifest)
        out = root / "out"
        if mode == "--output-dir under a file":
            (root / "blocker").write_text("a file, not a directory")
            out, mode = root / "blocker" / "out", "--output-dir"
        destination = {p: (p if mode == "--in-place" else out / p.name) for p in paths}
        expected = {p: migrate_text(m).rendered.text for p, m in zip(paths, manifests)}
        # --in-place writes only the files that change; --output-dir writes every file.
        attempted = [p for p, m in zip(paths, manifests) if mode == "--output-dir" or expected[p] != m]
        if out.parent.is_file():  # every write fails before any disk is touched
            failing, stage, code = set(attempted), "none", errno.ENOTDIR
        else:
            failing = failures.draw(st.sets(st.sampled_from(attempted)) if attempted else st.just(set()),
                                    label="failing")
            stage = failures.draw(STAGES, label="stage")
            code = failures.draw(ERRNOS, label="errno")
        failing_targets = {destination[p] for p in failing}

        def fails(target: Path) -> None:
            if target in failing_targets:
                raise OSError(code, os.strerror(code), str(target))

        real_mkstemp, real_fdopen, real_replace = output.tempfile.mkstemp, output.os.fdopen, output.os.replace

        def mkstemp(*args, dir, **kwargs):  # noqa: A002 - tempfile's own name
            handle, name = real_mkstemp(*args, dir=dir, **kwargs)
            if stage == "create" and target_of(name) in failing_targets:
                os.close(handle)
                os.unlink(name)
                fails(target_of(name))
            return handle, name

        class HalfWritten:
            """A disk that takes the first half of the text, then fails."""

            def __init__(self, stream, target: Path) -> None:
                self.stream, self.target = stream, target

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.stream.close()

            def write(self, text) -> int:
                if stage == "write" and self.target in failing_targets:
                    self.stream.write(text[: len(text) // 2])
                    self.stream.flush()
                    fails(self.target)
                return self.stream.write(text)

        def fdopen(handle, *args, **kwargs):
            return HalfWritten(real_fdopen(handle, *args, **kwargs), target_of(os.readlink(f"/proc/self/fd/{handle}")))

        def replace(source, target):
            if stage == "replace":
                fails(Path(target))
            return real_replace(source, target)

        patches = [(output.tempfile, "mkstemp", mkstemp), (output.os, "fdopen", fdopen), (output.os, "replace", replace)]
        for module, name, value in patches:
            setattr(module, name, value)
        try:
            result = migrate(*([mode] if mode == "--in-place" else [mode, str(out)]), str(root / "in"))
        finally:
            for module, name, _ in patches:
                setattr(module, name, {"mkstemp": real_mkstemp, "fdopen": real_fdopen, "replace": real_replace}[name])

        assert "Traceback" not in result.output
        written = [p for p in attempted if p not in failing]
        assert result.exit_code == (3 if failing else 0), result.output
        for path, manifest in zip(paths, manifests):
            target = destination[path]
            if path in written:
                assert target.read_text() == expected[path]  # whole
            elif mode == "--output-dir":
                assert not target.exists()
            if mode == "--output-dir" or path not in written:
                assert path.read_text() == manifest  # untouched
        if failing:
            assert f"{len(written)} file(s) written, {len(failing)} not written" in result.output
            for path in failing:
                assert f"{destination[path]}: not written ({os.strerror(code)})" in result.output
            for path in written:
                assert str(destination[path]) in result.output.split("written: ", 1)[1]
        leftovers = [p for p in root.rglob(".*") if p.name.endswith(".tmp")]
        assert not leftovers


# --- (d) directories that cannot be read ------------------------------------------------------

@st.composite
def trees(draw) -> tuple[list[str], set[str], set[str]]:
    """Directories (relative paths, parents first), the ones that cannot be listed, and files
    that cannot be opened."""
    directories = ["."]
    for _ in range(draw(st.integers(1, 5))):
        parent = draw(st.sampled_from(directories))
        directories.append(os.path.normpath(f"{parent}/d{len(directories)}"))
    unlistable = draw(st.sets(st.sampled_from(directories[1:])))
    unopenable = draw(st.sets(st.sampled_from([f"{d}/pod.yaml" for d in directories]), max_size=2))
    return directories, unlistable, unopenable


@FAST
@given(tree=trees(), mode=st.sampled_from(["--check", "--in-place", "--output-dir"]))
def test_unreadable_directories_and_files_are_a_usage_error_naming_each_and_nothing_is_written(
        tree: tuple[list[str], set[str], set[str]], mode: str) -> None:
    """Skipping what cannot be read would let `--check` pass over manifests nobody looked at.
    (Root reads through any mode bits, so the refusal is injected where migrate reads.)"""
    directories, unlistable, unopenable = tree
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory) / "repo"
        for relative in directories:
            (root / relative).mkdir(parents=True, exist_ok=True)
            (root / relative / "pod.yaml").write_text(gpu_pod(Path(relative).name or "top"))
        # A directory under an unlistable one is never reached, so it cannot be named.
        reachable_unlistable = {d for d in unlistable if not any(d.startswith(u + "/") for u in unlistable)}
        reachable_unopenable = {f for f in unopenable
                                if not any(f.startswith(u + "/") for u in unlistable)}
        refused_dirs = {os.path.normpath(root / d) for d in unlistable}
        refused_files = {os.path.normpath(root / f) for f in unopenable}
        before = snapshot(Path(directory))
        real_scandir = os.scandir
        real_read_bytes = Path.read_bytes

        def scandir(path=".", *args):
            if os.path.normpath(path) in refused_dirs:
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
            return real_scandir(path, *args)

        def read_bytes(self):
            if os.path.normpath(self) in refused_files:
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
            return real_read_bytes(self)

        os.scandir, Path.read_bytes = scandir, read_bytes
        try:
            out = Path(directory) / "out"
            result = migrate(*([mode, str(out)] if mode == "--output-dir" else [mode]), str(root))
        finally:
            os.scandir, Path.read_bytes = real_scandir, real_read_bytes
        assert "Traceback" not in result.output
        if not reachable_unlistable and not reachable_unopenable:
            assert result.exit_code in (0, 1), result.output
            return
        assert result.exit_code == 2, result.output
        for relative in reachable_unlistable | reachable_unopenable:
            assert f"{(root / relative).as_posix().replace('/./', '/')}: " in result.output.replace("\n", " ")
        assert snapshot(Path(directory)) == before
