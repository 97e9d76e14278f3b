"""How to reach one API server: its URL, TLS, proxy and the credentials each request carries.

kubeconfig.py fills a `ClusterAccess` from a kubeconfig (or the in-cluster service account) the
way client-go does; the client (client.py) builds its TLS context from it once and asks it for
the headers of every request, so credentials that rotate (an exec plugin's token past its
expiry, a token file) are read again when they must be.  Nothing here imports the kubernetes
package: it costs the CLI ~0.5 s to load, most of a `describe` of 1,000 nodes.
"""

from __future__ import annotations

import base64
import os
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

# client-go re-reads a token file at most once a minute (transport.NewCachedFileTokenSource), so a
# rotated service-account token is picked up without a file read per request.
TOKEN_FILE_REFRESH_SECONDS = 60.0


class Credentials:
    """What every request carries to say who is asking; subclasses read it from one source."""

    def headers(self) -> dict[str, str]:
        raise NotImplementedError


@dataclass(frozen=True)
class BearerToken(Credentials):
    token: str

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@dataclass(frozen=True)
class BasicAuth(Credentials):
    username: str
    password: str

    def headers(self) -> dict[str, str]:
        pair = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
        return {"Authorization": f"Basic {pair}"}


class TokenFile(Credentials):
    """A bearer token kept in a file (`tokenFile`, the service account's projected token), read
    again a minute after it was last read: the kubelet rotates projected tokens in place."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._token = self._read()
        self._read_at = _monotonic()

    def _read(self) -> str:
        with open(self.path, encoding="utf-8") as handle:
            token = handle.read().strip()
        if not token:
            raise ValueError(f"the token file {self.path} is empty")
        return token

    def headers(self) -> dict[str, str]:
        with self._lock:
            if _monotonic() - self._read_at >= TOKEN_FILE_REFRESH_SECONDS:
                try:
                    self._token = self._read()
                except (OSError, ValueError):
                    pass  # client-go keeps the token it has when a re-read fails
                self._read_at = _monotonic()
            return {"Authorization": f"Bearer {self._token}"}


def _monotonic() -> float:
    return time.monotonic()


class HeaderHook(Credentials):
    """Headers some other code computes per request (a kubernetes.client.Configuration's
    auth_settings(), whose refresh hook rotates an auth-provider's token)."""

    def __init__(self, compute: Callable[[], Mapping[str, str]]) -> None:
        self._compute = compute

    def headers(self) -> dict[str, str]:
        return dict(self._compute())


@dataclass(frozen=True)
class Pem:
    """A PEM certificate or key: in a file, or its text (a kubeconfig's `*-data`, base64-decoded)."""

    path: str | None = None
    data: bytes | None = None

    def text(self) -> str:
        if self.data is not None:
            return self.data.decode("ascii", "replace")
        with open(str(self.path), encoding="ascii", errors="replace") as handle:
            return handle.read()


@dataclass(frozen=True)
class ClusterAccess:
    """The connection settings client-go's rest.Config carries, for one server."""

    server: str  # https://host:port (no trailing slash)
    certificate_authority: Pem | None = None  # None: the system's trust store
    client_certificate: Pem | None = None
    client_key: Pem | None = None
    insecure: bool = False  # insecure-skip-tls-verify
    tls_server_name: str | None = None  # the name the server's certificate must carry
    proxy: str | None = None  # the kubeconfig's proxy-url
    credentials: Credentials | None = None

    def auth_headers(self) -> dict[str, str]:
        return self.credentials.headers() if self.credentials is not None else {}

    def ssl_context(self) -> ssl.SSLContext | bool:
        """The TLS context of every connection (False for http:// or insecure-skip-tls-verify)."""
        if not self.server.startswith("https") or self.insecure:
            return False
        authority = self.certificate_authority
        if authority is None:
            context = ssl.create_default_context()
        elif authority.path is not None:
            context = ssl.create_default_context(cafile=authority.path)
        else:
            context = ssl.create_default_context(cadata=authority.text())
        if self.client_certificate is not None:
            _load_client_pair(context, self.client_certificate, self.client_key)
        return context


def _load_client_pair(context: ssl.SSLContext, certificate: Pem, key: Pem | None) -> None:
    """Python's ssl loads a client certificate only from files: inline data goes through a private
    temporary file that is gone once it is loaded."""
    if certificate.data is None and (key is None or key.data is None):
        context.load_cert_chain(str(certificate.path), key.path if key else None)
        return
    import tempfile  # only for inline data (tempfile loads shutil, random, bz2 and lzma: ~5 ms of start-up)

    with tempfile.TemporaryDirectory(prefix="kubectl-gpu-tls-") as folder:
        paths = []
        for name, pem in (("cert.pem", certificate), ("key.pem", key)):
            if pem is None:
                paths.append(None)
            elif pem.data is None:
                paths.append(pem.path)
            else:
                path = os.path.join(folder, name)
                descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(descriptor, "wb") as handle:
                    handle.write(pem.data)
                paths.append(path)
        context.load_cert_chain(paths[0], paths[1])


def from_kubernetes_configuration(configuration: Any) -> ClusterAccess:
    """The settings of a kubernetes.client.Configuration (tests' and scripts' API double clients,
    the kubernetes package's auth-provider loaders), read by attribute: nothing imports the
    package here."""

    def headers() -> dict[str, str]:
        # auth_settings() asks the configuration's refresh hook first, so a rotated token is used.
        return {s["key"]: s["value"] for s in configuration.auth_settings().values()
                if s.get("in") == "header" and s.get("value")}

    def pem(path: str | None) -> Pem | None:
        return Pem(path=path) if path else None

    return ClusterAccess(
        server=str(configuration.host).rstrip("/"),
        certificate_authority=pem(configuration.ssl_ca_cert),
        client_certificate=pem(configuration.cert_file),
        client_key=pem(configuration.key_file),
        insecure=not configuration.verify_ssl,
        tls_server_name=getattr(configuration, "tls_server_name", None) or None,
        proxy=configuration.proxy or None,
        credentials=HeaderHook(headers),
    )
