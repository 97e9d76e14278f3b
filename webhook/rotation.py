"""Self-signed certificates renewed in-process before they expire (the chart's self-signed mode).

As Gatekeeper's cert-controller does (open-policy-agent/cert-controller, pkg/rotator/rotator.go:
the webhook keeps its own serving Secret and the caBundle of its webhook configurations), every
replica checks the Secret at start and then every hour:

* the serving certificate has lived 2/3 of its life: a new CA and a serving certificate signed by
  it are made;
* the new CA is first added to the caBundle of every named Mutating/ValidatingWebhookConfiguration,
  beside the CAs there that are still valid, so the API server trusts both the old and the new
  certificate while replicas switch;
* then the Secret is replaced (ca.crt = that bundle, tls.crt, tls.key), conditional on the
  resourceVersion read: when two replicas renew at once, one wins and the other (409 Conflict)
  takes the winner's Secret;
* every check also sets the caBundles to the Secret's ca.crt, so a caBundle rewritten by hand (or by
  a Helm upgrade) follows the Secret, and a losing replica's CA is dropped.

The kubelet updates the mounted Secret volume (within a minute or so), and the server's file
reloading (webhook/tls.py) serves the new pair to new connections while established ones finish:
no connection is dropped, and the old certificate stays trusted until it expires.  Renewing at 2/3
leaves a third of the lifetime for all that.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import logging
from typing import Any, Callable

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from kubectl_gpu.k8s import ApiError, AsyncClient, object_path

from .certs import make_ca, make_serving_cert, private_key_pem
from .config import SelfSigned

log = logging.getLogger("webhook.rotation")

RENEW_AFTER = 2 / 3  # of a certificate's lifetime
CHECK_SECONDS = 3600.0
WEBHOOK_CONFIGURATION_PLURALS = ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")


def due(cert: x509.Certificate, now: dt.datetime, renew_after: float = RENEW_AFTER) -> bool:
    """The certificate has lived ``renew_after`` of its lifetime (or is not valid at all)."""
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    if end <= start:
        return True
    return (now - start) / (end - start) >= renew_after


def _pem_certs(data: bytes) -> list[x509.Certificate]:
    try:
        return x509.load_pem_x509_certificates(data)
    except ValueError:
        return []


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


class CertRotator:
    def __init__(self, api: AsyncClient, settings: SelfSigned,
                 clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc)) -> None:
        self.api = api
        self.settings = settings
        self.clock = clock
        self.rotations = 0

    @property
    def _secret_path(self) -> str:
        return object_path("", "v1", "secrets", self.settings.secret_name, self.settings.namespace or "default")

    async def run(self, every: float = CHECK_SECONDS) -> None:
        while True:
            try:
                await self.check()
            except ApiError as exc:
                log.warning("certificate check failed; retrying later", extra={"error": str(exc)})
            await asyncio.sleep(every)

    async def check(self) -> bool:
        """Renew when due; keep the caBundles equal to the Secret's CA bundle.  True: renewed."""
        secret = await self.api.get_json(self._secret_path)
        data = secret.get("data") or {}
        current = _pem_certs(base64.b64decode(data.get("tls.crt") or ""))
        now = self.clock()
        if current and not due(current[0], now):
            await self._trust(data.get("ca.crt") or "")
            return False
        bundle = self._renewed(data, now)
        # Trust first: the API server must accept the new certificate before any replica serves it.
        await self._trust(bundle["ca.crt"], keep_valid=True)
        secret["data"] = {**data, **bundle}
        try:
            await self.api.request("PUT", self._secret_path, body=secret)
        except ApiError as exc:
            if not exc.conflict:
                raise
            log.info("another replica renewed the serving certificate first")
            winner = await self.api.get_json(self._secret_path)
            await self._trust((winner.get("data") or {}).get("ca.crt") or "")
            return False
        await self._trust(bundle["ca.crt"])
        self.rotations += 1
        log.info("serving certificate renewed", extra={"secret": self.settings.secret_name})
        return True

    def _renewed(self, data: dict[str, Any], now: dt.datetime) -> dict[str, str]:
        days = self.settings.validity_days
        ca, ca_key = make_ca("kubectl-gpu-webhook CA", days)
        cert, key = make_serving_cert(ca, ca_key, list(self.settings.dns_names), [], days)
        still_valid = [c for c in _pem_certs(base64.b64decode(data.get("ca.crt") or ""))
                       if c.not_valid_after_utc > now]
        bundle = b"".join(_pem(c) for c in [ca, *still_valid])
        return {"ca.crt": base64.b64encode(bundle).decode(),
                "tls.crt": base64.b64encode(_pem(cert)).decode(),
                "tls.key": base64.b64encode(private_key_pem(key)).decode()}

    async def _trust(self, bundle_b64: str, keep_valid: bool = False) -> None:
        """Set every named webhook configuration's caBundle to ``bundle_b64``; with ``keep_valid``
        the CAs it already trusts that are still valid are kept beside it."""
        if not bundle_b64:
            return
        for plural in WEBHOOK_CONFIGURATION_PLURALS:
            for name in self.settings.webhook_configurations:
                path = object_path("admissionregistration.k8s.io", "v1", plural, name)
                for _ in range(3):  # a concurrent writer: read again and retry
                    try:
                        if await self._set_bundle(path, bundle_b64, keep_valid):
                            break
                    except ApiError as exc:
                        if exc.not_found:
                            break  # this configuration is not installed (e.g. no validating webhook)
                        if not exc.conflict:
                            raise

    async def _set_bundle(self, path: str, bundle_b64: str, keep_valid: bool) -> bool:
        config = await self.api.get_json(path)
        changed = False
        now = self.clock()
        for webhook in config.get("webhooks") or []:
            client = webhook.setdefault("clientConfig", {})
            wanted = bundle_b64
            if keep_valid:
                fresh = base64.b64decode(bundle_b64)
                fresh_certs = {c.fingerprint(c.signature_hash_algorithm) for c in _pem_certs(fresh)
                               if c.signature_hash_algorithm}
                kept = [c for c in _pem_certs(base64.b64decode(client.get("caBundle") or ""))
                        if c.not_valid_after_utc > now and c.signature_hash_algorithm
                        and c.fingerprint(c.signature_hash_algorithm) not in fresh_certs]
                wanted = base64.b64encode(fresh + b"".join(_pem(c) for c in kept)).decode()
            if client.get("caBundle") != wanted:
                client["caBundle"] = wanted
                changed = True
        if changed:
            await self.api.request("PUT", path, body=config)  # conditional on its resourceVersion
        return True
