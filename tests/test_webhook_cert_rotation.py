"""The chart's self-signed mode renews its certificate in-process before it expires, over real TLS.

Issue 10 asks that "self-signed mode rotates before expiry (in-process, as Gatekeeper's
cert-controller does)": open-policy-agent/cert-controller (pkg/rotator/rotator.go) keeps the
webhook's serving Secret and injects its CA into the caBundle of the webhook configurations it
names, renewing well before expiry.  The API server verifies the webhook with that caBundle
(https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/,
"Contacting the webhook": `caBundle` is "a PEM encoded CA bundle which will be used to validate the
webhook's server certificate"), so a new CA must be in the caBundle before any replica serves a
certificate it signed, and the old one must stay while replicas still serve the old certificate.
The kubelet updates a mounted Secret volume on its own: the tests play the kubelet.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import http.client
import json
import socket
import ssl
import time
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from tests.conftest import admission_review, eventually
from tests.k8sdouble import K8sDouble
from webhook.certs import make_ca, make_serving_cert, private_key_pem, service_dns_names
from webhook.rotation import due
from webhook.server import Timings

NAMESPACE = "gpu-system"
SERVICE = "kubectl-gpu-webhook"
SECRET = "kubectl-gpu-webhook-tls"
HOSTNAME = f"{SERVICE}.{NAMESPACE}.svc"  # what the API server calls


def pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def webhook_configuration(kind: str, path: str, ca_bundle: str) -> dict:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": SERVICE},
            "webhooks": [{"name": f"pods.{SERVICE}.kubectl-gpu.io", "admissionReviewVersions": ["v1"],
                          "sideEffects": "NoneOnDryRun" if path == "/mutate" else "None",
                          "clientConfig": {"service": {"name": SERVICE, "namespace": NAMESPACE, "path": path},
                                           "caBundle": ca_bundle}}]}


def short_lived_install(double: K8sDouble, volume: Path) -> x509.Certificate:
    """What the chart installs, but with a certificate that has lived 5/6 of its life: a CA and a
    serving certificate valid for one more minute (their validity starts 5 minutes back)."""
    ca, ca_key = make_ca("kubectl-gpu-webhook CA", 1 / 1440)
    cert, key = make_serving_cert(ca, ca_key, service_dns_names(SERVICE, NAMESPACE), [], 1 / 1440)
    double.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    double.seed({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                 "metadata": {"name": SECRET, "namespace": NAMESPACE},
                 "data": {"ca.crt": b64(pem(ca)), "tls.crt": b64(pem(cert)), "tls.key": b64(private_key_pem(key))}})
    double.seed(webhook_configuration("MutatingWebhookConfiguration", "/mutate", b64(pem(ca))),
                webhook_configuration("ValidatingWebhookConfiguration", "/validate", b64(pem(ca))))
    volume.mkdir()
    play_kubelet(double, volume)
    return ca


def play_kubelet(double: K8sDouble, volume: Path) -> None:
    """Project the Secret into the mounted volume, as the kubelet does (files replaced atomically)."""
    data = double.get("Secret", SECRET, NAMESPACE)["data"]
    for name in ("tls.crt", "tls.key"):
        staged = volume / f".{name}"
        staged.write_bytes(base64.b64decode(data[name]))
        staged.replace(volume / name)


def settings(volume: Path) -> dict:
    return {"tls": {"certFile": str(volume / "tls.crt"), "keyFile": str(volume / "tls.key"),
                    "selfSigned": {"secretName": SECRET, "webhookConfigurations": [SERVICE],
                                   "serviceName": SERVICE, "validityDays": 1}}}


def connect(port: int, ca_pem: bytes) -> http.client.HTTPSConnection:
    """A keep-alive HTTPS connection that trusts only ``ca_pem`` and checks the Service's name."""
    context = ssl.create_default_context(cadata=ca_pem.decode())
    conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=10)
    conn.sock = context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10),
                                    server_hostname=HOSTNAME)
    return conn


def review(conn: http.client.HTTPSConnection) -> dict:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "i"}]}}
    conn.request("POST", "/mutate", body=json.dumps(admission_review(pod)),
                 headers={"Content-Type": "application/json"})
    answer = conn.getresponse()
    assert answer.status == 200
    return json.loads(answer.read())["response"]


def ca_bundles(double: K8sDouble) -> set[str]:
    return {w["clientConfig"]["caBundle"]
            for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
            for w in double.get(kind, SERVICE, None)["webhooks"]}


def test_renewal_is_due_at_two_thirds_of_the_lifetime():
    ca, key = make_ca("ca", 30)
    start = ca.not_valid_before_utc
    life = ca.not_valid_after_utc - start
    assert not due(ca, start + life * 0.66)
    assert due(ca, start + life * 0.67)


def test_a_self_signed_certificate_is_renewed_before_expiry_and_served_without_dropping_a_connection(
        webhook_on, tmp_path):
    with K8sDouble() as double:
        volume = tmp_path / "tls"
        old_ca = short_lived_install(double, volume)
        old_serving = double.get("Secret", SECRET, NAMESPACE)["data"]["tls.crt"]
        hook = webhook_on(double, env={"POD_NAMESPACE": NAMESPACE},
                          timings=Timings(tls_poll=0.1, cert_check=0.2), **settings(volume))
        before = connect(hook.port, pem(old_ca))
        assert review(before)["allowed"] is True

        eventually(lambda: double.get("Secret", SECRET, NAMESPACE)["data"]["tls.crt"] != old_serving)
        secret = double.get("Secret", SECRET, NAMESPACE)["data"]
        # Every webhook configuration trusts the Secret's bundle: the new CA, and the old one while valid.
        assert ca_bundles(double) == {secret["ca.crt"]}
        new_ca, *others = x509.load_pem_x509_certificates(base64.b64decode(secret["ca.crt"]))
        assert others == [old_ca]
        new_cert = x509.load_pem_x509_certificate(base64.b64decode(secret["tls.crt"]))
        assert new_cert.issuer == new_ca.subject and not due(new_cert, dt.datetime.now(dt.timezone.utc))
        assert {n.value for n in new_cert.extensions.get_extension_for_class(
            x509.SubjectAlternativeName).value} == set(service_dns_names(SERVICE, NAMESPACE))

        play_kubelet(double, volume)
        # New connections, verified as the API server does (the caBundle only), get the new certificate...
        def serves_new() -> bool:
            conn = connect(hook.port, base64.b64decode(next(iter(ca_bundles(double)))))
            served = conn.sock.getpeercert(binary_form=True)
            conn.close()
            return served == new_cert.public_bytes(serialization.Encoding.DER)
        eventually(serves_new)
        after = connect(hook.port, pem(new_ca))  # trusting the new CA alone
        assert review(after)["allowed"] is True
        # ... and the connection opened before the renewal is still served.
        assert review(before)["allowed"] is True

        renewed = double.get("Secret", SECRET, NAMESPACE)["metadata"]["resourceVersion"]
        time.sleep(1.0)  # five more checks: a certificate that is not due is left alone
        assert double.get("Secret", SECRET, NAMESPACE)["metadata"]["resourceVersion"] == renewed
        before.close()
        after.close()


def test_two_replicas_renewing_at_once_agree_on_one_certificate(webhook_on, tmp_path):
    """The Secret is replaced only at the resourceVersion read (409 for the replica that lost), so
    replicas never serve two different certificates, and the caBundles follow the Secret."""
    with K8sDouble() as double:
        volume = tmp_path / "tls"
        short_lived_install(double, volume)
        # Read before any replica starts: the first one may renew while the second is starting.
        old = double.get("Secret", SECRET, NAMESPACE)["metadata"]["resourceVersion"]
        for _ in range(2):
            webhook_on(double, env={"POD_NAMESPACE": NAMESPACE},
                       timings=Timings(tls_poll=0.1, cert_check=0.2), **settings(volume))
        eventually(lambda: double.get("Secret", SECRET, NAMESPACE)["metadata"]["resourceVersion"] != old)
        time.sleep(1.0)  # both replicas check again
        secret = double.get("Secret", SECRET, NAMESPACE)["data"]
        replaced = [e for e in double.store.events_after(int(old))
                    if e.entry.kind.plural == "secrets" and e.type == "MODIFIED"]
        assert len(replaced) == 1
        # A replica that lost may have added its CA for a moment; every check puts the Secret's back.
        eventually(lambda: ca_bundles(double) == {secret["ca.crt"]})


class ReplicaApi:
    """One replica's API client, with the interleaving the test forces instead of leaving it to
    timing: the first read of the Secret sets ``read`` (then waits for ``go_on``, when given), and
    the Secret's replacement waits for ``before_put``.  The API server's optimistic concurrency (a
    PUT carrying a stale metadata.resourceVersion is 409 Conflict,
    https://kubernetes.io/docs/reference/using-api/api-concepts/#conflicts) then decides."""

    def __init__(self, api, read: asyncio.Event, go_on: asyncio.Event | None = None,
                 before_put: asyncio.Event | None = None) -> None:
        self.api, self.read, self.go_on, self.before_put = api, read, go_on, before_put
        self.proposed: dict | None = None

    async def get_json(self, path, *args, **kwargs):
        answer = await self.api.get_json(path, *args, **kwargs)
        if "/secrets/" in path and not self.read.is_set():
            self.read.set()
            if self.go_on is not None:
                await self.go_on.wait()
        return answer

    async def request(self, method, path, **kwargs):
        if method == "PUT" and "/secrets/" in path and self.proposed is None:
            self.proposed = kwargs["body"]["data"]
            if self.before_put is not None:
                await self.before_put.wait()
        return await self.api.request(method, path, **kwargs)


def test_two_replicas_renewing_from_the_same_secret_one_wins_and_the_other_adopts_its_certificate(tmp_path):
    """Forced contention, not left to timing: both replicas read the due Secret before either writes;
    the loser goes on only once the winner has replaced the Secret and set the caBundles.  Exactly
    one replacement is stored; the loser gets the API server's 409, writes nothing more to the
    Secret, and puts every caBundle back to the winner's CA bundle (it had added its own CA first),
    as open-policy-agent/cert-controller (pkg/rotator/rotator.go) takes the Secret another replica wrote."""
    from kubectl_gpu.k8s import AsyncClient
    from webhook.config import SelfSigned
    from webhook.rotation import CertRotator

    with K8sDouble() as double:
        short_lived_install(double, tmp_path / "tls")
        old = double.get("Secret", SECRET, NAMESPACE)
        selfsigned = SelfSigned(SECRET, NAMESPACE, (SERVICE,), tuple(service_dns_names(SERVICE, NAMESPACE)), 1)

        async def both() -> tuple[ReplicaApi, ReplicaApi, list[bool], list[CertRotator]]:
            winner_read, loser_read, winner_done = asyncio.Event(), asyncio.Event(), asyncio.Event()
            clients = [AsyncClient(double.api_client().configuration) for _ in range(2)]
            winner = ReplicaApi(clients[0], winner_read, before_put=loser_read)
            loser = ReplicaApi(clients[1], loser_read, go_on=winner_done)
            rotators = [CertRotator(api, selfsigned) for api in (winner, loser)]  # type: ignore[arg-type]

            async def winner_check() -> bool:
                try:
                    return await rotators[0].check()
                finally:
                    winner_done.set()
            try:
                renewed = await asyncio.gather(winner_check(), rotators[1].check())
            finally:
                for client in clients:
                    await client.close()
            return winner, loser, list(renewed), rotators

        winner, loser, renewed, rotators = asyncio.run(both())
        assert renewed == [True, False] and [r.rotations for r in rotators] == [1, 0]
        assert double.count(verb="update", resource="secrets") == 2  # both wrote, from the same version
        replaced = [e for e in double.store.events_after(int(old["metadata"]["resourceVersion"]))
                    if e.entry.kind.plural == "secrets" and e.type == "MODIFIED"]
        assert len(replaced) == 1
        stored = double.get("Secret", SECRET, NAMESPACE)["data"]
        assert winner.proposed is not None and loser.proposed is not None
        assert {k: stored[k] for k in ("ca.crt", "tls.crt", "tls.key")} == {
            k: winner.proposed[k] for k in ("ca.crt", "tls.crt", "tls.key")}
        assert loser.proposed["tls.crt"] != stored["tls.crt"]  # the loser's own certificate is dropped
        assert ca_bundles(double) == {stored["ca.crt"]}


def test_serve_refuses_to_renew_without_knowing_its_namespace(tmp_path):
    from click.testing import CliRunner

    from webhook.cli import main

    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(settings(tmp_path / "tls")))
    result = CliRunner().invoke(main, ["serve", "--config", str(path)], env={"POD_NAMESPACE": ""})
    assert result.exit_code == 2 and "POD_NAMESPACE" in result.output


def test_self_signed_renewal_without_a_service_name_is_a_configuration_error(tmp_path):
    from webhook.config import ConfigError, load_config

    raw = settings(tmp_path / "tls")
    del raw["tls"]["selfSigned"]["serviceName"]
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(raw))
    with pytest.raises(ConfigError) as raised:
        load_config(str(path), {"POD_NAMESPACE": NAMESPACE}, {})
    assert "tls.selfSigned.serviceName" in str(raised.value)
