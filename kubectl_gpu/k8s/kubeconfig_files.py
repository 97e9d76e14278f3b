"""Which kubeconfig files to read, as kubectl chooses them, and each one read and checked.

client-go's loading rules (kubernetes/client-go@32ce75a7d6bc6960fd048d3d1e3b34185418d8c8,
tools/clientcmd/loader.go): `--kubeconfig FILE` alone (it must exist); else every existing file of
$KUBECONFIG (`:`-separated, `;` on Windows; empty counts as unset); else ~/.kube/config.  A file is
checked field by field as kubectl's decoder types them (tools/clientcmd/api/v1/types.go), so a
wrong type is one error line naming the file and the field, never a failure further on.
"""

from __future__ import annotations

import os
from typing import Any

from kubectl_gpu.input_text import UNREAD, load, read_as_yaml_1_1_reads_it
from kubectl_gpu.k8s.errors import KubeconfigError

DEFAULT_KUBECONFIG = os.path.join("~", ".kube", "config")


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


def no_kubeconfig_message(origin: str) -> str:
    if origin.startswith("KUBECONFIG="):
        return (f"none of the files in {origin} exists; set KUBECONFIG to existing kubeconfig files "
                "(or pass --kubeconfig FILE)")
    return f"no kubeconfig: {origin} does not exist; pass --kubeconfig FILE or set KUBECONFIG"


def read_kubeconfig(path: str) -> dict[str, Any]:
    """One kubeconfig file, checked enough that the library's loader cannot trip over its shape.

    Read as PyYAML reads it (YAML 1.1, as client-go's sigs.k8s.io/yaml): by yaml-rs where that reads
    the same objects (an ordinary kubeconfig: names, URLs, base64 data), so PyYAML, ~12 ms of a
    command's start-up, is imported only for the others and to word an error."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise KubeconfigError(f"cannot read kubeconfig {path}: {exc.strerror or exc}") from None
    doc = read_as_yaml_1_1_reads_it(text)
    if doc is UNREAD:
        doc = _read_with_pyyaml(path, text)
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


def _read_with_pyyaml(path: str, text: str) -> Any:
    import yaml

    try:
        return load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise KubeconfigError(f"kubeconfig {path} is not valid YAML{where}: {problem}; "
                              "fix the file or point KUBECONFIG/--kubeconfig elsewhere") from None


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
