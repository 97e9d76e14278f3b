"""How every `kubectl gpu` command talks to the cluster, as kubectl does: kubeconfig loading and
merging, --request-timeout, RBAC-limited users, exit codes, Ctrl-C.  Against the HTTP API double
with the real kubernetes client."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kubectl_gpu.cli import exits
from kubectl_gpu.cli.main import SUBCOMMANDS, main
from tests import builders as b
from tests.k8sdouble import K8sDouble

REPO = Path(__file__).resolve().parent.parent


def invoke(*args: str, env: dict[str, str | None] | None = None):
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def kubeconfig(server: str, *, context: str = "ctx", cluster: str = "c", user: dict | None = None,
               namespace: str = "default", current: str | None = "ctx", **extra) -> dict:
    doc = {"apiVersion": "v1", "kind": "Config",
           "clusters": [{"name": cluster, "cluster": {"server": server, **extra}}],
           "users": [{"name": "u", "user": user or {"token": "t"}}],
           "contexts": [{"name": context, "context": {"cluster": cluster, "user": "u", "namespace": namespace}}]}
    if current:
        doc["current-context"] = current
    return doc


def write(path: Path, doc: dict | str) -> str:
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return str(path)


@pytest.fixture
def gpu_cluster(k8s_double):
    k8s_double.seed(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
        *b.nvidia_device_classes(), b.dra_node("dra-a"), b.gpu_slice("dra-a", 2),
        b.node("legacy-1", legacy={"nvidia.com/gpu": "4"}),
        b.pod("old-job", "ml", node_name="legacy-1", limits={"nvidia.com/gpu": 2}),
    )
    return k8s_double


# ----------------------------------------------------------------------------- kubeconfig


def test_kubeconfig_list_is_merged_first_file_wins_as_kubectl_does(gpu_cluster, tmp_path):
    """client-go clientcmd/loader.go: every file of $KUBECONFIG is merged; the first file to set a
    map key (a context, cluster or user name) or current-context wins.  Here the first file only
    chooses the context, the second defines it, and a third defines the same names again wrongly."""
    first = write(tmp_path / "a.yaml", {"apiVersion": "v1", "kind": "Config", "current-context": "ctx"})
    second = write(tmp_path / "b.yaml", kubeconfig(gpu_cluster.url, namespace="ml", current="other"))
    third = write(tmp_path / "c.yaml", kubeconfig("http://127.0.0.1:9", current="ctx"))
    missing = str(tmp_path / "not-there.yaml")  # kubectl skips files that do not exist
    env = {"KUBECONFIG": os.pathsep.join([missing, first, second, third])}
    result = invoke("describe", "pod", "-o", "json", env=env)
    assert result.exit_code == 0, result.output
    assert [p["name"] for p in json.loads(result.stdout)["items"]] == ["old-job"]  # the context's namespace


def test_exec_credential_plugin_supplies_the_token(tmp_path):
    """client.authentication.k8s.io ExecCredential: the library's loader runs the plugin and sends
    its token (kubectl's `users[].user.exec`)."""
    plugin = tmp_path / "credential.py"
    plugin.write_text(textwrap.dedent("""\
        import json
        print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                          "status": {"token": "from-exec"}}))
    """))
    with K8sDouble(token="from-exec") as double:
        double.seed(b.dra_node("dra-a"), *b.nvidia_device_classes(), b.gpu_slice("dra-a", 1))
        user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
                         "args": [str(plugin)], "interactiveMode": "Never"}}
        path = write(tmp_path / "kc.yaml", kubeconfig(double.url, user=user))
        result = invoke("describe", "-o", "json", "--kubeconfig", path)
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["totals"]["gpus"] == 1


@pytest.mark.parametrize("text, says", [
    ("clusters: [\n  - name: x\n   bad indent", "is not valid YAML at line"),
    ("", "is empty"),
    ("- a list\n", "is not a mapping"),
    ("contexts: nope\n", "contexts must be a list"),
])
def test_a_malformed_kubeconfig_is_one_line_saying_what_to_fix(tmp_path, text, says):
    path = write(tmp_path / "broken.yaml", text)
    for args, env in ((["--kubeconfig", path], None), ([], {"KUBECONFIG": path})):
        result = invoke("describe", *args, env=env)
        assert result.exit_code == exits.USAGE
        assert result.output.count("\n") == 1 and result.output.startswith("error: kubeconfig ")
        assert path in result.output and says in result.output


def test_empty_kubeconfig_variable_falls_back_to_the_default_file_and_says_so(tmp_path):
    """An empty $KUBECONFIG counts as unset (client-go's loading rules): ~/.kube/config is read."""
    result = invoke("doctor", env={"KUBECONFIG": "", "HOME": str(tmp_path), "KUBERNETES_SERVICE_HOST": None})
    assert result.exit_code == exits.USAGE
    assert result.output == ("error: no kubeconfig: KUBECONFIG is empty and ~/.kube/config does not exist; "
                             "pass --kubeconfig FILE or set KUBECONFIG\n")


def test_kubeconfig_list_of_missing_files_names_them(tmp_path):
    value = os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "b")])
    result = invoke("describe", env={"KUBECONFIG": value})
    assert result.exit_code == exits.USAGE and f"KUBECONFIG={value}" in result.output


def test_unknown_context_lists_the_contexts_there(gpu_cluster, tmp_path):
    path = write(tmp_path / "kc.yaml", kubeconfig(gpu_cluster.url, current=None))
    no_current = invoke("describe", "--kubeconfig", path)
    assert no_current.exit_code == exits.USAGE and "sets no current-context; pass --context NAME (contexts: ctx)" \
        in no_current.output
    assert invoke("describe", "--kubeconfig", path, "--context", "ctx").exit_code == 0


# ------------------------------------------------------------------------ request timeout


def test_a_server_that_never_answers_is_named_after_the_request_timeout_without_retries(gpu_cluster):
    """kubectl --request-timeout: 'The length of time to wait before giving up on a single server
    request'.  The client's urllib3 retries (3 by default) must not multiply it."""
    fault = gpu_cluster.fail("list", "nodes", status="timeout", seconds=5, times=None)
    result = invoke("describe", "--kubeconfig", gpu_cluster.kubeconfig_path(), "--request-timeout", "1s")
    assert result.exit_code == exits.UNREACHABLE
    assert result.output == (f"error: the API server {gpu_cluster.url} did not answer GET /api/v1/nodes within "
                             "1s (--request-timeout); check that it is up and reachable, or raise "
                             "--request-timeout\n")
    assert fault.hits == 1  # asked once: no hidden retries


@pytest.mark.parametrize("value", ["soon", "-1", "1x", "1m-2s"])
def test_request_timeout_takes_kubectl_durations(gpu_cluster, value):
    result = invoke("describe", "--kubeconfig", gpu_cluster.kubeconfig_path(), "--request-timeout", value)
    assert result.exit_code == exits.USAGE and "--request-timeout" in result.output


@pytest.mark.parametrize("value", ["0", "30", "1m30s", "500ms", "2h"])
def test_request_timeout_accepts_what_kubectl_accepts(gpu_cluster, value):
    result = invoke("describe", "--kubeconfig", gpu_cluster.kubeconfig_path(), "--request-timeout", value)
    assert result.exit_code == 0, result.output


# ---------------------------------------------------------------------------------- RBAC


def test_namespaced_user_sees_what_they_may_and_is_told_what_is_missing(gpu_cluster):
    """A user with only a Role in "ml": every cluster-wide list answers 403.  describe shows the
    pods of the namespace (and their legacy requests), and says what it could not read and which
    permission would show it, as doctor does for the checks it skips."""
    for plural in ("nodes", "pods", "resourceclaims", "resourceslices", "deviceclasses"):
        gpu_cluster.fail("list", plural, status=403, times=None, namespace="", reason="Forbidden",
                         message=f"{plural} is forbidden: User \"dev\" cannot list resource \"{plural}\"")
    path = gpu_cluster.kubeconfig_path(namespace="ml")

    pod = invoke("describe", "pod", "old-job", "-o", "json", "--kubeconfig", path)
    assert pod.exit_code == 0, pod.output
    assert json.loads(pod.stdout)["legacyRequests"][0]["resource"] == "nvidia.com/gpu"
    warnings = [line for line in pod.stderr.splitlines() if line.startswith("warning: ")]
    assert any("resourceslices.resource.k8s.io across the cluster" in w and
               "a ClusterRole granting list on resourceslices.resource.k8s.io would show it" in w for w in warnings)
    assert any("resourceclaims.resource.k8s.io" in w and 'only namespace "ml" was read' in w for w in warnings)

    summary = invoke("describe", "--kubeconfig", path)
    assert summary.exit_code == 0, summary.output
    assert "No GPU nodes found." in summary.stdout
    assert "forbidden to list nodes across the cluster" in summary.stderr
    assert "a ClusterRole granting list on nodes would show it" in summary.stderr


def test_forbidden_object_the_command_needs_exits_5(gpu_cluster):
    gpu_cluster.fail("get", "pods", status=403, times=None, message="pods \"old-job\" is forbidden")
    result = invoke("describe", "pod", "old-job", "-n", "ml", "--kubeconfig", gpu_cluster.kubeconfig_path())
    assert result.exit_code == exits.FORBIDDEN and "HTTP 403" in result.output


# ------------------------------------------------------------------------ exit codes, help


def _all_commands():
    yield []
    for name in SUBCOMMANDS:
        yield [name]
    for sub in ("node", "pod", "claim"):
        yield ["describe", sub]


@pytest.mark.parametrize("path", list(_all_commands()), ids=lambda p: " ".join(p) or "kubectl-gpu")
def test_every_help_shows_the_one_exit_code_table(path):
    result = invoke(*path, "--help")
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert " ".join(exits.TABLE.replace("\b", "").split()) in text


def test_usage_errors_exit_2():
    assert invoke("describe", "--output", "nope").exit_code == exits.USAGE
    assert invoke("no-such-command").exit_code == exits.USAGE


def _cli(*args: str, **kwargs):
    env = {**os.environ, "PYTHONPATH": str(REPO), "HOME": kwargs.pop("home", os.environ.get("HOME", "")),
           **kwargs.pop("env", {})}
    return subprocess.Popen([sys.executable, "-m", "kubectl_gpu.cli.main", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def test_usage_lines_say_kubectl_gpu():
    """kubectl runs plugin `kubectl-gpu` when a user types `kubectl gpu`; usage says the latter."""
    out, _ = _cli("describe", "--help").communicate(timeout=60)
    assert out.startswith("Usage: kubectl gpu describe [OPTIONS]")


# Ctrl-C pressed while the process first imports MODULE: a finder placed first on sys.meta_path
# of the child (through sitecustomize) sends the SIGINT to its own process once, then steps aside.
_INTERRUPT_ON_IMPORT = """
import os, signal, sys

class _CtrlC:
    def find_spec(self, name, path=None, target=None):
        if name == os.environ["CTRL_C_ON_IMPORT"]:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, _CtrlC())
"""


@pytest.mark.parametrize(("held", "on_import", "after"), [
    ("nodes", None, 0.0), ("resourceslices", None, 0.05), ("resourceclaims", None, 0.1), ("pods", None, 0.2),
    ("nodes", "kubectl_gpu.inspect.tables", 0.0),  # describe's own modules
    ("nodes", "kubectl_gpu.k8s.blocking_transport", 0.0),  # the client's transport, loaded lazily
    ("nodes", "kubectl_gpu.cli.describe", 0.0),  # the command, loaded by the group
])
def test_ctrl_c_exits_130_at_once(gpu_cluster, tmp_path, held, on_import, after):
    """Shells report a command killed by SIGINT as 128 + 2 (bash(1), EXIT STATUS), and a Ctrl-C
    ends it at once wherever it lands: while one list is held on a worker thread (up to
    --request-timeout) and the others are answered or still parsed, or in the middle of an import.
    An interrupt inside an import used to come out as an ImportError (an `except` clause imported
    the half-loaded module again) or as click's 'Aborted!' (exit 1); the normal shutdown that
    followed then waited for the request still held."""
    gpu_cluster.fail("list", held, status="timeout", seconds=60, times=None)
    env = {}
    if on_import:
        (tmp_path / "sitecustomize.py").write_text(_INTERRUPT_ON_IMPORT)
        env = {"PYTHONPATH": f"{REPO}{os.pathsep}{tmp_path}", "CTRL_C_ON_IMPORT": on_import}
    process = _cli("describe", "--kubeconfig", gpu_cluster.kubeconfig_path(), env=env)
    try:
        if not on_import:
            while gpu_cluster.count(verb="list", resource=held) == 0:
                assert process.poll() is None, process.communicate()
                time.sleep(0.01)
            time.sleep(after)
            process.send_signal(signal.SIGINT)
        assert process.wait(timeout=20) == exits.INTERRUPTED, process.stderr.read()
        assert "Traceback" not in process.stderr.read()
    finally:
        process.kill()
        process.communicate()


def test_inventory_codes_are_the_tables():
    from kubectl_gpu.inventory.failures import ExitCode

    assert (ExitCode.OK, ExitCode.USAGE, ExitCode.PARTIAL) == (exits.OK, exits.USAGE, exits.NOT_MIGRATED)
    assert (ExitCode.NO_NVML_LIBRARY, ExitCode.NO_GPU, ExitCode.NVML_FAILED) == (
        exits.NO_NVML_LIBRARY, exits.NO_GPU, exits.NVML_FAILED)


class _TlsFront:
    """HTTPS in front of the API double (which speaks plain HTTP): TLS ends here, bytes go on."""

    def __init__(self, port: int, cert: Path, key: Path) -> None:
        import socket
        import ssl
        import threading

        self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._context.load_cert_chain(str(cert), str(key))
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._target = port
        self._socket, self._threading = socket, threading
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            self._threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client) -> None:
        try:
            tls = self._context.wrap_socket(client, server_side=True)
            upstream = self._socket.create_connection(("127.0.0.1", self._target))
        except OSError:
            client.close()
            return
        for source, sink in ((tls, upstream), (upstream, tls)):
            self._threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source, sink) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                try:
                    end.close()
                except OSError:
                    pass

    def close(self) -> None:
        self._server.close()


def test_insecure_skip_tls_verify_is_honoured_without_urllib3_warnings(gpu_cluster, webhook_certs, tmp_path):
    """kubeconfig `insecure-skip-tls-verify: true` (a self-signed API server): the library's loader
    turns verification off, and the command prints its report, not one InsecureRequestWarning per
    request."""
    front = _TlsFront(int(gpu_cluster.url.rsplit(":", 1)[1]), webhook_certs.cert, webhook_certs.key)
    try:
        server = f"https://127.0.0.1:{front.port}"
        path = write(tmp_path / "kc.yaml", kubeconfig(server, **{"insecure-skip-tls-verify": True}))
        env = {**os.environ, "PYTHONPATH": str(REPO), "KUBECONFIG": path}
        result = subprocess.run([sys.executable, "-m", "kubectl_gpu.cli.main", "describe", "-o", "json"],
                                env=env, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["totals"]["gpus"] == 2
        assert result.stderr == ""
        strict = write(tmp_path / "strict.yaml", kubeconfig(server))
        refused = invoke("describe", "--kubeconfig", strict)
        assert refused.exit_code == exits.UNREACHABLE and "CERTIFICATE_VERIFY_FAILED" in refused.output
    finally:
        front.close()


@pytest.mark.parametrize("cluster, user, current, says", [
    ({"tls-server-name": [1, 2]}, None, "ctx", "clusters[0].cluster.tls-server-name must be a string"),
    ({"insecure-skip-tls-verify": 0.5}, None, "ctx", "clusters[0].cluster.insecure-skip-tls-verify must be true or false"),
    ({"proxy-url": {"url": "http://p"}}, None, "ctx", "clusters[0].cluster.proxy-url must be a string"),
    ({}, {"token": ["a"]}, "ctx", "users[0].user.token must be a string"),
    ({}, {"exec": "aws eks get-token"}, "ctx", "users[0].user.exec must be a mapping"),
    ({}, {"exec": {"command": "x", "args": "--token"}}, "ctx", "users[0].user.exec.args must be a list of strings"),
    ({}, None, ["ctx"], "current-context must be a string"),
])
def test_a_kubeconfig_field_of_the_wrong_type_is_named(tmp_path, cluster, user, current, says):
    """client-go decodes a kubeconfig into typed structs (clientcmd/api/v1 types.go: Cluster.Server
    string, InsecureSkipTLSVerify bool, AuthInfo.Token string, ExecConfig.Args []string, ...), so
    kubectl refuses a field of another type when it loads the file; so does the plugin, naming it."""
    doc = kubeconfig("https://127.0.0.1:1", user=user, current=None, **cluster)
    doc["current-context"] = current
    path = write(tmp_path / "kc.yaml", doc)
    result = invoke("describe", "--kubeconfig", path)
    assert result.exit_code == exits.USAGE, result.output
    assert says in result.output and path in result.output, result.output


def test_client_tls_material_that_cannot_be_loaded_is_named_not_a_traceback(tmp_path):
    """A user's client-certificate-data that is no PEM certificate (a truncated copy, the wrong
    field pasted) stops kubectl with "tls: failed to find any PEM data"; here it is a usage error
    naming the context and the fields to check."""
    import base64

    user = {"client-certificate-data": base64.b64encode(b"not a certificate").decode(),
            "client-key-data": base64.b64encode(b"not a key").decode()}
    path = write(tmp_path / "kc.yaml", kubeconfig("https://127.0.0.1:1", user=user))
    result = invoke("describe", "--kubeconfig", path)
    assert result.exit_code == exits.USAGE, result.output
    assert "context 'ctx'" in result.output and "client-certificate" in result.output, result.output


def test_a_socks5_proxy_that_is_down_is_an_unreachable_server_not_a_traceback(tmp_path):
    """proxy-url socks5://... (an `ssh -D` tunnel that is not running): kubectl says it cannot
    connect; so does every command of the plugin, with the exit code for an unreachable cluster."""
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    path = write(tmp_path / "kc.yaml", kubeconfig("https://127.0.0.1:1", **{"proxy-url": f"socks5://127.0.0.1:{port}"}))
    for command in (["describe"], ["explain", "-A"], ["doctor"]):
        result = invoke(*command, "--kubeconfig", path)
        assert result.exit_code == exits.UNREACHABLE, (command, result.output)
        assert "proxy" in result.output, (command, result.output)
