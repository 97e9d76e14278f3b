"""Serving TLS from files that may be replaced while the server runs.

The listening socket keeps one SSLContext for its whole life.  Its SNI callback, which OpenSSL
runs early in every handshake, hands the connection the most recently loaded context, so a
rotated certificate is served to new connections at once while established ones finish
undisturbed.  A half-written or mismatched pair is never served: the previous one stays until the
files load cleanly.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
from dataclasses import dataclass

log = logging.getLogger("webhook.tls")


@dataclass(frozen=True)
class _FileStamp:
    cert: tuple[int, int, int] | None
    key: tuple[int, int, int] | None


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def build_server_context(cert_file: str, key_file: str) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert_file, key_file)
    return ctx


class ReloadingTLS:
    """Owns the server SSLContext and swaps in freshly loaded certificates."""

    def __init__(self, cert_file: str, key_file: str) -> None:
        self.cert_file = cert_file
        self.key_file = key_file
        self._stamp = self._current_stamp()
        self._current = build_server_context(cert_file, key_file)
        self.server_context = self._current
        self.server_context.sni_callback = self._pick_context
        self.reloads = 0
        self.last_error: str | None = None

    @property
    def loaded(self) -> bool:
        return self._current is not None

    def _current_stamp(self) -> _FileStamp:
        return _FileStamp(_stamp(self.cert_file), _stamp(self.key_file))

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
            fresh = build_server_context(self.cert_file, self.key_file)
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
