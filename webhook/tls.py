"""Serving TLS from files that may be replaced while the server runs.

The listening socket keeps one SSLContext for its whole life.  Its SNI callback, which OpenSSL
runs early in every handshake, hands the connection the most recently loaded context, so a
rotated certificate is served to new connections at once while established ones finish
undisturbed.  A half-written or mismatched pair is never served: the previous one stays until the
files load cleanly.

What is accepted follows Gatekeeper (pkg/webhook/common.go at open-policy-agent/gatekeeper
015ae2efbaba2a4a8e559c48996faa50f20e934f: ``--tls-min-version`` 1.3 by default,
``--client-ca-name`` and ``--client-cn-name``): TLS 1.3 unless 1.2 is allowed, and then only its
AEAD suites with forward secrecy (no CBC, no RSA key exchange); with a client CA, reviews only
from callers whose certificate it signed, and, when common names are listed, whose leaf
certificate names one.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
from dataclasses import dataclass

log = logging.getLogger("webhook.tls")


TLS_VERSIONS = {"1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3}
# TLS 1.2 suites offered when 1.2 is allowed (TLS 1.3's own suites are all AEAD).
TLS12_CIPHERS = "ECDHE+AESGCM:ECDHE+CHACHA20"


@dataclass(frozen=True)
class TLSPolicy:
    """The ``tls`` settings that decide who may connect, and how."""

    min_version: str = "1.3"
    client_ca_file: str | None = None  # callers must present a certificate this CA signed
    client_common_names: tuple[str, ...] = ()  # and, when not empty, name one of these

    def peer_allowed(self, transport: asyncio.BaseTransport) -> bool:
        """Whether the caller on an established connection may stay connected: a certificate it
        presented was verified in the handshake; here its common name is checked."""
        peercert = transport.get_extra_info("peercert")
        if self.client_ca_file is None or not self.client_common_names or not peercert:
            return True
        subject = peercert.get("subject", ())
        names = [value for rdn in subject for key, value in rdn if key == "commonName"]
        if any(name in self.client_common_names for name in names):
            return True
        log.warning("client certificate refused", extra={"common_names": names,
                                                         "allowed": list(self.client_common_names)})
        return False

    def may_send_reviews(self, transport: asyncio.BaseTransport | None) -> bool:
        """Reviews need the client certificate when a client CA is set.  Probes and scrapes
        (/healthz, /readyz, /metrics: the kubelet and Prometheus have no such certificate) do
        not, so the certificate is asked for but not required in the handshake."""
        return self.client_ca_file is None or bool(transport is not None and transport.get_extra_info("peercert"))


@dataclass(frozen=True)
class _FileStamp:
    cert: tuple[int, int, int] | None
    key: tuple[int, int, int] | None
    client_ca: tuple[int, int, int] | None


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def build_server_context(cert_file: str, key_file: str, policy: TLSPolicy = TLSPolicy()) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = TLS_VERSIONS[policy.min_version]
    ctx.set_ciphers(TLS12_CIPHERS)
    ctx.load_cert_chain(cert_file, key_file)
    if policy.client_ca_file is not None:
        ctx.load_verify_locations(cafile=policy.client_ca_file)
        # Verified when presented (a bad one fails the handshake); required for reviews only.
        ctx.verify_mode = ssl.CERT_OPTIONAL
    return ctx


class ReloadingTLS:
    """Owns the server SSLContext and swaps in freshly loaded certificates."""

    def __init__(self, cert_file: str, key_file: str, policy: TLSPolicy = TLSPolicy()) -> None:
        self.cert_file = cert_file
        self.key_file = key_file
        self.policy = policy
        self._stamp = self._current_stamp()
        self._current = build_server_context(cert_file, key_file, policy)
        self.server_context = self._current
        self.server_context.sni_callback = self._pick_context
        self.reloads = 0
        self.last_error: str | None = None

    @property
    def loaded(self) -> bool:
        return self._current is not None

    def _current_stamp(self) -> _FileStamp:
        return _FileStamp(_stamp(self.cert_file), _stamp(self.key_file),
                          _stamp(self.policy.client_ca_file) if self.policy.client_ca_file else None)

    def _pick_context(self, ssl_obj: ssl.SSLObject, server_name: str | None, _ctx: ssl.SSLContext) -> None:
        current = self._current
        if ssl_obj.context is not current:
            ssl_obj.context = current
        return None

    def reload_if_changed(self) -> bool:
        """Load the files again if they changed on disk; True when a new pair is now served."""
        stamp = self._current_stamp()
        if stamp == self._stamp:
            return False
        try:
            fresh = build_server_context(self.cert_file, self.key_file, self.policy)
        except (OSError, ssl.SSLError) as exc:
            # Typically the key was replaced and the certificate not yet: try again next tick
            # (the stamp is not recorded, so the next change check retries).
            self.last_error = f"cannot load {self.cert_file}/{self.key_file}: {exc}"
            log.warning("tls reload postponed", extra={"error": self.last_error})
            return False
        self._stamp = stamp
        self._current = fresh
        self.reloads += 1
        self.last_error = None
        log.info("tls certificate reloaded", extra={"cert_file": self.cert_file})
        return True

    async def watch(self, interval: float = 2.0) -> None:
        """Poll the files; Secret volumes change by an atomic symlink swap, so polling is enough."""
        while True:
            await asyncio.sleep(interval)
            self.reload_if_changed()
