"""Who may connect to the webhook, and how, tried with real ssl clients on loopback: TLS 1.3 by
default, TLS 1.2 only with AEAD suites when allowed, never 1.1 or CBC; with a client CA, only the
API server's certificate (as Gatekeeper's --client-ca-name/--client-cn-name,
open-policy-agent/gatekeeper pkg/webhook/common.go at 015ae2efbaba2a4a8e559c48996faa50f20e934f)."""

from __future__ import annotations

import datetime
import http.client
import json
import socket
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.conftest import admission_review
from webhook.certs import make_ca, private_key_pem

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"}, "spec": {"containers": [{"name": "c"}]}}


def client_context(hook, *, minimum: ssl.TLSVersion | None = None, maximum: ssl.TLSVersion | None = None,
                   ciphers: str | None = None, cert: tuple[Path, Path] | None = None) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(hook.ca_file)
    if minimum is not None:
        context.minimum_version = minimum
    if maximum is not None:
        context.maximum_version = maximum
    if ciphers is not None:
        context.set_ciphers(ciphers)
    if cert is not None:
        context.load_cert_chain(*cert)
    return context


def handshake(hook, context: ssl.SSLContext) -> str:
    """The negotiated TLS version; raises when the server refuses the handshake."""
    with socket.create_connection(("127.0.0.1", hook.port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            return tls.version() or ""


def review_status(hook, context: ssl.SSLContext) -> int:
    """The status of one review over a fresh connection; raises when the server refuses the caller
    (with TLS 1.3 a client learns that its certificate was refused only when it reads)."""
    conn = http.client.HTTPSConnection("127.0.0.1", hook.port, context=context, timeout=10)
    try:
        conn.request("POST", "/validate", body=json.dumps(admission_review(POD)).encode(),
                     headers={"Content-Type": "application/json"})
        return conn.getresponse().status
    finally:
        conn.close()


def get_status(hook, context: ssl.SSLContext, path: str) -> int:
    conn = http.client.HTTPSConnection("127.0.0.1", hook.port, context=context, timeout=10)
    try:
        conn.request("GET", path)
        return conn.getresponse().status
    finally:
        conn.close()


REFUSED = (ssl.SSLError, ConnectionError, http.client.RemoteDisconnected, OSError)


# --- versions and suites -------------------------------------------------------------------------


def test_tls_1_3_only_by_default(start_webhook):
    hook = start_webhook()
    assert handshake(hook, client_context(hook)) == "TLSv1.3"
    with pytest.raises(ssl.SSLError):
        handshake(hook, client_context(hook, maximum=ssl.TLSVersion.TLSv1_2))


def test_tls_1_2_when_allowed_with_aead_suites(start_webhook):
    hook = start_webhook(tls={"minVersion": "1.2"})
    for suite in ("ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305"):
        assert handshake(hook, client_context(hook, maximum=ssl.TLSVersion.TLSv1_2, ciphers=suite)) == "TLSv1.2"


@pytest.mark.parametrize("suite", ["ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA", "ECDHE-ECDSA-AES128-SHA256",
                                   "ECDHE-ECDSA-AES256-SHA384"])
def test_tls_1_2_cbc_suites_are_refused(start_webhook, suite):
    hook = start_webhook(tls={"minVersion": "1.2"})
    with pytest.raises(ssl.SSLError):
        handshake(hook, client_context(hook, maximum=ssl.TLSVersion.TLSv1_2, ciphers=suite))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_tls_1_1_is_refused_even_when_1_2_is_allowed(start_webhook):
    hook = start_webhook(tls={"minVersion": "1.2"})
    old = client_context(hook, minimum=ssl.TLSVersion.TLSv1, maximum=ssl.TLSVersion.TLSv1_1, ciphers="ALL:@SECLEVEL=0")
    with pytest.raises(ssl.SSLError):
        handshake(hook, old)


# --- client certificates -------------------------------------------------------------------------


def client_pair(directory: Path, common_name: str, ca=None) -> tuple[Path, Path, Path]:
    """A client certificate for ``common_name`` signed by ``ca`` (a new CA when None): the CA's
    PEM file, the certificate and the key."""
    ca_cert, ca_key = ca or make_ca(f"{common_name} CA", 1)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
            .issuer_name(ca_cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=1)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    directory.mkdir(parents=True, exist_ok=True)
    paths = directory / "ca.crt", directory / f"{common_name}.crt", directory / f"{common_name}.key"
    paths[0].write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(private_key_pem(key))
    return paths


@pytest.fixture
def api_server_ca(tmp_path):
    return make_ca("API server client CA", 1)


def test_with_a_client_ca_only_the_api_servers_certificate_is_served(start_webhook, tmp_path, api_server_ca):
    ca_file, cert, key = client_pair(tmp_path / "apiserver", "kube-apiserver", api_server_ca)
    hook = start_webhook(tls={"clientAuth": {"caFile": str(ca_file), "commonNames": ["kube-apiserver"]}})
    assert review_status(hook, client_context(hook, cert=(cert, key))) == 200

    # No certificate: reviews are refused, probes and scrapes (the kubelet, Prometheus) are served.
    assert review_status(hook, client_context(hook)) == 403
    for path in ("/healthz", "/readyz", "/metrics"):
        assert get_status(hook, client_context(hook), path) == 200
    _, other_cert, other_key = client_pair(tmp_path / "tenant", "kube-apiserver")  # another CA
    with pytest.raises(REFUSED):
        review_status(hook, client_context(hook, cert=(other_cert, other_key)))
    _, tenant_cert, tenant_key = client_pair(tmp_path / "same-ca", "tenant", api_server_ca)  # same CA, other name
    with pytest.raises(REFUSED):
        review_status(hook, client_context(hook, cert=(tenant_cert, tenant_key)))
    assert 'kubectl_gpu_webhook_connections_closed_total{reason="certificate"} 1.0' in hook.metrics_text()


def test_without_common_names_any_certificate_of_the_client_ca_is_served(start_webhook, tmp_path, api_server_ca):
    ca_file, cert, key = client_pair(tmp_path / "apiserver", "front-proxy", api_server_ca)
    hook = start_webhook(tls={"clientAuth": {"caFile": str(ca_file)}})
    assert review_status(hook, client_context(hook, cert=(cert, key))) == 200
    assert review_status(hook, client_context(hook)) == 403


@pytest.mark.parametrize("tls, message", [
    ({"minVersion": "1.1"}, "tls.minVersion: '1.1'; use one of: 1.2, 1.3"),
    ({"clientAuth": {"commonNames": ["kube-apiserver"]}}, "tls.clientAuth.commonNames needs tls.clientAuth.caFile"),
])
def test_tls_settings_that_cannot_be_served_stop_the_start_with_the_key_named(tls, message):
    from webhook.config import ConfigError, _tls_policy

    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        _tls_policy({"minVersion": "1.3", "clientAuth": {}} | tls)
