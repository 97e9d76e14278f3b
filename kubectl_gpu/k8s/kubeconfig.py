"""Connect the way kubectl does, through the kubernetes client library's own kubeconfig loader.

Where the configuration comes from (client-go's loading rules, staging/src/k8s.io/client-go/tools/
clientcmd/loader.go, and `kubectl config --help`):

- `--kubeconfig FILE`: only that file, which must exist;
- else `$KUBECONFIG`, a list of files separated by `:` (`;` on Windows): every existing file is read
  and merged, the first file to name a cluster, context or user wins, and the first file to set
  `current-context` wins; an empty `$KUBECONFIG` counts as unset;
- else `~/.kube/config`;
- else, inside a pod, the in-cluster service account.

The library's `KubeConfigMerger` merges clusters/contexts/users as client-go does but lets the LAST
file's current-context win; we pick the first one ourselves and hand it to the loader, which then
does everything else (exec credential plugins, tokens, client certificates, insecure-skip-tls-verify,
proxy-url).  Every failure is one `KubeconfigError` line naming the file and what to change.
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass
from typing import Any

import yaml
from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.kube_config import KubeConfigLoader, KubeConfigMerger

from kubectl_gpu.k8s.client import REQUEST_TIMEOUT_SECONDS, Client
from kubectl_gpu.k8s.errors import KubeconfigError
from kubectl_gpu.input_text import load

_SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
DEFAULT_KUBECONFIG = os.path.join("~", ".kube", "config")


@dataclass(frozen=True)
class Connection:
    api: Client
    namespace: str  # the context's namespace, "default" when it names none
    context: str | None  # None when running in-cluster
    server: str  # the API server's URL, for messages

    def close(self) -> None:
        self.api.close()


def connect(kubeconfig: str | None = None, context: str | None = None,
            request_timeout: float | None = REQUEST_TIMEOUT_SECONDS) -> Connection:
    """A client for the chosen context; `request_timeout` (seconds, None = no limit) bounds every
    request, and nothing is retried behind the user's back."""
    paths, origin = kubeconfig_paths(kubeconfig)
    if paths:
        configuration, namespace, chosen = _load_kubeconfig(paths, context)
    elif os.environ.get("KUBERNETES_SERVICE_HOST") and context is None and kubeconfig is None:
        configuration, namespace, chosen = _load_in_cluster()
    else:
        raise KubeconfigError(_no_kubeconfig_message(origin))
    # The client (kubectl_gpu.k8s.client) asks once: kubectl does not retry reads either, and a
    # server that never answers must not keep a command silent for several times the timeout.
    try:
        api = Client(configuration, request_timeout)
    except (ssl.SSLError, OSError, ValueError) as exc:  # its TLS context is built here, from the files
        raise KubeconfigError(
            f"cannot use context {chosen!r}: its TLS certificates cannot be loaded ({_one_line(exc)}); check "
            "the cluster's certificate-authority(-data) and the user's client-certificate(-data) and "
            "client-key(-data)") from None
    return Connection(api, namespace, chosen, configuration.host)


def kubeconfig_paths(flag: str | None) -> tuple[list[str], str]:
    """The existing kubeconfig files to merge, in order, and where the list came from."""
    if flag:
        path = os.path.expanduser(flag)
        if not os.path.exists(path):
            raise KubeconfigError(f"--kubeconfig {flag}: no such file; pass the path of a kubeconfig file")
        return [path], f"--kubeconfig {flag}"
    value = os.environ.get("KUBECONFIG", "")
    listed = [os.path.expanduser(p) for p in value.split(os.pathsep) if p]
    if listed:
        return [p for p in dict.fromkeys(listed) if os.path.exists(p)], f"KUBECONFIG={value}"
    default = os.path.expanduser(DEFAULT_KUBECONFIG)
    origin = "KUBECONFIG is empty and " if "KUBECONFIG" in os.environ else ""
    return ([default] if os.path.exists(default) else []), origin + DEFAULT_KUBECONFIG


def _no_kubeconfig_message(origin: str) -> str:
    if origin.startswith("KUBECONFIG="):
        return (f"none of the files in {origin} exists; set KUBECONFIG to existing kubeconfig files "
                "(or pass --kubeconfig FILE)")
    return f"no kubeconfig: {origin} does not exist; pass --kubeconfig FILE or set KUBECONFIG"


def _read(path: str) -> dict[str, Any]:
    """One kubeconfig file, checked enough that the library's loader cannot trip over its shape."""
    try:
        with open(path, encoding="utf-8") as handle:
            doc = load(handle)
    except OSError as exc:
        raise KubeconfigError(f"cannot read kubeconfig {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise KubeconfigError(f"kubeconfig {path} is not valid YAML{where}: {problem}; "
                              "fix the file or point KUBECONFIG/--kubeconfig elsewhere") from None
    if doc is None:
        raise KubeconfigError(f"kubeconfig {path} is empty; write a kubeconfig there "
                              "(kubectl config view --flatten > FILE) or remove it from KUBECONFIG")
    if not isinstance(doc, dict):
        raise KubeconfigError(f"kubeconfig {path} is not a mapping (apiVersion: v1, kind: Config, "
                              "clusters, contexts, users); fix the file")
    for key in ("clusters", "contexts", "users"):
        entries = doc.get(key)
        if entries is None:
            continue
        if not isinstance(entries, list):
            raise KubeconfigError(f"kubeconfig {path}: {key} must be a list, not {type(entries).__name__}")
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                raise KubeconfigError(f"kubeconfig {path}: {key}[{i}] needs a name and a {key[:-1]} entry")
            body = entry.get(key[:-1]) or {}
            if not isinstance(body, dict):
                raise KubeconfigError(f"kubeconfig {path}: {key}[{i}].{key[:-1]} must be a mapping")
            problem = _wrong_type(body, _FIELD_TYPES[key], f"{key}[{i}].{key[:-1]}")
            if problem:
                raise KubeconfigError(f"kubeconfig {path}: {problem}")
    if doc.get("current-context") is not None and not isinstance(doc["current-context"], str):
        raise KubeconfigError(f"kubeconfig {path}: current-context must be a string (a context's name)")
    return doc


# The typed fields of client-go's kubeconfig structs (tools/clientcmd/api/v1/types.go: Cluster,
# AuthInfo, Context, ExecConfig), which kubectl's decoder refuses in another type.
_STRINGS, _BOOL, _STRING_LIST, _MAPPING = "a string", "true or false", "a list of strings", "a mapping"
_EXEC_TYPES = {"command": _STRINGS, "apiVersion": _STRINGS, "args": _STRING_LIST, "env": "a list",
               "installHint": _STRINGS, "provideClusterInfo": _BOOL, "interactiveMode": _STRINGS}
_FIELD_TYPES: dict[str, dict[str, Any]] = {
    "clusters": {"server": _STRINGS, "tls-server-name": _STRINGS, "insecure-skip-tls-verify": _BOOL,
                 "certificate-authority": _STRINGS, "certificate-authority-data": _STRINGS,
                 "proxy-url": _STRINGS, "disable-compression": _BOOL},
    "users": {"client-certificate": _STRINGS, "client-certificate-data": _STRINGS, "client-key": _STRINGS,
              "client-key-data": _STRINGS, "token": _STRINGS, "tokenFile": _STRINGS, "as": _STRINGS,
              "as-uid": _STRINGS, "as-groups": _STRING_LIST, "username": _STRINGS, "password": _STRINGS,
              "auth-provider": _MAPPING, "exec": _EXEC_TYPES},
    "contexts": {"cluster": _STRINGS, "user": _STRINGS, "namespace": _STRINGS},
}
_CHECKS = {_STRINGS: lambda v: isinstance(v, str), _BOOL: lambda v: isinstance(v, bool),
           _STRING_LIST: lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
           _MAPPING: lambda v: isinstance(v, dict), "a list": lambda v: isinstance(v, list)}


def _wrong_type(body: dict[str, Any], types: dict[str, Any], where: str) -> str | None:
    for field, wanted in types.items():
        value = body.get(field)
        if value is None:
            continue
        if isinstance(wanted, dict):  # a nested struct (exec)
            if not isinstance(value, dict):
                return f"{where}.{field} must be a mapping"
            problem = _wrong_type(value, wanted, f"{where}.{field}")
            if problem:
                return problem
        elif not _CHECKS[wanted](value):
            return f"{where}.{field} must be {wanted}"
    return None


def _load_kubeconfig(paths: list[str], wanted: str | None) -> tuple[client.Configuration, str, str | None]:
    docs = [_read(p) for p in paths]
    where = paths[0] if len(paths) == 1 else " + ".join(paths)
    contexts: dict[str, dict[str, Any]] = {}
    for doc in docs:
        for entry in doc.get("contexts") or ():
            contexts.setdefault(entry["name"], entry.get("context") or {})
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
    configuration = client.Configuration()
    try:
        merged = KubeConfigMerger(os.pathsep.join(paths))
        loader = KubeConfigLoader(config_dict=merged.config, active_context=name, config_base_path=None)
        loader.load_and_set(configuration)
    except (ConfigException, OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise KubeconfigError(f"cannot use context {name!r} of {where}: {_one_line(exc)}") from None
    return configuration, str(contexts[name].get("namespace") or "default"), name


def _load_in_cluster() -> tuple[client.Configuration, str, str | None]:
    configuration = client.Configuration()
    try:
        config.load_incluster_config(client_configuration=configuration)
    except ConfigException as exc:
        raise KubeconfigError(f"cannot use the in-cluster service account: {_one_line(exc)}") from None
    namespace = "default"
    if os.path.exists(_SERVICE_ACCOUNT_NAMESPACE):
        with open(_SERVICE_ACCOUNT_NAMESPACE, encoding="utf-8") as handle:
            namespace = handle.read().strip() or "default"
    return configuration, namespace, None


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:400] or type(exc).__name__
