"""`kgpu-webhook certs`: a private CA and a serving certificate for the webhook Service.

The API server reaches the webhook as ``https://<service>.<namespace>.svc``; the serving
certificate carries every DNS name it may use as a SAN, and the CA goes into the
MutatingWebhookConfiguration's ``caBundle``.  For production, cert-manager is the better source;
this exists so a cluster without it (and the tests) can still run the webhook over real TLS.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class CertFiles:
    ca_cert: Path
    ca_key: Path
    cert: Path
    key: Path


def service_dns_names(service: str, namespace: str, cluster_domain: str = "cluster.local") -> list[str]:
    """Every name the API server may use to reach ``service`` in ``namespace``."""
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.{cluster_domain}",
    ]


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _private_key() -> ec.EllipticCurvePrivateKey:
    # P-256: accepted by every TLS stack the API server uses, and much faster to sign with than RSA.
    return ec.generate_private_key(ec.SECP256R1())


def make_ca(common_name: str, days: float) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _private_key()
    now = dt.datetime.now(dt.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                key_encipherment=False, data_encipherment=False, key_agreement=False,
                encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def make_serving_cert(
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    dns_names: list[str],
    ip_addresses: list[str],
    days: float,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _private_key()
    now = dt.datetime.now(dt.timezone.utc)
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(dns_names[0] if dns_names else ip_addresses[0]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return cert, key


def write_certs(
    out_dir: str | os.PathLike[str],
    dns_names: list[str],
    ip_addresses: list[str] = (),  # type: ignore[assignment]
    days: int = 365,
) -> CertFiles:
    """Write ca.crt, ca.key, tls.crt, tls.key (the names a kubernetes.io/tls Secret uses)."""
    if not dns_names and not ip_addresses:
        raise ValueError("a serving certificate needs at least one DNS name or IP address")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ca_cert, ca_key = make_ca("kubectl-gpu-webhook CA", days)
    cert, key = make_serving_cert(ca_cert, ca_key, list(dns_names), list(ip_addresses), days)
    files = CertFiles(out / "ca.crt", out / "ca.key", out / "tls.crt", out / "tls.key")
    _write(files.ca_cert, ca_cert.public_bytes(serialization.Encoding.PEM), secret=False)
    _write(files.ca_key, private_key_pem(ca_key), secret=True)
    _write(files.cert, cert.public_bytes(serialization.Encoding.PEM), secret=False)
    _write(files.key, private_key_pem(key), secret=True)
    return files


def reissue_serving_cert(files: CertFiles, dns_names: list[str], ip_addresses: list[str] = (), days: int = 365) -> None:  # type: ignore[assignment]
    """Sign a fresh serving key pair with the existing CA and replace tls.crt/tls.key atomically,
    the way a rotating Secret volume does (the CA bundle in the webhook configuration stays valid)."""
    ca_cert = x509.load_pem_x509_certificate(files.ca_cert.read_bytes())
    ca_key = serialization.load_pem_private_key(files.ca_key.read_bytes(), password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    cert, key = make_serving_cert(ca_cert, ca_key, list(dns_names), list(ip_addresses), days)
    _write(files.key, private_key_pem(key), secret=True)
    _write(files.cert, cert.public_bytes(serialization.Encoding.PEM), secret=False)


def private_key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    """The key as unencrypted PKCS#8 PEM (what a kubernetes.io/tls Secret's tls.key holds)."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _write(path: Path, data: bytes, secret: bool) -> None:
    # Write then rename, so a reader never sees half a file.
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if secret else 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)
