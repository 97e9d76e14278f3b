"""Webhook configuration: a YAML file, overridden by environment variables, overridden by flags.

The file format is the one in docs/design.md ("Webhook configuration"); the Helm chart renders
it.  Everything is validated before the server starts, and every error says which key is wrong
and what would be accepted, so a bad rollout fails at start-up instead of at the first pod.
"""

from __future__ import annotations

import copy
import difflib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

import yaml

from kubectl_gpu.cluster import ProfileError, parse_feature_gates
from kubectl_gpu.core import ApiVersion, IntegerGpuMode, Sharing, TargetDriver, TranslateOptions, for_target
from kubectl_gpu.input_text import load

from .fencing import DEFAULT_DRA_NODE_SELECTORS, DraNodeSelector
from .review import MAX_BODY_BYTES
from .tls import TLS_VERSIONS, TLSPolicy
from .transport import TransportLimits

ENV_PREFIX = "KUBECTL_GPU_WEBHOOK_"
# Set by the Downward API in the chart; the webhook never touches its own namespace, so that a
# broken webhook can always be repaired.
OWN_NAMESPACE_ENV = "POD_NAMESPACE"

# Flag name (as click passes it) -> dotted key in the file.  Environment variables are the flag
# names upper-cased: KUBECTL_GPU_WEBHOOK_CERT_FILE, KUBECTL_GPU_WEBHOOK_PORT, ...
FLAG_KEYS: dict[str, str] = {
    "port": "port",
    "cert_file": "tls.certFile",
    "key_file": "tls.keyFile",
    "audit": "audit",
    "log_level": "logLevel",
    "rewrite_workloads": "rewriteWorkloads",
    "integer_gpus": "translation.integerGpus",
    "api_timeout_seconds": "apiTimeoutSeconds",
}

LOG_LEVELS = ("debug", "info", "warning", "error")
REVIEW_MARGIN_SECONDS = 1.0
UNSATISFIABLE_CLAIMS = ("warn", "deny", "ignore")
_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")
_LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")

DEFAULTS: dict[str, Any] = {
    "port": 8443,
    "tls": {
        "certFile": "/etc/kubectl-gpu/tls/tls.crt",
        "keyFile": "/etc/kubectl-gpu/tls/tls.key",
        # The chart's self-signed mode: the webhook renews its serving Secret (in its own namespace,
        # POD_NAMESPACE) before expiry and keeps the webhook configurations' caBundle in step
        # (webhook/rotation.py).  Off while secretName is empty.
        "selfSigned": {
            "secretName": "",
            "webhookConfigurations": [],  # Mutating/ValidatingWebhookConfiguration names
            "serviceName": "",  # the Service the API server calls: the certificate's DNS names
            "clusterDomain": "cluster.local",
            "validityDays": 365,
        },
        # Who may connect, and how (webhook/tls.py; docs/webhook.md "Transport limits").
        "minVersion": "1.3",  # 1.3, or 1.2 (then only AEAD suites with forward secrecy)
        "clientAuth": {
            "caFile": "",  # PEM CA(s) of the API server's client certificate; "": none asked for
            "commonNames": [],  # allowed leaf common names (empty: any the CA signed)
        },
    },
    "translation": {
        "apiVersion": "auto",
        "sharing": "auto",
        "integerGpus": "rewrite",
        "gpuMemory": None,
        "aliyunMemoryUnit": "GiB",
        # nvidia | hami | auto: the DRA driver claims are written for (auto: HAMi's where the cluster
        # publishes its slices or DeviceClass, read from the cluster profile; else NVIDIA's).
        "targetDriver": "nvidia",
    },
    # The webhook's own cluster, read through its API access (kubectl_gpu.cluster.ClusterProfile).
    "cluster": {
        "profileTtlSeconds": 60,
        "unsatisfiableClaims": "warn",  # warn | deny | ignore: a claim no published device can satisfy
        "featureGates": {},  # DRA gates that differ from the Kubernetes version's defaults
    },
    "passThroughFamilies": [],
    # warn | deny | ignore: a rewrite in a namespace whose ResourceQuota caps the legacy GPU resource but
    # not the DRA one (webhook/quota_guard.py)
    "quota": "warn",
    "rewriteWorkloads": True,
    "draNodeSelectors": [{"key": s.key, "value": s.value} for s in DEFAULT_DRA_NODE_SELECTORS],
    # Names a GPU device plugin advertises beyond those kubectl-gpu knows (the NVIDIA plugin's
    # resources.gpus[].name, time-slicing/MPS `rename`, RESOURCE_PREFIX): fenced off DRA nodes.
    "extraLegacyResources": [],
    "nodeStatusGuard": False,
    "audit": False,
    "optOutLabel": "kubectl-gpu.io/opt-out",
    "excludedNamespaces": ["kube-system"],
    "apiTimeoutSeconds": 5,
    # The webhook configurations' timeoutSeconds (the chart sets it from webhook.timeoutSeconds):
    # every review answers within it, whatever its API calls cost (review_deadline_seconds).
    "admissionTimeoutSeconds": 10,
    "logLevel": "info",
    # What a client that reaches the port can make the server hold (webhook/transport.py).
    "transport": {
        "maxConnections": 512,
        "handshakeTimeoutSeconds": 5,
        "headerTimeoutSeconds": 10,
        "bodyTimeoutSeconds": 10,
        "idleTimeoutSeconds": 60,
        "bodyBytesInFlight": 14 * 1024 * 1024,
    },
    # How many claim objects the webhook creates per namespace and minute (then a retryable 429).
    "templateCreatesPerNamespacePerMinute": 60,
}


class ConfigError(ValueError):
    """The configuration cannot be used; the message names the key and the accepted values."""


@dataclass(frozen=True)
class SelfSigned:
    """What the webhook renews (tls.selfSigned): its serving Secret and the webhook configurations
    whose caBundle trusts it."""

    secret_name: str
    namespace: str | None  # the webhook's own (POD_NAMESPACE); `serve` refuses to renew without it
    webhook_configurations: tuple[str, ...]
    dns_names: tuple[str, ...]
    validity_days: float


def _self_signed(raw: Mapping[str, Any], own_namespace: str | None) -> SelfSigned | None:
    from .certs import service_dns_names

    secret = raw.get("secretName") or ""
    if not secret:
        return None
    if not isinstance(secret, str):
        raise ConfigError(f"tls.selfSigned.secretName: {secret!r} is not a Secret name")
    service = _non_empty(raw.get("serviceName"), "tls.selfSigned.serviceName")
    try:
        days = float(raw.get("validityDays"))
    except (TypeError, ValueError):
        days = -1.0
    if isinstance(raw.get("validityDays"), bool) or not 0 < days <= 3650:
        raise ConfigError(f"tls.selfSigned.validityDays: {raw.get('validityDays')!r}; use days above 0, at most 3650")
    return SelfSigned(
        secret_name=secret,
        namespace=own_namespace,
        webhook_configurations=tuple(_string_list(raw.get("webhookConfigurations") or [],
                                                  "tls.selfSigned.webhookConfigurations")),
        dns_names=tuple(service_dns_names(service, own_namespace or "", str(raw.get("clusterDomain") or "cluster.local"))),
        validity_days=days,
    )


@dataclass(frozen=True)
class WebhookConfig:
    port: int
    cert_file: str
    key_file: str
    translate_options: TranslateOptions
    rewrite_workloads: bool
    dra_node_selectors: tuple[DraNodeSelector, ...]
    node_status_guard: bool
    audit: bool
    opt_out_label: str
    excluded_namespaces: frozenset[str]
    api_timeout_seconds: float
    log_level: str
    own_namespace: str | None = None
    pass_through_families: frozenset[str] = field(default_factory=frozenset)
    # translation.apiVersion: auto - the newest resource.k8s.io version the API server serves.
    api_version_auto: bool = False
    profile_ttl_seconds: float = 60.0
    unsatisfiable_claims: str = "warn"
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    self_signed: SelfSigned | None = None  # tls.selfSigned: renew the serving certificate in-process
    quota: str = "warn"  # quota_guard.QUOTA_MODES
    # Nodes the NVIDIA driver publishes ResourceSlices for (from the cluster profile, when one was read):
    # DRA nodes without any label, as GPU Operator installs leave them.  Not a setting.
    driver_node_names: frozenset[str] = field(default_factory=frozenset)
    # Transport and callers (webhook/transport.py, webhook/tls.py).
    transport: TransportLimits = field(default_factory=TransportLimits)
    tls_policy: TLSPolicy = field(default_factory=TLSPolicy)
    template_creates_per_minute: int = 60
    admission_timeout_seconds: float = 10.0
    extra_legacy_resources: frozenset[str] = field(default_factory=frozenset)

    @property
    def review_deadline_seconds(self) -> float:
        """How long one review may take, all its API calls together: the API server's wait less a
        margin (a second, or half of a shorter wait) for the answer to travel back to it."""
        return self.admission_timeout_seconds - min(REVIEW_MARGIN_SECONDS, self.admission_timeout_seconds / 2)

    @property
    def needs_cluster_profile(self) -> bool:
        """Translation depends on the cluster: the version, the sharing mode or the claim check."""
        return (self.api_version_auto or self.translate_options.sharing is Sharing.AUTO
                or self.translate_options.target_driver is TargetDriver.AUTO
                or self.unsatisfiable_claims != "ignore")

    def options_for(self, sharing_group: str | None) -> TranslateOptions:
        """Translation options for one pod template; ``sharing_group`` names its workload."""
        options = self.translate_options
        if sharing_group == options.sharing_group and options.known_claims is None:
            return options
        # The pod's own claims are checked by admission against the API (known_claims None).
        return replace(options, sharing_group=sharing_group, known_claims=None)


def load_config(path: str | None, env: Mapping[str, str], overrides: Mapping[str, Any]) -> WebhookConfig:
    """Read ``path`` (optional), apply ``KUBECTL_GPU_WEBHOOK_*`` from ``env``, then ``overrides``
    (flag name -> value; None means "flag not given"), and validate the result."""
    raw = _deep_merge(DEFAULTS, _read_file(path) if path else {})
    for flag, key in FLAG_KEYS.items():
        value = env.get(ENV_PREFIX + flag.upper())
        if value is not None and value != "":
            _set_dotted(raw, key, _parse_env(value, key))
    for flag, value in overrides.items():
        if flag not in FLAG_KEYS:
            raise ConfigError(f"unknown option {flag!r}; known: {', '.join(sorted(FLAG_KEYS))}")
        if value is not None:
            _set_dotted(raw, FLAG_KEYS[flag], value)
    return _validate(raw, own_namespace=env.get(OWN_NAMESPACE_ENV) or None)


def _read_file(path: str) -> dict[str, Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from exc
    try:
        data = load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} is not valid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping of settings, not {type(data).__name__}")
    _reject_unknown_keys(data, DEFAULTS, prefix="")
    return data


def _reject_unknown_keys(data: Mapping[str, Any], known: Mapping[str, Any], prefix: str) -> None:
    for key, value in data.items():
        where = f"{prefix}{key}"
        if key not in known:
            close = difflib.get_close_matches(str(key), list(known), n=1)
            hint = f" (did you mean {prefix}{close[0]!r}?)" if close else ""
            raise ConfigError(f"unknown config key {where!r}{hint}; known keys: {', '.join(prefix + k for k in known)}")
        if isinstance(known[key], dict) and known[key]:  # an empty default ({}) is a free-form mapping
            if not isinstance(value, dict):
                raise ConfigError(f"{where} must be a mapping, got {value!r}")
            _reject_unknown_keys(value, known[key], prefix=f"{where}.")


def _parse_env(value: str, key: str) -> Any:
    # Environment values are strings; YAML scalars give "true"/"8443"/"null" their usual meaning.
    try:
        return load(value)
    except yaml.YAMLError as exc:
        raise ConfigError(f"environment value for {key} cannot be parsed: {value!r}") from exc


def _deep_merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for key in {**base, **top}:
        if key in top and key in base and isinstance(base[key], dict) and isinstance(top[key], dict):
            merged[key] = _deep_merge(base[key], top[key])
        elif key in top:
            merged[key] = top[key]
        else:
            merged[key] = copy.deepcopy(base[key])
    return merged


def _set_dotted(raw: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    node = raw
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value


def _validate(raw: Mapping[str, Any], own_namespace: str | None) -> WebhookConfig:
    from kubectl_gpu.core.constants import FAMILIES

    tls = raw["tls"]
    tr = raw["translation"]
    families = _string_list(raw["passThroughFamilies"], "passThroughFamilies")
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown:
        raise ConfigError(
            f"passThroughFamilies: unknown famil{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)}; "
            f"use any of: {', '.join(FAMILIES)}"
        )
    gpu_memory = tr["gpuMemory"]
    if gpu_memory is not None:
        gpu_memory = str(gpu_memory)
        if not _QUANTITY.match(gpu_memory):
            raise ConfigError(f"translation.gpuMemory: {gpu_memory!r} is not a memory quantity; write e.g. \"80Gi\"")
    unit = tr["aliyunMemoryUnit"]
    if unit not in ("GiB", "MiB"):
        raise ConfigError(f"translation.aliyunMemoryUnit: {unit!r}; use GiB or MiB (the gpushare --memory-unit)")
    api_version_auto = str(tr["apiVersion"]) == "auto"
    try:
        # auto: decided per admission from the served versions; v1 only until the first lookup.
        api_version = ApiVersion.V1 if api_version_auto else ApiVersion.parse(str(tr["apiVersion"]))
    except ValueError as exc:
        raise ConfigError(f"translation.apiVersion: {exc} (or auto: the newest the API server serves)") from exc
    cluster = raw["cluster"]
    unsatisfiable = str(cluster["unsatisfiableClaims"])
    if unsatisfiable not in UNSATISFIABLE_CLAIMS:
        raise ConfigError(f"cluster.unsatisfiableClaims: {unsatisfiable!r}; use one of: {', '.join(UNSATISFIABLE_CLAIMS)}")
    try:
        ttl = float(cluster["profileTtlSeconds"])
    except (TypeError, ValueError):
        ttl = -1.0
    if isinstance(cluster["profileTtlSeconds"], bool) or not 0 < ttl <= 3600:
        raise ConfigError(f"cluster.profileTtlSeconds: {cluster['profileTtlSeconds']!r}; use seconds above 0, at most 3600")
    gates = cluster["featureGates"] or {}
    if not isinstance(gates, dict):
        raise ConfigError(f"cluster.featureGates must map gate names to true/false, got {gates!r}")
    try:
        feature_gates = parse_feature_gates(",".join(
            f"{k}={str(_bool(v, f'cluster.featureGates.{k}')).lower()}" for k, v in gates.items()))
    except ProfileError as exc:
        raise ConfigError(f"cluster.featureGates: {exc}") from exc
    options = for_target(TranslateOptions(
        api_version=api_version,
        sharing=_enum(Sharing, tr["sharing"], "translation.sharing"),
        integer_gpus=_enum(IntegerGpuMode, tr["integerGpus"], "translation.integerGpus"),
        gpu_memory=gpu_memory,
        aliyun_memory_unit=unit,
        target_driver=_enum(TargetDriver, tr["targetDriver"], "translation.targetDriver"),
        pass_through_families=frozenset(families),
        known_claims=None,  # admission reads a pod's claims from the API
    ))
    from .quota_guard import QUOTA_MODES

    quota = str(raw["quota"])
    if quota not in QUOTA_MODES:
        raise ConfigError(f"quota: {raw['quota']!r}; use one of: {', '.join(QUOTA_MODES)}")
    excluded = set(_string_list(raw["excludedNamespaces"], "excludedNamespaces"))
    if own_namespace:
        excluded.add(own_namespace)
    opt_out = raw["optOutLabel"]
    if not isinstance(opt_out, str) or not _LABEL_KEY.match(opt_out):
        raise ConfigError(f"optOutLabel: {opt_out!r} is not a label key (e.g. kubectl-gpu.io/opt-out)")
    log_level = str(raw["logLevel"]).lower()
    if log_level not in LOG_LEVELS:
        raise ConfigError(f"logLevel: {raw['logLevel']!r}; use one of: {', '.join(LOG_LEVELS)}")
    return WebhookConfig(
        port=_port(raw["port"]),
        cert_file=_non_empty(tls.get("certFile"), "tls.certFile"),
        key_file=_non_empty(tls.get("keyFile"), "tls.keyFile"),
        translate_options=options,
        rewrite_workloads=_bool(raw["rewriteWorkloads"], "rewriteWorkloads"),
        dra_node_selectors=_node_selectors(raw["draNodeSelectors"]),
        node_status_guard=_bool(raw["nodeStatusGuard"], "nodeStatusGuard"),
        audit=_bool(raw["audit"], "audit"),
        opt_out_label=opt_out,
        excluded_namespaces=frozenset(excluded),
        api_timeout_seconds=_timeout(raw["apiTimeoutSeconds"], "apiTimeoutSeconds"),
        admission_timeout_seconds=_admission_timeout(raw["admissionTimeoutSeconds"]),
        extra_legacy_resources=_extra_legacy_resources(raw["extraLegacyResources"]),
        log_level=log_level,
        own_namespace=own_namespace,
        pass_through_families=frozenset(families),
        api_version_auto=api_version_auto,
        profile_ttl_seconds=ttl,
        unsatisfiable_claims=unsatisfiable,
        feature_gates=feature_gates,
        self_signed=_self_signed(tls.get("selfSigned") or {}, own_namespace),
        quota=quota,
        transport=_transport(raw["transport"]),
        tls_policy=_tls_policy(tls),
        template_creates_per_minute=_count(raw["templateCreatesPerNamespacePerMinute"],
                                           "templateCreatesPerNamespacePerMinute", 1, 100_000),
    )


def _enum(enum: Any, value: Any, key: str) -> Any:
    try:
        return enum(str(value))
    except ValueError:
        raise ConfigError(f"{key}: {value!r}; use one of: {', '.join(m.value for m in enum)}") from None


def _bool(value: Any, key: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ConfigError(f"{key}: {value!r} is not a boolean; write true or false")


def _port(value: Any) -> int:
    try:
        port = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"port: {value!r} is not a number; use a TCP port such as 8443") from None
    if isinstance(value, bool) or not 1 <= port <= 65535:
        raise ConfigError(f"port: {value!r} is out of range; use 1-65535")
    return port


def _timeout(value: Any, key: str) -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{key}: {value!r} is not a number of seconds") from None
    # The API server gives a webhook at most 30 s (10 s by default); waiting longer is pointless.
    if isinstance(value, bool) or not 0 < seconds <= 30:
        raise ConfigError(f"{key}: {value!r}; use a value above 0 and at most 30")
    return seconds


def _admission_timeout(value: Any) -> float:
    seconds = _timeout(value, "admissionTimeoutSeconds")
    if seconds < 1:  # admissionregistration/v1 validation: timeoutSeconds is 1-30
        raise ConfigError(f"admissionTimeoutSeconds: {value!r}; use the webhook configurations' timeoutSeconds (1-30)")
    return seconds


def _non_empty(value: Any, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{key} must be a file path")
    return value


def _string_list(value: Any, key: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{key} must be a list of names, got {value!r}")
    return list(value)


_RESOURCE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


def _extra_legacy_resources(value: Any) -> frozenset[str]:
    """Extended resource names (``domain/name``) kubectl-gpu does not know as GPUs.  They are only
    fenced, never rewritten: what one unit is (a whole GPU of a model the plugin's pattern picks, or
    a replica of a GPU shared N ways) is in the device plugin's configuration, not in the name."""
    from kubectl_gpu.core import family_of

    names = _string_list(value, "extraLegacyResources")
    for name in names:
        if not _RESOURCE_NAME.match(name) or name.split("/")[0].endswith("kubernetes.io"):
            raise ConfigError(f"extraLegacyResources: {name!r} is not an extended resource name; write it as the "
                              "device plugin advertises it, e.g. nvidia.com/a100")
        if family_of(name) is not None:
            raise ConfigError(f"extraLegacyResources: {name} is already a legacy GPU resource kubectl-gpu knows "
                              f"(family {family_of(name)}); leave it out")
    return frozenset(names)


def _node_selectors(value: Any) -> tuple[DraNodeSelector, ...]:
    """An empty list is allowed: no node runs the DRA driver, so nothing is fenced or denied."""
    if not isinstance(value, list):
        raise ConfigError(f"draNodeSelectors must be a list of {{key, value}} mappings, got {value!r}")
    selectors = []
    for i, item in enumerate(value):
        where = f"draNodeSelectors[{i}]"
        if not isinstance(item, dict):
            raise ConfigError(f"{where}: write {{key: <label key>, value: <label value>}} (value optional), got {item!r}")
        unknown = sorted(set(item) - {"key", "value"})
        if unknown:
            raise ConfigError(f"{where} has unknown field(s) {', '.join(map(str, unknown))}; use key and value")
        key, val = item.get("key"), item.get("value")
        if not isinstance(key, str) or not _LABEL_KEY.match(key):
            raise ConfigError(f"{where}.key: {key!r} is not a node label key such as ack.node.gpu.schedule")
        if val is not None:
            if not isinstance(val, str):
                # YAML reads `true` or `1` as a non-string; str() would give "True", which no label has.
                raise ConfigError(f"{where}.value must be a string (quote it in YAML), or be left out "
                                  "to match any value")
            if not _LABEL_VALUE.match(val):
                raise ConfigError(f"{where}.value: {val!r} is not a label value")
        selectors.append(DraNodeSelector(key=key, value=val))
    return tuple(dict.fromkeys(selectors))


# --- transport and callers ---------------------------------------------------------------------


def _transport(raw: Mapping[str, Any]) -> TransportLimits:
    def seconds(key: str) -> float:
        return _seconds(raw[key], f"transport.{key}", 300)

    return TransportLimits(
        max_connections=_count(raw["maxConnections"], "transport.maxConnections", 1, 65536),
        handshake_timeout=seconds("handshakeTimeoutSeconds"),
        header_timeout=seconds("headerTimeoutSeconds"),
        body_timeout=seconds("bodyTimeoutSeconds"),
        idle_timeout=seconds("idleTimeoutSeconds"),
        # Below the largest review no UPDATE of a large object could ever be answered.
        body_bytes_in_flight=_count(raw["bodyBytesInFlight"], "transport.bodyBytesInFlight",
                                    MAX_BODY_BYTES, 1 << 40),
    )


def _tls_policy(tls: Mapping[str, Any]) -> TLSPolicy:
    version = str(tls["minVersion"])
    if version not in TLS_VERSIONS:
        raise ConfigError(f"tls.minVersion: {tls['minVersion']!r}; use one of: {', '.join(TLS_VERSIONS)}")
    auth = tls["clientAuth"] or {}
    ca_file = auth.get("caFile") or None
    if ca_file is not None and not isinstance(ca_file, str):
        raise ConfigError(f"tls.clientAuth.caFile: {ca_file!r} is not a file path")
    names = _string_list(auth.get("commonNames"), "tls.clientAuth.commonNames")
    if names and ca_file is None:
        raise ConfigError("tls.clientAuth.commonNames needs tls.clientAuth.caFile: without a CA no client "
                          "certificate is asked for, so there is no common name to check")
    return TLSPolicy(min_version=version, client_ca_file=ca_file, client_common_names=tuple(names))


def _count(value: Any, key: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"{key}: {value!r}; use a whole number from {low} to {high}")
    return value


def _seconds(value: Any, key: str, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= high:
        raise ConfigError(f"{key}: {value!r}; use seconds above 0, at most {high:g}")
    return float(value)
