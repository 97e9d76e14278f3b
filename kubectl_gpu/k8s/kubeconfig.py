"""Connect the way kubectl does: --kubeconfig, else $KUBECONFIG, else ~/.kube/config, else the
in-cluster service account; --context picks a context; the context's namespace is the default."""

from __future__ import annotations

import os
from dataclasses import dataclass

from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException

from kubectl_gpu.k8s.errors import KubeconfigError

_SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


@dataclass(frozen=True)
class Connection:
    api: client.ApiClient
    namespace: str  # the context's namespace, "default" when it names none
    context: str | None  # None when running in-cluster

    def close(self) -> None:
        self.api.close()


def connect(kubeconfig: str | None = None, context: str | None = None) -> Connection:
    config_file = kubeconfig or _kubeconfig_from_env()
    if config_file is None and os.environ.get("KUBERNETES_SERVICE_HOST") and context is None:
        return _connect_in_cluster()
    config_file = config_file or os.path.expanduser(config.KUBE_CONFIG_DEFAULT_LOCATION)
    if not os.path.exists(config_file):
        raise KubeconfigError(
            f"kubeconfig {config_file} does not exist; pass --kubeconfig PATH or set KUBECONFIG"
        )
    try:
        contexts, active = config.list_kube_config_contexts(config_file)
    except ConfigException as exc:
        raise KubeconfigError(f"cannot read kubeconfig {config_file}: {exc}") from exc
    chosen = _choose_context(contexts or [], active, context, config_file)
    configuration = client.Configuration()
    try:
        config.load_kube_config(config_file=config_file, context=chosen["name"],
                                client_configuration=configuration, persist_config=False)
    except (ConfigException, OSError, ValueError) as exc:
        raise KubeconfigError(
            f"cannot use context {chosen['name']!r} of {config_file}: {exc}"
        ) from exc
    api = client.ApiClient(configuration)
    namespace = (chosen.get("context") or {}).get("namespace") or "default"
    return Connection(api=api, namespace=namespace, context=chosen["name"])


def _kubeconfig_from_env() -> str | None:
    # Like kubectl, take the first existing file of a KUBECONFIG list.
    value = os.environ.get("KUBECONFIG", "")
    for path in value.split(os.pathsep):
        if path and os.path.exists(path):
            return path
    return None


def _choose_context(contexts: list[dict], active: dict | None, wanted: str | None,
                    config_file: str) -> dict:
    if wanted is not None:
        for ctx in contexts:
            if ctx.get("name") == wanted:
                return ctx
        names = ", ".join(c.get("name", "?") for c in contexts) or "none"
        raise KubeconfigError(
            f"context {wanted!r} is not in {config_file} (contexts there: {names}); "
            "pass one of those to --context"
        )
    if active:
        return active
    if contexts:
        raise KubeconfigError(
            f"{config_file} has no current-context; pass --context NAME "
            f"(one of: {', '.join(c.get('name', '?') for c in contexts)})"
        )
    raise KubeconfigError(f"{config_file} has no contexts; pass --kubeconfig with a usable file")


def _connect_in_cluster() -> Connection:
    configuration = client.Configuration()
    try:
        config.load_incluster_config(client_configuration=configuration)
    except ConfigException as exc:
        raise KubeconfigError(f"cannot use the in-cluster service account: {exc}") from exc
    namespace = "default"
    if os.path.exists(_SERVICE_ACCOUNT_NAMESPACE):
        with open(_SERVICE_ACCOUNT_NAMESPACE, encoding="utf-8") as handle:
            namespace = handle.read().strip() or "default"
    return Connection(api=client.ApiClient(configuration), namespace=namespace, context=None)
