"""The kubeconfig read as kubectl reads it, without the kubernetes package: what each field of a
cluster and user makes every request carry, exec credential plugins, the in-cluster service
account.

References (kubernetes/client-go@32ce75a7d6bc6960fd048d3d1e3b34185418d8c8): tools/clientcmd/loader.go
(merging, `ResolveLocalPaths`: relative files are relative to the kubeconfig naming them, an exec
command only when it holds a path separator), tools/clientcmd/client_config.go (token before
tokenFile, --cluster/--user overrides), plugin/pkg/client/auth/exec/exec.go (KUBERNETES_EXEC_INFO,
interactiveMode, the ExecCredential answer and its errors), and the Kubernetes documentation,
"client-go credential plugins" (https://kubernetes.io/docs/reference/access-authn-authz/authentication/).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from kubectl_gpu.k8s import KubeconfigError, connect, load_access
from kubectl_gpu.k8s import access as access_module
from kubectl_gpu.k8s import kubeconfig as kubeconfig_module
from kubectl_gpu.k8s.errors import CredentialPluginError
from kubectl_gpu.k8s.exec_credential import ExecPlugin
from kubectl_gpu.k8s.kubeconfig_files import read_kubeconfig
from tests.k8sdouble import K8sDouble

REPO = Path(__file__).resolve().parent.parent
V1 = "client.authentication.k8s.io/v1"


def write_kubeconfig(path: Path, server: str, user: dict, **cluster: object) -> str:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "c", "cluster": {"server": server, **cluster}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "ml"}}]}))
    return str(path)


def plugin_script(folder: Path, body: str) -> str:
    """A credential plugin in Python that records the KUBERNETES_EXEC_INFO it got, then runs `body`."""
    script = folder / "plugin.py"
    script.write_text(textwrap.dedent(f"""\
        import json, os, sys
        with open({str(folder / 'calls.jsonl')!r}, "a") as log:
            log.write(os.environ["KUBERNETES_EXEC_INFO"] + "\\n")
    """) + textwrap.dedent(body))
    return str(script)


def calls(folder: Path) -> list[dict]:
    log = folder / "calls.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def credential(token: str, expires: str | None = None, version: str = V1) -> str:
    status = {"token": token, **({"expirationTimestamp": expires} if expires else {})}
    return f"print(json.dumps({{'apiVersion': {version!r}, 'kind': 'ExecCredential', 'status': {status!r}}}))\n"


def test_describe_loads_neither_the_kubernetes_package_nor_aiohttp(k8s_double):
    """Importing the kubernetes package costs ~0.5 s, aiohttp with asyncio ~0.25 s: a live command
    reads the kubeconfig without the one and talks to the server without the other."""
    probe = ("import sys\nfrom kubectl_gpu.cli.main import main\n"
             "try:\n    main(['describe', '--kubeconfig', sys.argv[1]], standalone_mode=False)\n"
             "finally:\n    print(sorted({'kubernetes', 'aiohttp', 'asyncio'} & set(sys.modules)), file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", probe, k8s_double.kubeconfig_path()], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().endswith("[]")


# client-go reads a kubeconfig as YAML 1.1 (sigs.k8s.io/yaml over go-yaml), as PyYAML does: `yes` is
# true and `010` is eight.  yaml-rs (YAML 1.2) reads the file where it reads the same objects, which
# spares the command PyYAML's import; everything else is PyYAML's, and so is every error.
KUBECONFIG_TEXT = """\
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://10.0.0.1:6443
    insecure-skip-tls-verify: {insecure}
users:
- name: u
  user:
    token: {token}
contexts:
- name: x
  context: {{cluster: c, user: u, namespace: {namespace}}}
current-context: x
"""


@pytest.mark.parametrize("insecure, token, namespace", [
    ("true", "abc", "ml"),  # yaml-rs reads it
    ("yes", "abc", "ml"), ("On", "abc", "ml"),  # YAML 1.1 booleans: PyYAML reads them
    ("false", "'0x1F'", "ml"), ("false", "abc", "'010'"), ("false", "1e3", "ml"), ("false", "a # b", "ml"),
])
def test_a_kubeconfig_reads_as_yaml_1_1_reads_it(tmp_path, insecure, token, namespace):
    path = tmp_path / "config"
    path.write_text(KUBECONFIG_TEXT.format(insecure=insecure, token=token, namespace=namespace))
    assert read_kubeconfig(str(path)) == yaml.safe_load(path.read_text())


@pytest.mark.parametrize("field, value, says", [
    ("namespace", "010", "contexts[0].context.namespace must be a string"),  # 8 in YAML 1.1
    ("token", "0x1F", "users[0].user.token must be a string"),  # 31 in YAML 1.1, a string in 1.2's core schema
])
def test_a_value_yaml_1_1_types_is_refused_as_kubectl_refuses_it(tmp_path, field, value, says):
    path = tmp_path / "config"
    values = {"insecure": "false", "token": "abc", "namespace": "ml", field: value}
    path.write_text(KUBECONFIG_TEXT.format(**values))
    with pytest.raises(KubeconfigError, match=re.escape(f"kubeconfig {path}: {says}")):
        read_kubeconfig(str(path))


def test_an_ordinary_kubeconfig_is_read_without_loading_pyyaml(tmp_path):
    path = tmp_path / "config"
    path.write_text(KUBECONFIG_TEXT.format(insecure="false", token="abc", namespace="ml"))
    code = ("import sys\nfrom kubectl_gpu.k8s.kubeconfig_files import read_kubeconfig\n"
            "config = read_kubeconfig(sys.argv[1])\nprint(config['users'][0]['user']['token'], 'yaml' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["abc", "False"], done.stderr


def test_a_token_file_is_relative_to_its_kubeconfig_and_read_again_after_a_minute(tmp_path, monkeypatch):
    with K8sDouble(token="first") as double:
        (tmp_path / "token").write_text("first\n")  # kubectl trims a token file's whitespace
        path = write_kubeconfig(tmp_path / "kc.yaml", double.url, {"tokenFile": "token"})
        clock = [0.0]
        monkeypatch.setattr(access_module, "_monotonic", lambda: clock[0])
        connection = connect(path)
        try:
            assert connection.api.get_json("/api/v1/namespaces/default")["metadata"]["name"] == "default"
            (tmp_path / "token").write_text("second")
            double.token = "second"
            clock[0] = 59.0  # still the token read a minute ago
            assert connection.api.configuration.auth_headers() == {"Authorization": "Bearer first"}
            clock[0] = 60.0
            assert connection.api.get_json("/api/v1/namespaces/default")["metadata"]["name"] == "default"
        finally:
            connection.close()


def test_a_token_wins_over_a_token_file_as_in_client_go(tmp_path):
    path = write_kubeconfig(tmp_path / "kc.yaml", "http://127.0.0.1:1", {"token": "inline", "tokenFile": "nope"})
    access, namespace, context = load_access(path)
    assert access.auth_headers() == {"Authorization": "Bearer inline"}
    assert (namespace, context) == ("ml", "x")


def test_username_and_password_are_basic_auth(tmp_path):
    path = write_kubeconfig(tmp_path / "kc.yaml", "http://127.0.0.1:1", {"username": "ada", "password": "pw"})
    access, _, _ = load_access(path)
    assert access.auth_headers() == {"Authorization": "Basic " + base64.b64encode(b"ada:pw").decode()}


def test_cluster_and_user_overrides_replace_the_contexts_own(tmp_path):
    """kubectl --cluster/--user: the context's namespace stays, its cluster and user are replaced."""
    path = tmp_path / "kc.yaml"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "a", "cluster": {"server": "https://a:6443"}},
                     {"name": "b", "cluster": {"server": "https://b:6443/"}}],
        "users": [{"name": "u", "user": {"token": "u"}}, {"name": "v", "user": {"token": "v"}}],
        "contexts": [{"name": "x", "context": {"cluster": "a", "user": "u", "namespace": "ml"}}]}))
    access, namespace, _ = load_access(str(path), cluster="b", user="v")
    assert (access.server, access.auth_headers(), namespace) == ("https://b:6443", {"Authorization": "Bearer v"}, "ml")
    with pytest.raises(KubeconfigError, match="--user 'w' is not a user in .* \\(users: u, v\\)"):
        load_access(str(path), user="w")
    with pytest.raises(KubeconfigError, match="names cluster 'z', which is not in"):
        load_access(str(path), cluster="z")


def test_a_missing_certificate_file_names_the_field_and_the_file(tmp_path):
    path = write_kubeconfig(tmp_path / "kc.yaml", "https://127.0.0.1:1", {"token": "t"},
                            **{"certificate-authority": "ca.pem"})
    with pytest.raises(KubeconfigError) as refused:
        connect(path)
    assert f"certificate-authority {tmp_path / 'ca.pem'}: no such file" in str(refused.value)


# ---------------------------------------------------------------------------- exec plugins


def test_an_exec_plugin_gets_kubernetes_exec_info_and_its_token_is_sent(tmp_path):
    script = plugin_script(tmp_path, credential("from-exec"))
    with K8sDouble(token="from-exec") as double:
        user = {"exec": {"apiVersion": V1, "command": sys.executable, "args": [script], "interactiveMode": "Never",
                         "env": [{"name": "EXTRA", "value": "1"}], "provideClusterInfo": True}}
        path = write_kubeconfig(tmp_path / "kc.yaml", double.url, user, **{
            "extensions": [{"name": "client.authentication.k8s.io/exec", "extension": {"audience": "gpu"}}]})
        connection = connect(path)
        try:
            connection.api.get_json("/api/v1/namespaces/default")
            connection.api.get_json("/api/v1/namespaces/default")
        finally:
            connection.close()
        server = double.url
    [info] = calls(tmp_path)  # run once: the token has no expiry
    assert info == {"apiVersion": V1, "kind": "ExecCredential",
                    "spec": {"interactive": False, "cluster": {"server": server, "config": {"audience": "gpu"}}}}


def test_an_expired_exec_token_runs_the_plugin_again(tmp_path):
    script = plugin_script(tmp_path, credential("t", expires="2026-01-01T00:00:00Z"))
    now = [dt.datetime(2025, 12, 31, 23, 59, tzinfo=dt.timezone.utc)]
    plugin = ExecPlugin({"apiVersion": V1, "command": sys.executable, "args": [script], "interactiveMode": "Never"},
                        now=lambda: now[0])
    assert plugin.headers() == {"Authorization": "Bearer t"}
    assert plugin.headers() == {"Authorization": "Bearer t"}
    assert len(calls(tmp_path)) == 1
    now[0] = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    plugin.headers()
    assert len(calls(tmp_path)) == 2


@pytest.mark.parametrize(("config", "body", "says"), [
    ({"apiVersion": V1}, "", "interactiveMode must be specified for client.authentication.k8s.io/v1"),
    ({"apiVersion": "client.authentication.k8s.io/v1alpha1", "interactiveMode": "Never"}, "",
     "is not one kubectl runs"),
    ({"apiVersion": V1, "interactiveMode": "Always"}, "", "standard input is not a terminal"),
    ({"apiVersion": V1, "interactiveMode": "Never"}, "sys.exit(3)\n", "failed with exit code 3"),
    ({"apiVersion": V1, "interactiveMode": "Never"}, "print('not json')\n", "decoding stdout"),
    ({"apiVersion": V1, "interactiveMode": "Never"}, credential("t", version="client.authentication.k8s.io/v1beta1"),
     "plugin returned version client.authentication.k8s.io/v1beta1"),
    ({"apiVersion": V1, "interactiveMode": "Never"},
     "print(json.dumps({'apiVersion': %r, 'kind': 'ExecCredential', 'status': {}}))\n" % V1,
     "didn't return a token or cert/key pair"),
    ({"apiVersion": V1, "interactiveMode": "Never"},
     "print(json.dumps({'apiVersion': %r, 'kind': 'ExecCredential', 'status': {'clientKeyData': 'k'}}))\n" % V1,
     "returned only certificate or key, not both"),
])
def test_a_plugin_that_gives_no_usable_credential_is_one_error_line(tmp_path, config, body, says):
    script = plugin_script(tmp_path, body)
    user = {"exec": {"command": sys.executable, "args": [script], **config}}
    path = write_kubeconfig(tmp_path / "kc.yaml", "http://127.0.0.1:1", user)
    with pytest.raises(KubeconfigError) as refused:
        connect(path)
    assert says in str(refused.value) and "\n" not in str(refused.value)


def test_a_v1beta1_plugin_is_interactive_if_available(tmp_path):
    script = plugin_script(tmp_path, credential("t", version="client.authentication.k8s.io/v1beta1"))
    plugin = ExecPlugin({"apiVersion": "client.authentication.k8s.io/v1beta1", "command": sys.executable,
                         "args": [script]}, is_terminal=lambda: False)
    assert plugin.headers() == {"Authorization": "Bearer t"}
    assert calls(tmp_path)[0]["spec"] == {"interactive": False}


def test_a_missing_plugin_says_so_with_its_install_hint(tmp_path):
    user = {"exec": {"apiVersion": V1, "interactiveMode": "Never", "command": "no-such-credential-plugin",
                     "installHint": "install it with: brew install the-plugin"}}
    path = write_kubeconfig(tmp_path / "kc.yaml", "http://127.0.0.1:1", user)
    with pytest.raises(KubeconfigError) as refused:
        connect(path)
    assert "exec: executable no-such-credential-plugin not found" in str(refused.value)
    assert "brew install the-plugin" in str(refused.value)


def test_an_exec_command_with_a_path_is_relative_to_its_kubeconfig(tmp_path):
    (tmp_path / "bin").mkdir()
    plugin = tmp_path / "bin" / "credential"
    plugin.write_text(f"#!{sys.executable}\n" + textwrap.dedent("""\
        import json
        print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                          "status": {"token": "relative"}}))
    """))
    plugin.chmod(0o755)
    user = {"exec": {"apiVersion": V1, "interactiveMode": "Never", "command": os.path.join("bin", "credential")}}
    path = write_kubeconfig(tmp_path / "kc.yaml", "http://127.0.0.1:1", user)
    access, _, _ = load_access(path)
    assert access.auth_headers() == {"Authorization": "Bearer relative"}


# ------------------------------------------------------------------------------ in-cluster


def test_in_a_pod_the_service_account_is_used(tmp_path, monkeypatch):
    """client-go's rest.InClusterConfig: https://KUBERNETES_SERVICE_HOST:PORT (IPv6 in brackets),
    the service account's token and CA, and its namespace."""
    for name, text in (("token", "sa-token\n"), ("ca.crt", "CA"), ("namespace", "gpu-system\n")):
        (tmp_path / name).write_text(text)
    monkeypatch.setattr(kubeconfig_module, "_SERVICE_ACCOUNT_TOKEN", str(tmp_path / "token"))
    monkeypatch.setattr(kubeconfig_module, "_SERVICE_ACCOUNT_CA", str(tmp_path / "ca.crt"))
    monkeypatch.setattr(kubeconfig_module, "_SERVICE_ACCOUNT_NAMESPACE", str(tmp_path / "namespace"))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config
    monkeypatch.delenv("KUBECONFIG", raising=False)
    access, namespace, context = load_access()
    assert (access.server, namespace, context) == ("https://[fd00::1]:443", "gpu-system", None)
    assert access.auth_headers() == {"Authorization": "Bearer sa-token"}
    assert access.certificate_authority is not None and access.certificate_authority.path == str(tmp_path / "ca.crt")
    (tmp_path / "token").unlink()
    with pytest.raises(KubeconfigError, match="cannot use the in-cluster service account"):
        load_access()


def test_a_plugin_error_is_an_error_not_a_silent_anonymous_request(tmp_path):
    """The kubernetes package logged a failing plugin and went on without credentials (a 401 later);
    kubectl stops with the plugin's error."""
    with pytest.raises(CredentialPluginError):
        ExecPlugin({"apiVersion": V1, "interactiveMode": "Never", "command": "/bin/false"}).credential()


def test_the_cluster_and_user_flags_pick_other_kubeconfig_entries(tmp_path):
    """kubectl --cluster/--user: the context's cluster points nowhere and its user has the wrong
    token; the flags name the working ones."""
    from click.testing import CliRunner
    from kubectl_gpu.cli.main import main

    with K8sDouble(token="sesame") as double:
        path = tmp_path / "kc.yaml"
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "x",
            "clusters": [{"name": "down", "cluster": {"server": "http://127.0.0.1:1"}},
                         {"name": "double", "cluster": {"server": double.url}}],
            "users": [{"name": "nobody", "user": {"token": "wrong"}}, {"name": "me", "user": {"token": "sesame"}}],
            "contexts": [{"name": "x", "context": {"cluster": "down", "user": "nobody"}}]}))
        args = ["describe", "-o", "json", "--kubeconfig", str(path), "--cluster", "double"]
        refused = CliRunner().invoke(main, args)
        assert refused.exit_code != 0 and "401" in refused.output
        result = CliRunner().invoke(main, [*args, "--user", "me"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["kind"] == "GpuClusterSummary"


def test_an_oidc_auth_provider_token_is_sent_through_the_kubernetes_package(tmp_path):
    """`auth-provider` (deprecated in kubectl) is the one case that loads the kubernetes package,
    whose loader checks the id-token's expiry and refreshes it; its token is what requests carry."""
    def b64(doc: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")

    token = f"{b64({'alg': 'none'})}.{b64({'exp': 4102444800, 'sub': 'ada'})}.c2ln"  # expires in 2100
    user = {"auth-provider": {"name": "oidc", "config": {"id-token": token, "client-id": "kubectl"}}}
    path = write_kubeconfig(tmp_path / "kc.yaml", "https://127.0.0.1:6443", user)
    access, _, _ = load_access(path)
    assert {k.lower(): v for k, v in access.auth_headers().items()} == {"authorization": f"Bearer {token}"}
