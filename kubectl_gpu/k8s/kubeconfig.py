"""Connect the way kubectl does: client-go's kubeconfig loading rules, read here without the
kubernetes package (it costs ~0.5 s to import, a third of a `describe` of 1,000 nodes).

Where the configuration comes from (kubernetes/client-go@32ce75a7d6bc6960fd048d3d1e3b34185418d8c8,
tools/clientcmd/loader.go, and `kubectl config --help`; the files are chosen and checked in
kubeconfig_files.py):

- `--kubeconfig FILE`: only that file, which must exist;
- else `$KUBECONFIG`, a list of files separated by `:` (`;` on Windows): every existing file is read
  and merged, the first file to name a cluster, context or user wins, and the first file to set
  `current-context` wins; an empty `$KUBECONFIG` counts as unset;
- else `~/.kube/config`;
- else, inside a pod, the in-cluster service account.

Then the context (`--context`, else current-context), its cluster and user (`cluster`/`user`
overrides as kubectl's --cluster/--user) become a `ClusterAccess` (access.py): server, CA
(certificate-authority-data or the file), client certificate and key (data or files),
insecure-skip-tls-verify, tls-server-name, proxy-url, and the credentials: a token or tokenFile,
an exec credential plugin (exec_credential.py), username and password.  Only a user with an
`auth-provider` (oidc, gcp, azure: deprecated in kubectl) loads the kubernetes package, whose
loader refreshes those tokens.  Every failure is one `KubeconfigError` line naming the file and
what to change.
"""

from __future__ import annotations

import base64
import os
import ssl
from dataclasses import dataclass
from typing import Any

from kubectl_gpu.k8s.access import (BasicAuth, BearerToken, ClusterAccess, Credentials, Pem, TokenFile,
                                    from_kubernetes_configuration)
from kubectl_gpu.k8s.client import REQUEST_TIMEOUT_SECONDS, Client
from kubectl_gpu.k8s.errors import CredentialPluginError, KubeconfigError
from kubectl_gpu.k8s.kubeconfig_files import kubeconfig_paths, no_kubeconfig_message, read_kubeconfig

_SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
_SERVICE_ACCOUNT_NAMESPACE = f"{_SERVICE_ACCOUNT}/namespace"
_SERVICE_ACCOUNT_TOKEN = f"{_SERVICE_ACCOUNT}/token"
_SERVICE_ACCOUNT_CA = f"{_SERVICE_ACCOUNT}/ca.crt"


@dataclass(frozen=True)
class Connection:
    api: Client
    namespace: str  # the context's namespace, "default" when it names none
    context: str | None  # None when running in-cluster
    server: str  # the API server's URL, for messages

    def close(self) -> None:
        self.api.close()


def connect(kubeconfig: str | None = None, context: str | None = None,
            request_timeout: float | None = REQUEST_TIMEOUT_SECONDS, *, cluster: str | None = None,
            user: str | None = None) -> Connection:
    """A client for the chosen context; `request_timeout` (seconds, None = no limit) bounds every
    request, and nothing is retried behind the user's back."""
    configuration, namespace, chosen = load_access(kubeconfig, context, cluster=cluster, user=user)
    # The client (kubectl_gpu.k8s.client) asks once: kubectl does not retry reads either, and a
    # server that never answers must not keep a command silent for several times the timeout.
    try:
        api = Client(configuration, request_timeout)
    except (ssl.SSLError, OSError, ValueError) as exc:  # its TLS context is built here, from the files
        raise KubeconfigError(
            f"cannot use context {chosen!r}: its TLS certificates cannot be loaded ({_one_line(exc)}); check "
            "the cluster's certificate-authority(-data) and the user's client-certificate(-data) and "
            "client-key(-data)") from None
    return Connection(api, namespace, chosen, configuration.server)


def load_access(kubeconfig: str | None = None, context: str | None = None, *, cluster: str | None = None,
                user: str | None = None) -> tuple[ClusterAccess, str, str | None]:
    """The chosen context's access, its namespace ("default" when it names none) and its name
    (None in-cluster), from the kubeconfig files, else the pod's service account."""
    paths, origin = kubeconfig_paths(kubeconfig)
    if paths:
        return _load_kubeconfig(paths, context, cluster, user)
    if os.environ.get("KUBERNETES_SERVICE_HOST") and context is None and kubeconfig is None:
        return _load_in_cluster()
    raise KubeconfigError(no_kubeconfig_message(origin))


def in_cluster_or_kubeconfig(kubeconfig: str | None = None) -> ClusterAccess:
    """A server's access as in-cluster software takes it (the webhook, its clean-up job): the
    service account when running in a pod, else the kubeconfig."""
    try:
        return _load_in_cluster()[0]
    except KubeconfigError:
        return load_access(kubeconfig)[0]


def _load_kubeconfig(paths: list[str], wanted: str | None, cluster_override: str | None = None,
                     user_override: str | None = None) -> tuple[ClusterAccess, str, str | None]:
    """The chosen context's server, TLS and credentials from the merged files (loader.go: the first
    file to name a context, cluster or user, and the first to set current-context, wins)."""
    docs = [read_kubeconfig(p) for p in paths]
    where = paths[0] if len(paths) == 1 else " + ".join(paths)
    merged: dict[str, dict[str, tuple[dict[str, Any], str]]] = {"clusters": {}, "contexts": {}, "users": {}}
    for path, doc in zip(paths, docs):
        folder = os.path.dirname(os.path.abspath(path))
        for key, entries in merged.items():
            for entry in doc.get(key) or ():
                entries.setdefault(entry["name"], (entry.get(key[:-1]) or {}, folder))
    contexts = merged["contexts"]
    current = next((d["current-context"] for d in docs if d.get("current-context")), None)
    name = wanted or current
    if name is None:
        names = ", ".join(contexts) or "none"
        raise KubeconfigError(f"{where} sets no current-context; pass --context NAME (contexts: {names}) "
                              "or run kubectl config use-context NAME")
    if name not in contexts:
        names = ", ".join(contexts) or "none"
        flag = "--context" if wanted else "current-context"
        raise KubeconfigError(f"{flag} {name!r} is not a context in {where} (contexts: {names})")
    context = contexts[name][0]
    cluster_name = cluster_override or context.get("cluster")
    if cluster_name not in merged["clusters"]:
        raise KubeconfigError(f"context {name!r} names cluster {cluster_name!r}, which is not in {where} "
                              f"(clusters: {', '.join(merged['clusters']) or 'none'})")
    user_name = user_override or context.get("user")
    if user_override and user_override not in merged["users"]:
        raise KubeconfigError(f"--user {user_override!r} is not a user in {where} "
                              f"(users: {', '.join(merged['users']) or 'none'})")
    user, user_folder = merged["users"].get(user_name, ({}, ""))  # client-go: an unknown user is anonymous
    cluster, cluster_folder = merged["clusters"][cluster_name]
    try:
        access = _access(cluster, cluster_folder, user, user_folder)
    except (CredentialPluginError, OSError, ValueError) as exc:
        raise KubeconfigError(f"cannot use context {name!r} of {where}: {_one_line(exc)}") from None
    return access, str(context.get("namespace") or "default"), name


def _access(cluster: dict[str, Any], cluster_folder: str, user: dict[str, Any], user_folder: str) -> ClusterAccess:
    """client-go's rest.Config of one cluster and user (tools/clientcmd/client_config.go,
    `ClientConfig`, `getUserIdentificationPartialConfig`, `getServerIdentificationPartialConfig`;
    kubernetes/client-go@32ce75a7d6bc6960fd048d3d1e3b34185418d8c8).  Relative file names are
    relative to the file that names them (loader.go, `ResolveLocalPaths`)."""
    server = str(cluster.get("server") or "").rstrip("/")
    if not server:
        raise ValueError("its cluster has no server; set clusters[].cluster.server to the API server's URL")
    credentials, client_certificate, client_key = _credentials(user, user_folder, cluster, cluster_folder)
    if client_certificate is None:
        client_certificate = _pem(user, "client-certificate", user_folder)
        client_key = _pem(user, "client-key", user_folder)
    return ClusterAccess(
        server=server,
        certificate_authority=_pem(cluster, "certificate-authority", cluster_folder),
        client_certificate=client_certificate,
        client_key=client_key,
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        tls_server_name=cluster.get("tls-server-name") or None,
        proxy=cluster.get("proxy-url") or None,
        credentials=credentials,
    )


def _credentials(user: dict[str, Any], user_folder: str, cluster: dict[str, Any], cluster_folder: str
                 ) -> tuple[Credentials | None, Pem | None, Pem | None]:
    """Who the requests say they are, in the kubernetes package's order (which the client used
    before): auth-provider, token (else tokenFile), exec plugin, username and password.  An exec
    plugin may give a client certificate instead of a token; it is returned beside."""
    if isinstance(user.get("auth-provider"), dict):
        return _auth_provider(user, cluster), None, None
    if user.get("token"):
        return BearerToken(str(user["token"])), None, None
    if user.get("tokenFile"):
        return TokenFile(_resolve(str(user["tokenFile"]), user_folder)), None, None
    if isinstance(user.get("exec"), dict):
        from kubectl_gpu.k8s.exec_credential import ExecPlugin  # and subprocess: only a user with a plugin runs one

        config = dict(user["exec"])
        command = str(config.get("command") or "")
        if os.sep in command:  # loader.go: a command with a path is relative to its kubeconfig
            config["command"] = _resolve(command, user_folder)
        plugin = ExecPlugin(config, _exec_cluster(cluster, cluster_folder))
        first = plugin.credential()  # run now: a plugin that fails is an error before any request
        if first.client_certificate is not None:
            return plugin, Pem(data=first.client_certificate), Pem(data=first.client_key)
        return plugin, None, None
    if user.get("username") or user.get("password"):
        return BasicAuth(str(user.get("username") or ""), str(user.get("password") or "")), None, None
    return None, None, None


def _exec_cluster(cluster: dict[str, Any], folder: str) -> dict[str, Any]:
    """The cluster as an exec plugin with provideClusterInfo gets it (client.authentication.k8s.io
    Cluster: the kubeconfig's fields, the CA always as data, and the plugin's own extension)."""
    out: dict[str, Any] = {"server": cluster.get("server") or ""}
    for key in ("tls-server-name", "insecure-skip-tls-verify", "proxy-url", "disable-compression"):
        if cluster.get(key):
            out[key] = cluster[key]
    authority = _pem(cluster, "certificate-authority", folder)
    if authority is not None:
        data = authority.data if authority.data is not None else authority.text().encode()
        out["certificate-authority-data"] = base64.b64encode(data).decode()
    for extension in cluster.get("extensions") or ():
        if isinstance(extension, dict) and extension.get("name") == "client.authentication.k8s.io/exec":
            out["config"] = extension.get("extension")
    return out


def _auth_provider(user: dict[str, Any], cluster: dict[str, Any]) -> Credentials:
    """`auth-provider` (oidc, gcp, azure): deprecated in kubectl, and rare; the kubernetes
    package's loader has their refresh logic, so only this case loads the package."""
    from kubernetes.client import Configuration
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.kube_config import KubeConfigLoader

    configuration = Configuration()
    config = {"current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
              "clusters": [{"name": "c", "cluster": cluster}], "users": [{"name": "u", "user": user}]}
    try:
        KubeConfigLoader(config_dict=config, active_context="c").load_and_set(configuration)
    except ConfigException as exc:
        raise ValueError(f"auth-provider: {exc}") from None
    return from_kubernetes_configuration(configuration).credentials  # type: ignore[return-value]


def _pem(section: dict[str, Any], key: str, folder: str) -> Pem | None:
    """A kubeconfig's `KEY-data` (base64, wins) or `KEY` (a file)."""
    data = section.get(f"{key}-data")
    if data:
        try:
            return Pem(data=base64.b64decode(str(data), validate=False))
        except ValueError:
            raise ValueError(f"{key}-data is not base64; write the PEM file's base64 there") from None
    path = section.get(key)
    if path:
        resolved = _resolve(str(path), folder)
        if not os.path.isfile(resolved):
            raise ValueError(f"{key} {resolved}: no such file")
        return Pem(path=resolved)
    return None


def _resolve(path: str, folder: str) -> str:
    path = os.path.expanduser(path)
    return path if os.path.isabs(path) or not folder else os.path.normpath(os.path.join(folder, path))


def _load_in_cluster() -> tuple[ClusterAccess, str, str | None]:
    """The pod's service account, as client-go's rest.InClusterConfig reads it: the server from
    KUBERNETES_SERVICE_HOST and _PORT, the token file (read again as the kubelet rotates it) and
    the service CA."""
    host = os.environ.get("KUBERNETES_SERVICE_HOST", "")
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise KubeconfigError("cannot use the in-cluster service account: KUBERNETES_SERVICE_HOST and "
                              "KUBERNETES_SERVICE_PORT must both be set")
    try:
        if not os.path.isfile(_SERVICE_ACCOUNT_CA):
            raise ValueError(f"{_SERVICE_ACCOUNT_CA} does not exist")
        credentials = TokenFile(_SERVICE_ACCOUNT_TOKEN)
    except (OSError, ValueError) as exc:
        raise KubeconfigError(f"cannot use the in-cluster service account: {_one_line(exc)}") from None
    server = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
    namespace = "default"
    if os.path.exists(_SERVICE_ACCOUNT_NAMESPACE):
        with open(_SERVICE_ACCOUNT_NAMESPACE, encoding="utf-8") as handle:
            namespace = handle.read().strip() or "default"
    return ClusterAccess(server, certificate_authority=Pem(path=_SERVICE_ACCOUNT_CA), credentials=credentials), \
        namespace, None


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:400] or type(exc).__name__
