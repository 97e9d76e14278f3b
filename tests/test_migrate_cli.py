"""`kubectl gpu migrate` as a user runs it: outputs, modes, exit codes, the report."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from tests.corpus import corpus_dir, requires_corpus

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
CORPUS = corpus_dir("legacy")

POD = """\
# keep this comment
apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
  - name: main
    image: cuda
    resources:
      limits:
        nvidia.com/gpu: 1
"""
SERVICE = "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\nspec:\n  ports:\n  - port: 80\n"
BROKEN = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: [oops\n"


def migrate(*args: str, stdin: str | None = None):
    return CliRunner().invoke(main, ["migrate", *args], input=stdin)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "apps" / "gpu").mkdir(parents=True)
    (tmp_path / "apps" / "gpu" / "pod.yaml").write_text(POD)
    (tmp_path / "apps" / "svc.yml").write_text(SERVICE)
    (tmp_path / "apps" / "notes.txt").write_text("not a manifest")
    (tmp_path / "apps" / ".hidden").mkdir()
    (tmp_path / "apps" / ".hidden" / "x.yaml").write_text(POD)
    return tmp_path / "apps"


def docs(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def test_writes_migrated_manifests_to_stdout_and_the_report_to_stderr(tree: Path) -> None:
    result = migrate(str(tree / "gpu" / "pod.yaml"))
    assert result.exit_code == 0, result.stderr
    assert [d["kind"] for d in docs(result.stdout)] == ["ResourceClaimTemplate", "Pod"]
    assert "# keep this comment" in result.stdout
    assert "Pod p" in result.stderr and "1 DRA object(s) added" in result.stderr
    assert "\x1b[" not in result.stderr  # no colour codes when stderr is not a terminal


def test_directories_are_read_recursively_skipping_hidden_and_non_manifests(tree: Path) -> None:
    result = migrate(str(tree))
    assert result.exit_code == 0
    assert [d["kind"] for d in docs(result.stdout)] == ["ResourceClaimTemplate", "Pod", "Service"]
    assert "2 file(s), 1 changed" in result.stderr


def test_stdin_is_read_with_a_dash() -> None:
    result = migrate("-", stdin=POD)
    assert result.exit_code == 0 and [d["kind"] for d in docs(result.stdout)] == ["ResourceClaimTemplate", "Pod"]


def test_in_place_rewrites_only_the_files_that_change(tree: Path) -> None:
    service = tree / "svc.yml"
    os.utime(service, (1, 1))
    result = migrate("--in-place", str(tree))
    assert result.exit_code == 0 and result.stdout == ""
    assert "resourceClaimTemplateName" in (tree / "gpu" / "pod.yaml").read_text()
    assert service.stat().st_mtime == 1 and service.read_text() == SERVICE


def test_output_dir_mirrors_the_input_paths(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = migrate("--output-dir", str(out), str(tree))
    assert result.exit_code == 0
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "gpu/pod.yaml", "svc.yml"]
    assert (out / "svc.yml").read_text() == SERVICE
    assert (tree / "gpu" / "pod.yaml").read_text() == POD  # inputs untouched


def test_diff_shows_what_would_change_and_writes_nothing(tree: Path) -> None:
    """Like `kubectl diff` ("Exit status: 0 No differences were found. 1 Differences were found."),
    --diff exits 1 when something would change and 0 once nothing does."""
    result = migrate("--diff", str(tree))
    assert result.exit_code == 1
    assert result.stdout.startswith(f"--- {tree}/gpu/pod.yaml\n+++ {tree}/gpu/pod.yaml (migrated)\n")
    assert "-        nvidia.com/gpu: 1\n" in result.stdout and "svc.yml" not in result.stdout
    assert (tree / "gpu" / "pod.yaml").read_text() == POD


def test_check_exits_1_while_something_would_change_and_0_after_migrating(tree: Path) -> None:
    result = migrate("--check", str(tree))
    assert result.exit_code == 1 and result.stdout == ""
    assert (tree / "gpu" / "pod.yaml").read_text() == POD
    # --check writes nothing: its report says what would change, never "(migrated)".
    assert f"{tree / 'gpu' / 'pod.yaml'} (would be migrated)" in result.stderr
    assert "(migrated)" not in result.stderr
    assert migrate("--in-place", str(tree)).exit_code == 0
    assert migrate("--check", str(tree)).exit_code == 0


# A custom resource migrate has no mapping for, with a container spec outside any PodSpec.
UNMAPPED_GPU_STEP = """\
apiVersion: ml.example.com/v1
kind: TrainingRun
metadata:
  name: train
spec:
  steps:
  - name: gpu-step
    container:
      image: cuda
      resources:
        limits:
          nvidia.com/gpu: 1
"""


def test_check_fails_with_its_own_code_while_gpu_requests_are_left_that_migrate_cannot_rewrite() -> None:
    """A CI gate must not pass a GPU request migrate leaves behind (here a custom resource's container spec
    it has no mapping for): exit 9, distinct from 'would change' (1), and the report names the place."""
    from kubectl_gpu.cli import exits

    for mode in ("--check", "--diff"):
        result = migrate(mode, "-", stdin=UNMAPPED_GPU_STEP)
        assert result.exit_code == exits.LEGACY_LEFT == 9, (mode, result.output)
        assert "/spec/steps/0/container/resources" in result.stderr
    # Plain migrate writes what it can: its exit code is not a gate.
    assert migrate("-", stdin=UNMAPPED_GPU_STEP).exit_code == 0
    # A quota merely naming the resource is a setting to re-point, not a request left.
    queue = ("apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata:\n  name: q\nspec:\n"
             "  resourceGroups:\n  - coveredResources: [cpu, nvidia.com/gpu]\n")
    assert migrate("--check", "-", stdin=queue).exit_code == 0
    assert "9" in exits.TABLE and "cannot rewrite" in exits.TABLE


def test_json_output(tree: Path) -> None:
    result = migrate("-o", "json", str(tree / "gpu" / "pod.yaml"))
    value = json.loads(result.stdout)
    assert value["kind"] == "List" and [i["kind"] for i in value["items"]] == ["ResourceClaimTemplate", "Pod"]


@pytest.mark.parametrize("version,request_key", [("v1", "exactly"), ("v1beta2", "exactly"), ("v1beta1", None)])
def test_api_version_selects_the_resource_api(tree: Path, version: str, request_key: str | None) -> None:
    result = migrate("--api-version", version, str(tree / "gpu" / "pod.yaml"))
    template = docs(result.stdout)[0]
    assert template["apiVersion"] == f"resource.k8s.io/{version}"
    request = template["spec"]["spec"]["devices"]["requests"][0]
    assert (request_key in request) if request_key else ("deviceClassName" in request)


@pytest.mark.parametrize("sharing,strategy", [("mps", "MPS"), ("timeslicing", "TimeSlicing")])
def test_sharing_mps_or_timeslicing_shares_one_claim_per_workload(sharing: str, strategy: str) -> None:
    result = migrate("--sharing", sharing, str(EXAMPLES / "fractional-gpu.yaml"))
    claim, deployment = docs(result.stdout)
    assert claim["kind"] == "ResourceClaim"
    assert claim["spec"]["devices"]["config"][0]["opaque"]["parameters"]["sharing"]["strategy"] == strategy
    spec = deployment["spec"]["template"]["spec"]
    assert spec["resourceClaims"][0]["resourceClaimName"] == claim["metadata"]["name"]


def test_sharing_exclusive_gives_whole_gpus_even_when_the_gpu_memory_is_known() -> None:
    # --gpu-memory alone turns 0.5 into a 40Gi share (tests/test_migrate_examples.py); exclusive overrides it.
    result = migrate("--sharing", "exclusive", "--gpu-memory", "80Gi", str(EXAMPLES / "fractional-gpu.yaml"))
    template, _ = docs(result.stdout)
    request = template["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert request["count"] == 1 and "capacity" not in request
    assert "gets 1 whole GPU(s) instead of 0.5" in result.stderr


def test_integer_gpus_extended_resource_leaves_plain_gpu_counts_to_the_scheduler() -> None:
    example = EXAMPLES / "nvidia-gpu-deployment.yaml"
    result = migrate("--integer-gpus", "extended-resource", str(example))
    assert result.exit_code == 0 and result.stdout == example.read_text()
    assert "KEP-5004" in result.stderr and "0 DRA object(s) added" in result.stderr


def test_json_files_in_a_directory_are_read_and_stay_json(tree: Path) -> None:
    pod = docs(POD)[0]
    (tree / "gpu" / "pod.yaml").unlink()
    (tree / "gpu" / "pod.json").write_text(json.dumps(pod, indent=2))
    result = migrate("--output-dir", str(tree.parent / "out"), str(tree))
    assert result.exit_code == 0
    value = json.loads((tree.parent / "out" / "gpu" / "pod.json").read_text())
    assert [i["kind"] for i in value["items"]] == ["ResourceClaimTemplate", "Pod"]


def test_namespace_option_places_claims_for_objects_without_one(tree: Path) -> None:
    result = migrate("-n", "team-a", str(tree / "gpu" / "pod.yaml"))
    assert docs(result.stdout)[0]["metadata"]["namespace"] == "team-a"


def test_unparseable_input_exits_3_names_the_line_and_still_writes_everything(tmp_path: Path) -> None:
    (tmp_path / "a-broken.yaml").write_text(SERVICE + "---\n" + BROKEN)
    (tmp_path / "b-pod.yaml").write_text(POD)
    result = migrate(str(tmp_path))
    assert result.exit_code == 3
    assert BROKEN in result.stdout and SERVICE in result.stdout
    assert "resourceClaimTemplateName" in result.stdout
    assert "a-broken.yaml (not fully migrated)" in result.stderr and "line 12" in result.stderr


def test_invalid_legacy_value_exits_3_and_says_what_to_use(tmp_path: Path) -> None:
    bad = tmp_path / "vcuda.yaml"
    bad.write_text(POD.replace("nvidia.com/gpu: 1", "tencent.com/vcuda-core: 150"))
    result = migrate(str(bad))
    assert result.exit_code == 3
    assert "Pod p" in result.stderr and "container 'main'" in result.stderr and "150" in result.stderr
    assert result.stdout == bad.read_text()


@pytest.mark.parametrize("args,message", [
    (["--in-place", "-"], "standard input"),
    (["--in-place", "--output-dir", "x", "f.yaml"], "either --in-place or --output-dir"),
    (["does-not-exist.yaml"], "no such file or directory"),
    (["--gpu-memory", "lots", "f.yaml"], "not a memory quantity"),
    (["--sharing", "magic", "f.yaml"], "'magic' is not one of"),
    ([], "no input: name FILE|DIR|- arguments or -f FILE|DIR|-"),
])
def test_usage_errors_exit_2_and_write_nothing(args: list[str], message: str) -> None:
    result = migrate(*args)
    assert result.exit_code == 2 and message in result.stderr and result.stdout == ""


def test_a_container_mixing_two_gpu_plugins_exits_3_and_is_left_as_it_was(tmp_path: Path) -> None:
    mixed = tmp_path / "mixed.yaml"
    mixed.write_text(POD.replace("nvidia.com/gpu: 1", "nvidia.com/gpu: 1\n        aliyun.com/gpu-mem: 4"))
    result = migrate(str(mixed))
    assert result.exit_code == 3 and result.stdout == mixed.read_text()
    assert "mixes resources of different GPU device plugins" in result.stderr


def test_without_check_gpu_requests_migrate_cannot_reach_are_warnings_that_leave_the_exit_code(
        tmp_path: Path) -> None:
    workflow = tmp_path / "workflow.yaml"
    workflow.write_text("apiVersion: ml.example.com/v1\nkind: TrainingRun\nmetadata: {name: w}\nspec:\n"
                        "  steps:\n  - name: t\n    container:\n      name: c\n"
                        "      image: x\n      resources: {limits: {nvidia.com/gpu: 1}}\n")
    result = migrate(str(workflow))
    assert result.exit_code == 0
    assert "warning:" in result.stderr and "outside any pod template" in result.stderr
    assert workflow.read_text().endswith("nvidia.com/gpu: 1}}\n")


def test_help_documents_the_exit_codes() -> None:
    result = migrate("--help")
    for line in ("0  everything migrated", "1  --check or --diff", "2  usage error", "3  some input was not migrated",
                 "9  --check or --diff: GPU requests are left"):
        assert line in result.stdout


@requires_corpus
def test_corpus_files_through_the_command_line(tmp_path: Path) -> None:
    names = ["NVIDIA__deepops__workloads_examples_k8s_gpu-usage_mig-mixed-with-selector.yml",
             "Project-HAMi__HAMi__examples_nvidia_use_sharing_card.yaml",
             "kubernetes-sigs__lws__docs_examples_vllm_GPU_lws.yaml"]
    for name in names:
        shutil.copy(CORPUS / name, tmp_path / name)
    first = migrate("--in-place", str(tmp_path))
    assert first.exit_code == 0, first.stderr
    assert migrate("--check", str(tmp_path)).exit_code == 0


def _console_script() -> str | None:
    venv = REPO / ".venv" / "bin" / "kubectl-gpu"
    return str(venv) if venv.exists() else shutil.which("kubectl-gpu")


@pytest.mark.skipif(_console_script() is None, reason="kubectl-gpu is not installed (run scripts/bootstrap)")
def test_the_installed_console_script_migrates_the_examples() -> None:
    # What the README's quick start (scripts/demo) runs after scripts/bootstrap.
    done = subprocess.run([_console_script(), "migrate", str(EXAMPLES)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    kinds = [d["kind"] for d in docs(done.stdout)]
    assert kinds.count("ResourceClaimTemplate") == 8 and "Deployment" in kinds
    assert "8 file(s), 8 changed" in done.stderr and "8 pod template(s) migrated" in done.stderr
    assert "0 error(s)" in done.stderr


def test_files_written_back_each_carry_the_claim_templates_their_pods_need(tmp_path: Path) -> None:
    # Operators apply migrated files one at a time (GitOps, kubectl apply -f FILE): a pod whose
    # template lives only in another file would stay Pending forever.
    for name in ("a.yaml", "b.yaml"):
        (tmp_path / name).write_text(POD)
    assert migrate("--in-place", str(tmp_path)).exit_code == 0
    for name in ("a.yaml", "b.yaml"):
        kinds = [d["kind"] for d in docs((tmp_path / name).read_text())]
        assert kinds == ["ResourceClaimTemplate", "Pod"], name
    assert migrate("--check", str(tmp_path)).exit_code == 0


def test_one_output_stream_carries_each_claim_template_once(tmp_path: Path) -> None:
    for name in ("a.yaml", "b.yaml"):
        (tmp_path / name).write_text(POD)
    result = migrate(str(tmp_path))
    assert [d["kind"] for d in docs(result.stdout)] == ["ResourceClaimTemplate", "Pod", "Pod"]


def test_a_name_no_encoding_can_write_is_printed_escaped_not_a_traceback(tmp_path: Path) -> None:
    """A lone surrogate (YAML's "\\ud800") in a name reaches every table and report.  stderr already
    writes what it cannot encode as a backslash escape (Python's default for it); stdout now does
    the same in the real executable, so `plan` prints its table instead of dying mid-write."""
    import sys

    manifest = tmp_path / "d.yaml"
    manifest.write_text('apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: "d\\ud800", namespace: ml}\n'
                        "spec:\n  template:\n    spec:\n      containers:\n      - name: main\n        image: x\n"
                        "        resources: {limits: {nvidia.com/gpu: 1}}\n")
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}  # strict, as a UTF-8 terminal or pipe is
    result = subprocess.run([sys.executable, "-m", "kubectl_gpu.cli.main", "plan", "-f", str(manifest)],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 1, result.stderr[-2000:]  # the plan's answer: no DRA node to place it on
    assert "Traceback" not in result.stderr
    assert "NOT PLACED: 1 workload(s)" in result.stdout and "Deployment/ml/d\\ud800" in result.stdout


# `kubectl apply -f <(helm template ...)`: the shell passes /dev/fd/N, a pipe, which kubectl reads
# as any file it is given (k8s.io/cli-runtime/pkg/resource/visitor.go, FileVisitor: os.Open and read,
# whatever the file is).  migrate, plan -f and --cluster read it too; a pipe cannot be rewritten,
# so --in-place/--output-dir refuse it as they refuse '-'.
@pytest.fixture
def pipe_with():
    """``pipe_with(text)``: a path naming a pipe that holds ``text`` and then ends, as the shell's
    <(...) gives one (its read end is closed after the test)."""
    if not Path("/dev/fd").is_dir():
        pytest.skip("no /dev/fd on this system")
    opened: list[int] = []

    def make(text: str) -> str:
        read, write = os.pipe()
        os.write(write, text.encode())
        os.close(write)
        opened.append(read)
        return f"/dev/fd/{read}"

    yield make
    for descriptor in opened:
        os.close(descriptor)


def test_a_pipe_is_read_as_kubectl_reads_it(pipe_with) -> None:
    result = CliRunner().invoke(main, ["migrate", pipe_with(POD)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert any(d.get("kind") == "ResourceClaimTemplate" for d in docs(result.stdout))


def test_a_pipe_is_never_written_back(pipe_with) -> None:
    pipe = pipe_with(POD)
    result = CliRunner().invoke(main, ["migrate", "--in-place", pipe], catch_exceptions=False)
    assert result.exit_code == 2 and pipe in result.output and "stdout" in result.output


def test_plan_and_a_cluster_profile_read_pipes_too(tmp_path: Path, pipe_with) -> None:
    slices = (REPO / "tests" / "data" / "slices" / "nvidia-h100-node.yaml").read_text()
    (tmp_path / "pod.yaml").write_text(POD)
    migrated = CliRunner().invoke(main, ["migrate", "--cluster", pipe_with(slices), str(tmp_path / "pod.yaml")],
                                  catch_exceptions=False)
    assert migrated.exit_code == 0, migrated.output
    planned = CliRunner().invoke(main, ["plan", "-f", pipe_with(POD), "-o", "json"], catch_exceptions=False)
    assert "Pod" in planned.output and "symbolic link" not in planned.output, planned.output


FRACTION = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  template:
    spec:
      containers:
      - name: main
        image: cuda
        resources:
          limits:
            aliyun.com/gpu-mem: 8
"""


def test_a_warning_repeated_across_files_is_printed_once_with_its_count(tmp_path: Path) -> None:
    """A GitOps repository of 1,200 files printed the same --sharing warning 600 times: it is said
    once, where it first occurs, with how often ("(x3)"); the totals still count every one."""
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.yaml").write_text(FRACTION.format(name=name))
    result = migrate(str(tmp_path))
    warnings = [line for line in result.stderr.splitlines() if "warning:" in line]
    assert len(warnings) == 1 and warnings[0].endswith("instead of 8Gi memory (x3)"), result.stderr
    assert result.stderr.index("(x3)") < result.stderr.index("b.yaml")  # under the first file
    assert "3 warning(s)" in result.stderr


def test_quiet_reports_only_errors_and_leaves_the_exit_code_to_say_the_rest(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / f"{name}.yaml").write_text(FRACTION.format(name=name))
    fine = migrate("-q", str(tmp_path))
    assert (fine.exit_code, fine.stderr) == (0, "")
    assert fine.stdout.count("kind: Deployment") == 2  # the manifests as ever
    (tmp_path / "bad.yaml").write_text(POD.replace("nvidia.com/gpu: 1", "nvidia.com/vcuda-core: 150"))
    failed = migrate("-q", str(tmp_path))
    assert failed.exit_code == 3
    assert failed.stderr.splitlines() == [
        f"{tmp_path / 'bad.yaml'} (not fully migrated)", "  Pod p",
        "      error: container 'main': nvidia.com/vcuda-core: 150 is not valid: 100 is one GPU, so use a value "
        "below 100 (a share of one GPU) or a multiple of 100 (whole GPUs)"]


def test_an_empty_cluster_file_name_is_refused_like_an_empty_input(tmp_path):
    """`--cluster "$PROFILE"` with the variable unset would read the working directory as the cluster."""
    manifest = tmp_path / "pod.yaml"
    manifest.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n")
    result = CliRunner().invoke(main, ["migrate", str(manifest), "--cluster", ""])
    assert result.exit_code == 2 and "an empty file name ('') names nothing" in result.output
