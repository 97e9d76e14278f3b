"""Flags as kubectl spells them (issue 29): durations, the context's namespace by default and -A
for all, global flags before the command, usage errors in kubectl's two lines, --dry-run=none|
server|client, Examples: in every help, migrate -f/-R, -l selectors, and completion of names.

Where kubectl itself can be asked, it is: the real kubectl (scripts/install-tools) parses the same
`--timeout` values, and runs the plugin as a user's `kubectl gpu ...` does."""

from __future__ import annotations

import math

import shutil

import pytest
from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from kubectl_gpu.k8s.duration import parse_duration
from tests import builders as b
from tests.test_fleet_e2e import cluster  # noqa: F401  (the fixture)
from tests.test_kubectl_plugin import kubectl, plugin_path  # noqa: F401  (the fixture)
from tests.test_migrate_cli import POD, SERVICE, docs, migrate

KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

# Durations a person may type, and Go's answer (time.ParseDuration, which kubectl's --timeout uses):
# seconds, or the message.  Each is checked against the real kubectl below.
DURATIONS = [
    ("5m", 300.0), ("90s", 90.0), ("1h30m", 5400.0), ("0", 0.0), ("1.5h", 5400.0), (".5s", 0.5),
    ("1.s", 1.0), ("+2s", 2.0), ("1h1h", 7200.0), ("300ms", 0.3), ("2us", 2e-6), ("2\u00b5s", 2e-6),
    ("1m30s", 90.0),
    ("90", 'time: missing unit in duration "90"'),
    ("5M", 'time: unknown unit "M" in duration "5M"'),
    ("1d", 'time: unknown unit "d" in duration "1d"'),
    ("", 'time: invalid duration ""'),
    (".s", 'time: invalid duration ".s"'),
    ("s", 'time: invalid duration "s"'),
    ("1h 30m", 'time: unknown unit "h " in duration "1h 30m"'),
    # A Duration is int64 nanoseconds: Go refuses what does not fit (golang/go src/time/time_test.go
    # at 53ce81ef642355d27223eaf77c0a8e74580632e8, parseDurationTests and parseDurationErrorTests).
    ("9223372036854775807ns", 9223372036.854775807), ("9223372036s854ms775us807ns", 9223372036.854775807),
    ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
    ("9223372036854775810ns", 'time: invalid duration "9223372036854775810ns"'),
    ("9223372036854776us", 'time: invalid duration "9223372036854776us"'),
    ("3000000h", 'time: invalid duration "3000000h"'),
    ("9223372036854775.808us", 'time: invalid duration "9223372036854775.808us"'),
    ("9223372036854ms775us808ns", 'time: invalid duration "9223372036854ms775us808ns"'),
    ("1" + "0" * 400 + "h", f'time: invalid duration "1{"0" * 400}h"'),
]


@pytest.mark.parametrize("text,expected", DURATIONS)
def test_durations_are_read_as_gos_time_parse_duration(text, expected):
    if isinstance(expected, float):
        assert parse_duration(text) == pytest.approx(expected)
    else:
        with pytest.raises(ValueError) as error:
            parse_duration(text)
        assert str(error.value) == expected


@needs_kubectl
def test_kubectl_accepts_and_refuses_the_same_durations():
    """kubectl parses --timeout before it reads a kubeconfig: a value it accepts reaches the missing
    kubeconfig, one it refuses is named with Go's message, the one parse_duration gives."""
    import subprocess

    for text, expected in DURATIONS:
        result = subprocess.run([KUBECTL, "rollout", "status", "deploy/x", f"--timeout={text}",
                                 "--kubeconfig", "/nonexistent/kubeconfig"], capture_output=True, text=True,
                                timeout=60)
        first = result.stderr.splitlines()[0]
        if isinstance(expected, float):
            assert "invalid argument" not in first, (text, first)
        else:
            # kubectl 1.35 writes "error:", older ones "Error:"
            assert first.lower().startswith("error: ") and \
                first[len("error: "):] == f'invalid argument "{text}" for "--timeout" flag: {expected}', text


def test_timeouts_take_kubectls_durations_and_refuse_bare_numbers(cluster):
    output = cluster.kubectl_gpu("migrate", "--from-cluster", "-A", "--apply", "--timeout", "1m30s")
    assert "Deployment/serving/infer: applied" in output
    for command in (["migrate", "--from-cluster"], ["migrate", "nodes"], ["rollback"]):
        output = cluster.kubectl_gpu(*command, "--timeout", "90", expect=2)
        assert output.startswith('error: invalid argument "90" for "--timeout" flag: time: missing unit in duration '
                                 '"90" (write it as kubectl does, with a unit: 90s, 5m, 1h30m)\n'), output
        assert "See 'kubectl gpu " in output
    output = cluster.kubectl_gpu("rollback", "--timeout=-5s", expect=2)
    assert "cannot be negative" in output


def test_a_zero_timeout_means_wait_without_end_as_kubectl_says():
    """kubectl rollout status --timeout: "The length of time to wait before ending watch, zero means
    never"; kubectl drain --timeout: "The length of time to wait before giving up, zero means infinite"
    (k8s.io/kubectl pkg/cmd/rollout/rollout_status.go, pkg/cmd/drain/drain.go).  A 0 that gave up at
    once would stop a migration on its first rollout."""
    from kubectl_gpu.k8s.options import Duration

    assert Duration().convert("0", None, None) == math.inf
    assert Duration().convert("0s", None, None) == math.inf
    assert Duration().convert("1ms", None, None) == 0.001
    result = CliRunner().invoke(main, ["migrate", "nodes", "--help"], terminal_width=200)
    assert "0: without end" in result.output


def test_help_shows_the_timeout_as_kubectl_shows_a_duration():
    result = CliRunner().invoke(main, ["rollback", "--help"], terminal_width=200)
    assert "--timeout DURATION" in result.output and "[default: 5m0s]" in result.output


# ----------------------------------------------------------------- the namespace

def in_context_namespace(cluster, namespace: str, *args: str, expect: int = 0) -> str:
    """Run with a kubeconfig whose context's namespace is ``namespace``."""
    env = dict(cluster.double.kubectl_env(), KUBECONFIG=cluster.double.kubeconfig_path(namespace=namespace))
    result = cluster.runner.invoke(main, list(args), env=env, catch_exceptions=False)
    assert result.exit_code == expect, result.output
    return result.output


def test_migrate_from_cluster_acts_on_the_contexts_namespace_unless_told_otherwise(cluster):
    """As kubectl: the context's namespace by default, -n for another, -A for all (before issue 29 it
    took every namespace when none was given)."""
    output = in_context_namespace(cluster, "serving", "migrate", "--from-cluster")
    assert "Deployment/serving/infer" in output and "/ml/" not in output
    output = in_context_namespace(cluster, "serving", "migrate", "--from-cluster", "-n", "ml")
    assert "/ml/" in output and "/serving/" not in output
    output = in_context_namespace(cluster, "serving", "migrate", "--from-cluster", "-A")
    assert "/ml/" in output and "/serving/" in output
    output = in_context_namespace(cluster, "default", "migrate", "--from-cluster")
    assert "nothing to migrate now in namespace default (-A: every namespace)" in output


def test_rollback_without_a_name_rolls_back_the_contexts_namespace_unless_told_otherwise(cluster):
    cluster.kubectl_gpu("migrate", "--from-cluster", "-A", "--apply", "--timeout", "5s")
    output = in_context_namespace(cluster, "serving", "rollback")
    assert "Deployment/serving/infer: would roll back" in output and "/ml/" not in output
    output = in_context_namespace(cluster, "default", "rollback")
    assert "nothing to roll back in namespace default (-A: every namespace)" in output
    output = in_context_namespace(cluster, "default", "rollback", "-A")
    assert "/ml/" in output and "/serving/" in output


# ----------------------------------------------------------------- flags before the command

def test_global_flags_before_the_command_are_the_commands_flags(cluster):
    before = cluster.kubectl_gpu("-n", "ml", "migrate", "--from-cluster")
    assert before == cluster.kubectl_gpu("migrate", "--from-cluster", "-n", "ml")
    assert "/ml/" in before and "/serving/" not in before
    # A value typed after the command wins, as in kubectl.
    assert "/serving/" in cluster.kubectl_gpu("-n", "ml", "migrate", "--from-cluster", "-n", "serving")
    output = cluster.kubectl_gpu("--request-timeout", "forever", "describe", expect=2)
    assert "'forever' is not a duration" in output
    # kubectl takes its global flags with every command, `kubectl --context prod version` too (an
    # alias `k='kubectl --context prod'` types them): a command that never reaches a cluster
    # (version, completion) takes them and has no use for them; one that reads a cluster without
    # such a flag refuses it rather than ignore what it was told.
    assert cluster.kubectl_gpu("-n", "ml", "--context", "prod", "version").startswith("kubectl-gpu ")
    assert "complete" in cluster.kubectl_gpu("--request-timeout", "5s", "completion", "bash")
    output = cluster.kubectl_gpu("--request-timeout", "5s", "migrate", "x.yaml", expect=2)
    assert output.startswith("error: --request-timeout is not a flag of kubectl gpu migrate\n")


@needs_kubectl
def test_kubectl_hands_flags_before_the_command_to_the_plugin(plugin_path, k8s_double):  # noqa: F811
    """kubectl runs `kubectl gpu -n NS describe` as `kubectl-gpu -n NS describe`."""
    k8s_double.seed(*b.nvidia_device_classes(), b.dra_node("dra-a"), b.gpu_slice("dra-a", 2))
    kubeconfig = k8s_double.kubeconfig_path()
    after = kubectl(plugin_path, "gpu", "describe", "node", "dra-a", "--kubeconfig", kubeconfig, "-o", "json")
    before = kubectl(plugin_path, "gpu", "--kubeconfig", kubeconfig, "--context", "k8s-double", "-n", "default",
                     "describe", "node", "dra-a", "-o", "json")
    assert before.returncode == 0, before.stderr
    assert before.stdout == after.stdout
    wrong = kubectl(plugin_path, "gpu", "--kubeconfig", kubeconfig, "--context", "nosuch", "doctor")
    assert wrong.returncode == 2 and "nosuch" in wrong.stderr


# ----------------------------------------------------------------- usage errors

@needs_kubectl
@pytest.mark.parametrize("args,first,command", [
    (["migrate", "--foo", "x.yaml"], "error: unknown flag: --foo", "kubectl gpu migrate"),
    (["migrate", "nodes", "-x"], "error: unknown shorthand flag: 'x' in -x", "kubectl gpu migrate nodes"),
    (["--foo"], "error: unknown flag: --foo", "kubectl gpu"),
    (["describe", "node", "--outptu", "json"], "error: unknown flag: --outptu (did you mean --output?)",
     "kubectl gpu describe node"),
    (["rollback", "--timeout", "90"], 'error: invalid argument "90" for "--timeout" flag: time: missing unit in '
     'duration "90" (write it as kubectl does, with a unit: 90s, 5m, 1h30m)', "kubectl gpu rollback"),
    # A flag's missing value is the command's error, named with the command's help (cobra: `kubectl
    # drain --timeout` says "flag needs an argument" and "See 'kubectl drain -h'").
    (["migrate", "nodes", "legacy-4", "--timeout"], "error: option '--timeout' requires an argument",
     "kubectl gpu migrate nodes"),
    (["describe", "node", "-o"], "error: option '-o' requires an argument", "kubectl gpu describe node"),
    (["-n", "ml", "describe", "pods", "-o"], "error: option '-o' requires an argument", "kubectl gpu describe pod"),
    # One line, the choices on it: not click's list of them over four lines.
    (["completion"], "error: missing argument '{bash|zsh|fish}' (one of bash, zsh, fish)", "kubectl gpu completion"),
])
def test_usage_errors_are_kubectls_two_lines(plugin_path, args, first, command):  # noqa: F811
    """kubectl's form (`kubectl get --foo`): the error, then where the usage is; nothing on stdout."""
    result = kubectl(plugin_path, "gpu", *args)
    assert result.returncode == 2  # kubectl passes the plugin's code through (exits.USAGE)
    assert result.stderr == f"{first}\nSee '{command} --help' for usage.\n"
    assert result.stdout == ""


def test_a_command_reached_by_a_flag_names_its_help():
    result = CliRunner().invoke(main, ["migrate", "--from-cluster", "--wave=3"])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == "See 'kubectl gpu migrate --from-cluster --help' for usage."


# ----------------------------------------------------------------- --dry-run

WRITES = ("create", "update", "patch", "delete")


def writes(cluster) -> list:
    return [r for r in cluster.double.requests if r.verb in WRITES or r.subresource == "eviction"]


def test_dry_run_server_is_the_default_and_none_writes(cluster):
    """kubectl's --dry-run=none|server|client (GetDryRunStrategy) on every command that changes the
    cluster: server is the default here (nothing is written without --apply or --dry-run=none)."""
    for command in (["migrate", "--from-cluster", "-A"], ["rollback", "-A"]):
        cluster.double.reset_requests()
        default = cluster.kubectl_gpu(*command)
        cluster.double.reset_requests()
        server = cluster.kubectl_gpu(*command, "--dry-run=server")
        assert server == default
        assert all(r.dry_run for r in writes(cluster))
    rv = cluster.double.resource_version
    output = cluster.kubectl_gpu("migrate", "--from-cluster", "-A", "--dry-run=none", "--timeout", "5s")
    assert "Deployment/serving/infer: applied" in output and cluster.double.resource_version != rv
    output = cluster.kubectl_gpu("rollback", "deploy/infer", "-n", "serving", "--dry-run", "none", "--timeout", "5s")
    assert "Deployment/serving/infer: rolled back" in output


def test_dry_run_client_sends_no_write_and_says_what_it_would_send(cluster):
    worker = next(p for p in cluster.pods() if p["metadata"]["labels"].get("app") == "bert")
    name, node = worker["metadata"]["name"], worker["spec"]["nodeName"]
    cluster.double.reset_requests()
    output = cluster.kubectl_gpu("migrate", "--from-cluster", "-A", "--dry-run=client")
    assert "Deployment/serving/infer: would apply (client dry run): " in output
    assert "client dry run: nothing was written" in output
    output = cluster.kubectl_gpu("migrate", "nodes", node, "--dry-run=client")
    assert f"pod/ml/{name}: would be evicted (client dry run)" in output
    assert f"node/{node}: would be cordoned" in output
    cluster.kubectl_gpu("migrate", "--from-cluster", "-A", "--apply", "--timeout", "5s")
    cluster.double.reset_requests()
    output = cluster.kubectl_gpu("rollback", "-A", "--dry-run=client")
    assert "Deployment/serving/infer: would roll back (client dry run)" in output
    assert writes(cluster) == []


def test_a_client_dry_run_sends_no_write_whichever_client_method_makes_it(cluster):
    """Every way the client writes (request, and its create/merge_patch/delete helpers) answers here
    under --dry-run=client: a helper reached through the wrapper must not reach the real client."""
    from kubectl_gpu.fleet.dry_run import ClientDryRun
    from kubectl_gpu.k8s import Resource

    api = ClientDryRun(cluster.api)
    deployments = Resource("apps/v1", "Deployment")
    before = api.get(deployments, "serving", "infer")
    cluster.double.reset_requests()
    api.merge_patch(deployments, "serving", "infer", {"metadata": {"labels": {"touched": "yes"}}})
    api.create(deployments, "serving", {**before, "metadata": {"name": "copy", "namespace": "serving"}})
    api.delete(deployments, "serving", "infer")
    assert writes(cluster) == []
    assert api.get(deployments, "serving", "infer")["metadata"] == before["metadata"]


def test_dry_run_values_and_conflicts_are_usage_errors(cluster):
    output = cluster.kubectl_gpu("rollback", "--dry-run=foo", expect=2)
    assert output.startswith('error: invalid dry-run value (foo). Must be "none", "server", or "client"\n')
    output = cluster.kubectl_gpu("migrate", "nodes", "--apply", "--dry-run=server", expect=2)
    assert "use either --apply or --dry-run=server, not both" in output
    assert "applied" in cluster.kubectl_gpu("migrate", "--from-cluster", "-A", "--apply", "--dry-run=none",
                                            "--timeout", "5s")
    # A bare --dry-run is kubectl's deprecated spelling of client, with kubectl's warning.
    cluster.double.reset_requests()
    output = cluster.kubectl_gpu("rollback", "-A", "--dry-run")
    assert "--dry-run is deprecated and can be replaced with --dry-run=client." in output
    assert "(client dry run)" in output and writes(cluster) == []


# ----------------------------------------------------------------- help

def every_command_line() -> list[list[str]]:
    """Every command a person can run, as its words: each SUBCOMMANDS entry, the commands a word or
    flag reaches (migrate nodes, migrate --from-cluster) and describe's kinds."""
    from kubectl_gpu.cli.main import SUBCOMMANDS

    lines = [[], *([name] for name in sorted(SUBCOMMANDS)), ["migrate", "nodes"], ["migrate", "--from-cluster"]]
    return [*lines, *(["describe", kind] for kind in ("node", "pod", "claim"))]


@pytest.mark.parametrize("words", every_command_line(), ids=lambda words: " ".join(words) or "kubectl gpu")
def test_every_commands_help_has_examples_as_kubectl_shows_them(words):
    result = CliRunner().invoke(main, [*words, "--help"], terminal_width=100)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "  Examples:" in lines or "Examples:" in lines, result.output
    examples = lines[lines.index(next(line for line in lines if line.strip() == "Examples:")) + 1:]
    shown = [line.strip() for line in examples if line.strip().startswith(("kubectl gpu", "kubectl-gpu", "source <",
                                                                           "kubectl get", "helm "))]
    assert shown, result.output
    # The examples run the command they are the help of.
    if words:
        assert any(words[-1] in line.split("#")[0].split() for line in shown), shown


# ----------------------------------------------------------------- -f and -R

@pytest.fixture
def manifests(tmp_path):
    """apps/svc.yaml and apps/gpu/pod.yaml: one manifest at the top, one a directory down."""
    (tmp_path / "apps" / "gpu").mkdir(parents=True)
    (tmp_path / "apps" / "svc.yaml").write_text(SERVICE)
    (tmp_path / "apps" / "gpu" / "pod.yaml").write_text(POD)
    return tmp_path / "apps"


def kinds(output: str) -> list[str]:
    return sorted(d["kind"] for d in docs(output))


def test_filename_flags_read_what_kubectl_apply_reads(manifests):
    """kubectl apply -f: files, `-` for stdin, repeatable; a directory's own files, its subdirectories
    only with -R (k8s.io/cli-runtime resource.FileVisitor: a subdirectory is skipped unless recursive)."""
    pod, svc = str(manifests / "gpu" / "pod.yaml"), str(manifests / "svc.yaml")
    assert migrate("-f", pod, "-f", svc).stdout == migrate(pod, svc).stdout
    assert migrate("--filename", pod).stdout == migrate(pod).stdout
    assert migrate("-f", "-", stdin=POD).stdout == migrate(pod).stdout
    assert kinds(migrate("-f", str(manifests)).stdout) == ["Service"]
    assert kinds(migrate("-f", str(manifests), "-R").stdout) == ["Pod", "ResourceClaimTemplate", "Service"]
    assert kinds(migrate("-f", str(manifests), "--recursive").stdout) == kinds(migrate(str(manifests)).stdout)
    # A DIR argument keeps reading its subdirectories, as it always has.
    assert kinds(migrate(str(manifests)).stdout) == ["Pod", "ResourceClaimTemplate", "Service"]


def test_an_empty_file_name_is_refused_not_read_as_the_current_directory(manifests, monkeypatch):
    """`migrate "$DIR" --in-place` with DIR unset must not rewrite everything under the working
    directory: kubectl refuses `-f ''` ("error: must specify one of -f and -k"), and so does migrate,
    saying what to change."""
    monkeypatch.chdir(manifests / "gpu")
    for args in (("",), ("-f", ""), ("", "--in-place"), ("-f", "", "-f", "pod.yaml")):
        result = migrate(*args)
        assert result.exit_code == 2, (args, result.output)
        assert "an empty file name" in result.stderr and "Traceback" not in result.output
        assert (manifests / "gpu" / "pod.yaml").read_text() == POD


def test_recursive_without_a_filename_is_a_usage_error(manifests):
    result = migrate(str(manifests), "-R")
    assert result.exit_code == 2 and "-R reads the directories -f names" in result.stderr


def test_from_cluster_with_a_filename_reads_the_file_against_the_clusters_profile():
    from kubectl_gpu.cli.main import _has_inputs

    assert _has_inputs(["--from-cluster", "-f", "k8s/"])
    assert _has_inputs(["--from-cluster", "--filename=k8s/"])
    assert _has_inputs(["-fk8s/", "--from-cluster"])
    assert not _has_inputs(["--from-cluster", "-A"])


@needs_kubectl
def test_kubectl_runs_migrate_with_filename_and_recursive(plugin_path, manifests):  # noqa: F811
    result = kubectl(plugin_path, "gpu", "migrate", "-R", "-f", str(manifests), "--check")
    assert result.returncode == 1, result.stderr  # the pod would change
    assert "gpu/pod.yaml" in result.stderr


# ----------------------------------------------------------------- migrate nodes -l

def test_migrate_nodes_takes_kubectls_label_selectors(cluster):
    """-l picks the device-plugin GPU nodes with these labels, in every form kubectl's selectors take
    (the API server reads them: =, ==, !=, in, notin, key, !key), and checks them as one wave."""
    from tests.test_fleet_operations import _switchable_node

    node = _switchable_node(cluster)
    by_name = cluster.kubectl_gpu("migrate", "nodes", node, "--dry-run=client")
    others = ",".join(n for n in ("legacy-1", "legacy-2", "legacy-3", "legacy-4", "dra-1") if n != node)
    for selector in (f"kubernetes.io/hostname={node}", f"kubernetes.io/hostname=={node}",
                     f"kubernetes.io/hostname in ({node})", f"kubernetes.io/hostname notin ({others})",
                     f"kubernetes.io/hostname,kubernetes.io/hostname notin ({others})"):
        assert cluster.kubectl_gpu("migrate", "nodes", "-l", selector, "--dry-run=client") == by_name, selector
    # !key and != : legacy-1 alone carries probe=yes; the already-DRA node is never picked.
    output = cluster.kubectl_gpu("migrate", "nodes", "--selector", "probe", "--dry-run=client", expect=None)
    assert "node/legacy-1: would be cordoned" in output and not any(f"legacy-{i}" in output for i in (2, 3, 4))
    output = cluster.kubectl_gpu("migrate", "nodes", "-l", "!probe,probe!=yes", "--dry-run=client", expect=1)
    assert "nothing was changed on legacy-2, legacy-3, legacy-4" in output  # too many at once: refused


def test_migrate_nodes_selector_errors_are_kubectls(cluster):
    output = cluster.kubectl_gpu("migrate", "nodes", "legacy-4", "-l", "pool=a", expect=2)
    assert output.startswith("error: cannot specify both a node name and a --selector option\n")
    output = cluster.kubectl_gpu("migrate", "nodes", "-l", "pool in (", expect=2)
    assert output.startswith("error: -l 'pool in (':") and "unable to parse requirement" in output
    output = cluster.kubectl_gpu("migrate", "nodes", "-l", "pool=none")
    assert output == "nothing to switch: no device-plugin GPU node has the labels 'pool=none'\n"


# ----------------------------------------------------------------- completion of names

@needs_kubectl
def test_kubectl_completes_namespaces_nodes_and_workloads(plugin_path, k8s_double):  # noqa: F811
    """Through kubectl's plugin completion (kubectl_complete-gpu, kubectl 1.26+): `-n <TAB>` lists
    namespaces, `migrate nodes <TAB>` nodes, `rollback <TAB>` KIND/ then the names of that kind in
    the namespace typed so far (Cobra's NoSpace directive after a KIND/, so the name follows)."""
    k8s_double.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "serving"}},
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
                    b.node("gpu-1", legacy={"nvidia.com/gpu": "4"}), b.node("gpu-2", legacy={"nvidia.com/gpu": "4"}),
                    b.dra_node("dra-a"),
                    b.deployment("infer", "serving"), b.deployment("web", "serving"), b.deployment("train", "ml"))
    env = dict(plugin_path, KUBECONFIG=k8s_double.kubeconfig_path())

    def completions(*words: str) -> tuple[list[str], str]:
        result = kubectl(env, "__complete", "gpu", *words)
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        return [line.split("\t")[0] for line in lines if not line.startswith(":")], \
            next(line for line in lines if line.startswith(":"))

    assert "serving" in completions("describe", "-n", "")[0] and "ml" in completions("-n", "")[0]
    assert completions("rollback", "-n", "s")[0] == ["serving"]
    assert completions("migrate", "--from-cluster", "--namespace", "m")[0] == ["ml"]
    assert completions("migrate", "nodes", "gpu")[0] == ["gpu-1", "gpu-2"]
    kinds, directive = completions("rollback", "d")
    assert kinds == ["daemonset/", "deployment/"] and directive == ":6"  # NoSpace | NoFileComp
    assert completions("rollback", "-n", "serving", "deployment/")[0] == ["deployment/infer", "deployment/web"]
    assert completions("-n", "ml", "rollback", "deployment/t")[0] == ["deployment/train"]
    assert completions("rollback", "node/d")[0] == ["node/dra-a"]
    # kubectl's names for a kind (short name, plural, group-qualified) complete as the kind does.
    assert completions("rollback", "-n", "serving", "deploy/")[0] == ["deploy/infer", "deploy/web"]
    assert completions("rollback", "-n", "serving", "deployments.apps/i")[0] == ["deployments.apps/infer"]


def test_every_command_that_talks_to_a_cluster_takes_kubectls_global_flags():
    """kubectl's global flags a plugin gets (GLOBAL_FLAGS) are flags of every command that reads a
    cluster, so `kubectl gpu --request-timeout 5s rollback` means what it says; -n is refused only
    where no namespace means anything (migrate nodes: nodes have none)."""
    import importlib

    from kubectl_gpu.cli.main import GLOBAL_FLAGS

    for module in ("describe", "doctor", "explain", "plan", "migrate_cluster", "migrate_nodes", "rollback"):
        command = importlib.import_module(f"kubectl_gpu.cli.{module}").command
        wanted = set(GLOBAL_FLAGS) - ({"namespace"} if module == "migrate_nodes" else set())
        assert wanted <= {p.name for p in command.params}, module


def test_request_timeout_bounds_the_fleet_commands_reads(cluster):
    output = cluster.kubectl_gpu("--request-timeout", "soon", "rollback", expect=2)
    assert "'soon' is not a duration" in output
    # client-go's clientcmd.ParseTimeout (kubernetes/kubernetes staging/src/k8s.io/client-go/tools/
    # clientcmd/helpers.go at ad139a23b1563f7fbd23a28b1bdf30d9657ddbbe) takes a whole number of seconds
    # (strconv.ParseInt) or a Go duration, nothing else: no float spellings, no infinity.
    for text in ("nan", "inf", "1e400", "1.5", "3000000h"):
        assert "is not a duration" in cluster.kubectl_gpu("--request-timeout", text, "rollback", expect=2), text
    assert "nothing to roll back" in cluster.kubectl_gpu("--request-timeout", "30s", "rollback")


def test_migrate_from_cluster_takes_kubectls_label_selectors(cluster):
    """-l narrows migrate --from-cluster to the workloads with these labels, in kubectl's syntax
    (the API server reads it), where it took only KEY=VALUE terms before."""
    from kubectl_gpu.fleet.cluster_io import send

    for plural, name, tier in (("deployments", "infer", "gpu"), ("statefulsets", "store", "gpu"),
                               ("deployments", "web", "web")):
        send(cluster.api, "PATCH", f"/apis/apps/v1/namespaces/serving/{plural}/{name}",
             {"metadata": {"labels": {"tier": tier}}}, content_type="application/merge-patch+json")
    refs = ("Deployment/serving/infer", "StatefulSet/serving/store", "Deployment/serving/web")

    def said(output: str) -> set[str]:  # the workloads a line starts with (not "owned by Deployment/...")
        return {ref for ref in refs for line in output.splitlines() if line.strip().startswith(f"{ref}:")}

    def shown(selector: str) -> set[str]:
        return said(cluster.kubectl_gpu("migrate", "--from-cluster", "-A", "-l", selector, "--dry-run=client"))

    assert said(cluster.kubectl_gpu("migrate", "--from-cluster", "-A", "--dry-run=client")) == set(refs)
    assert shown("tier=gpu") == shown("tier in (gpu)") == shown("tier,tier!=web") == set(refs[:2])
    assert shown("tier notin (gpu),tier") == {refs[2]}
    assert shown("!tier") == set()
    output = cluster.kubectl_gpu("migrate", "--from-cluster", "-A", "-l", "tier in (", expect=2)
    assert output.startswith("error: -l 'tier in (':")


# ----------------------------------------------------------------- version

@needs_kubectl
def test_version_and_the_version_flag_say_the_same_through_kubectl(plugin_path):  # noqa: F811
    """`kubectl gpu version` (as `kubectl version`) and `kubectl gpu --version` print the one version."""
    from importlib.metadata import version

    expected = f"kubectl-gpu {version('kubectl-gpu')}\n"
    for args in (["version"], ["--version"]):
        result = kubectl(plugin_path, "gpu", *args)
        assert result.returncode == 0 and result.stdout == expected, (args, result.stdout, result.stderr)
    typo = kubectl(plugin_path, "gpu", "versoin")
    assert typo.returncode == 2 and "Did you mean this?\n\tversion" in typo.stderr


# ----------------------------------------------------------------- -l says what it selects

@pytest.mark.parametrize("command,selects", [
    (["describe"], "nodes"), (["describe", "node"], "nodes"), (["doctor"], "nodes"), (["plan"], "nodes"),
    (["describe", "pod"], "pods"), (["explain"], "pods"), (["describe", "claim"], "ResourceClaims"),
])
def test_each_selector_flag_says_which_objects_it_selects(command, selects):
    """-l narrows nodes for the node views, doctor and plan, pods for describe pod and explain: its
    help names them, with an example that selects them (plan -l app=web would select no node)."""
    result = CliRunner().invoke(main, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if "-l, --selector" in line)
    assert f"Label selector of the {selects}" in line, line
