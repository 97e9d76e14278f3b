"""A kubeconfig's credential plugin (`users[].user.exec`), run as kubectl runs it.

client-go, plugin/pkg/client/auth/exec/exec.go (kubernetes/client-go@32ce75a7d6bc6960fd048d3d1e3b34185418d8c8,
`refreshCredsLocked`, `isInteractive`, `wrapCmdRunErrorLocked`):

- the plugin gets the environment plus its `env` entries, and KUBERNETES_EXEC_INFO: an
  ExecCredential of the configured apiVersion (client.authentication.k8s.io/v1 or v1beta1) whose
  spec says whether it may talk to the user (`interactive`) and, with `provideClusterInfo`, the
  cluster it authenticates to;
- interactiveMode Never: never interactive; IfAvailable: when stdin is a terminal; Always: stdin
  must be one.  v1 requires interactiveMode; v1beta1 defaults to IfAvailable;
- its stderr is the user's; stdin only when interactive;
- its stdout is an ExecCredential of the same apiVersion with `status.token`, or
  `clientCertificateData` and `clientKeyData` (PEM) both, and maybe `expirationTimestamp`: the
  credential is used until then, and the plugin is run again after it.

Failures are `CredentialPluginError`s worded as kubectl words them, with the plugin's installHint
when the command does not exist.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from kubectl_gpu.k8s.access import Credentials
from kubectl_gpu.k8s.errors import CredentialPluginError

GROUP = "client.authentication.k8s.io"
VERSIONS = (f"{GROUP}/v1", f"{GROUP}/v1beta1")
INTERACTIVE_MODES = ("Never", "IfAvailable", "Always")


@dataclass(frozen=True)
class ExecCredential:
    """What one run of the plugin gave."""

    token: str | None
    client_certificate: bytes | None  # PEM
    client_key: bytes | None  # PEM
    expires: dt.datetime | None  # None: valid for the life of the process


class ExecPlugin(Credentials):
    """The plugin of one kubeconfig user; the bearer token it gave, renewed once it expires."""

    def __init__(self, config: Mapping[str, Any], cluster: Mapping[str, Any] | None = None, *,
                 is_terminal: Callable[[], bool] | None = None,
                 now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc)) -> None:
        self.api_version = str(config.get("apiVersion") or "")
        if self.api_version not in VERSIONS:
            raise CredentialPluginError(
                f"exec plugin: apiVersion {self.api_version or '(none)'!r} is not one kubectl runs; "
                f"use {' or '.join(VERSIONS)}")
        mode = config.get("interactiveMode")
        if not mode:
            if self.api_version.endswith("/v1"):
                raise CredentialPluginError(
                    "exec plugin: interactiveMode must be specified for "
                    f"{self.api_version} (Never, IfAvailable or Always)")
            mode = "IfAvailable"
        if mode not in INTERACTIVE_MODES:
            raise CredentialPluginError(f"exec plugin: unknown interactiveMode {mode!r}; use "
                                        f"{', '.join(INTERACTIVE_MODES)}")
        self.mode = str(mode)
        self.command = str(config.get("command") or "")
        if not self.command:
            raise CredentialPluginError("exec plugin: command is empty; name the credential plugin to run")
        self.args = [str(a) for a in config.get("args") or ()]
        self.env = {str(e.get("name")): str(e.get("value") or "") for e in config.get("env") or ()
                    if isinstance(e, dict) and e.get("name")}
        self.install_hint = str(config.get("installHint") or "")
        self.cluster = dict(cluster) if cluster is not None and config.get("provideClusterInfo") else None
        self._is_terminal = is_terminal or _stdin_is_a_terminal
        self._now = now
        self._lock = threading.Lock()
        self._current: ExecCredential | None = None

    def credential(self) -> ExecCredential:
        """The plugin's credential, run again when the last one has expired."""
        with self._lock:
            current = self._current
            if current is None or (current.expires is not None and self._now() >= current.expires):
                current = self._current = self._run()
            return current

    def headers(self) -> dict[str, str]:
        token = self.credential().token
        return {"Authorization": f"Bearer {token}"} if token else {}

    def _interactive(self) -> bool:
        if self.mode == "Never":
            return False
        terminal = self._is_terminal()
        if self.mode == "Always" and not terminal:
            raise CredentialPluginError("exec plugin cannot support interactive mode: standard input is "
                                        "not a terminal")
        return terminal

    def _run(self) -> ExecCredential:
        interactive = self._interactive()
        spec: dict[str, Any] = {"interactive": interactive}
        if self.cluster is not None:
            spec["cluster"] = self.cluster
        info = {"apiVersion": self.api_version, "kind": "ExecCredential", "spec": spec}
        env = {**os.environ, **self.env, "KUBERNETES_EXEC_INFO": json.dumps(info, separators=(",", ":"))}
        try:
            done = subprocess.run([self.command, *self.args], env=env, stdout=subprocess.PIPE,
                                  stdin=None if interactive else subprocess.DEVNULL, check=False)
        except FileNotFoundError:
            hint = f"\n\n{self.install_hint}" if self.install_hint else ""
            raise CredentialPluginError(f"exec: executable {self.command} not found{hint}") from None
        except OSError as exc:
            raise CredentialPluginError(f"exec: {exc.strerror or exc}") from None
        if done.returncode != 0:
            raise CredentialPluginError(
                f"exec: executable {self.command} failed with exit code {done.returncode}")
        return self._parse(done.stdout)

    def _parse(self, stdout: bytes) -> ExecCredential:
        try:
            doc = json.loads(stdout)
        except ValueError as exc:
            raise CredentialPluginError(f"decoding stdout: {exc}") from None
        if not isinstance(doc, dict) or doc.get("kind") != "ExecCredential":
            raise CredentialPluginError("decoding stdout: the plugin did not print an ExecCredential")
        if doc.get("apiVersion") != self.api_version:
            raise CredentialPluginError(
                f"exec plugin is configured to use API version {self.api_version}, plugin returned "
                f"version {doc.get('apiVersion')}")
        status = doc.get("status")
        if not isinstance(status, dict):
            raise CredentialPluginError("exec plugin didn't return a status field")
        token = status.get("token") or None
        certificate, key = status.get("clientCertificateData") or None, status.get("clientKeyData") or None
        if not token and not certificate and not key:
            raise CredentialPluginError("exec plugin didn't return a token or cert/key pair")
        if bool(certificate) != bool(key):
            raise CredentialPluginError("exec plugin returned only certificate or key, not both")
        return ExecCredential(
            token=str(token) if token else None,
            client_certificate=str(certificate).encode() if certificate else None,
            client_key=str(key).encode() if key else None,
            expires=_timestamp(status.get("expirationTimestamp")),
        )


def _timestamp(value: Any) -> dt.datetime | None:
    if not value:
        return None
    try:
        stamp = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise CredentialPluginError(f"decoding stdout: expirationTimestamp {value!r} is not an RFC 3339 time") \
            from None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.timezone.utc)


def _stdin_is_a_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):
        return False
