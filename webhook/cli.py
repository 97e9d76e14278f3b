"""`kgpu-webhook`: serve the admission webhook, write its certificates, clean up templates."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from typing import Any

import click

from .config import ConfigError, WebhookConfig, load_config

log = logging.getLogger("webhook")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kubectl-gpu")
def main() -> None:
    """The kubectl-gpu admission webhook: rewrites legacy GPU requests to DRA at admission."""


def _load(config_path: str | None, overrides: dict[str, Any]) -> WebhookConfig:
    try:
        return load_config(config_path, os.environ, overrides)
    except ConfigError as exc:
        raise click.UsageError(f"configuration: {exc}") from None


@main.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False), envvar="KUBECTL_GPU_WEBHOOK_CONFIG",
              help="Config file (format: docs/webhook.md).")
@click.option("--cert-file", help="Serving certificate (PEM); reloaded when it changes.")
@click.option("--key-file", help="Serving key (PEM); reloaded when it changes.")
@click.option("--port", type=int, help="HTTPS port (default 8443).")
@click.option("--audit/--no-audit", default=None, help="Only warn what would be done.")
@click.option("--rewrite-workloads/--no-rewrite-workloads", default=None,
              help="Rewrite Deployment/Job/... pod templates, not only pods.")
@click.option("--integer-gpus", type=click.Choice(["rewrite", "extended-resource"]), default=None,
              help="extended-resource: leave plain whole nvidia.com/gpu to a DeviceClass extendedResourceName.")
@click.option("--api-timeout-seconds", type=float, default=None, help="Timeout of each Kubernetes API call.")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default=None)
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None,
              help="Outside a cluster: the kubeconfig to use (in a pod the service account is used).")
@click.option("--metrics-port", type=click.IntRange(1, 65535), default=None,
              envvar="KUBECTL_GPU_WEBHOOK_METRICS_PORT",
              help="Also serve /metrics over plain HTTP on this port (default: only on the HTTPS port).")
@click.option("--shutdown-delay-seconds", type=click.FloatRange(0, 300), default=5.0, show_default=True,
              envvar="KUBECTL_GPU_WEBHOOK_SHUTDOWN_DELAY_SECONDS",
              help="After SIGTERM, keep answering (not ready) this long before closing the port.")
def serve(config_path: str | None, kubeconfig: str | None, metrics_port: int | None,
          shutdown_delay_seconds: float, **flags: Any) -> None:
    """Serve /mutate, /validate, /healthz, /readyz and /metrics over HTTPS."""
    from . import logs
    from .kubeapi import async_client
    from .server import Timings, WebhookServer

    config = _load(config_path, flags)
    if config.self_signed is not None and not config.self_signed.namespace:
        raise click.UsageError(
            "configuration: tls.selfSigned needs the webhook's namespace in POD_NAMESPACE (the chart sets it "
            "from the downward API): the Secret it renews lives there")
    logs.configure(config.log_level)
    for path in (config.cert_file, config.key_file):
        if not os.path.isfile(path):
            raise click.UsageError(
                f"TLS file {path} does not exist; create it with `kgpu-webhook certs` or cert-manager, "
                "or point tls.certFile/tls.keyFile (--cert-file/--key-file) at it"
            )
    api = async_client(kubeconfig, config.api_timeout_seconds)

    async def run() -> None:
        server = WebhookServer(config, api, Timings(shutdown_delay=shutdown_delay_seconds))
        await server.start(metrics_port=metrics_port)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        log.info("shutting down")
        await server.shutdown()

    asyncio.run(run())


@main.command()
@click.option("--service", required=True, help="Name of the webhook's Service.")
@click.option("--namespace", required=True, help="Namespace of the Service.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Directory to write into.")
@click.option("--days", type=click.IntRange(1, 3650), default=365, show_default=True)
@click.option("--cluster-domain", default="cluster.local", show_default=True)
@click.option("--ip", "ips", multiple=True, help="Extra IP SAN (e.g. 127.0.0.1 for local testing).")
def certs(service: str, namespace: str, out_dir: str, days: int, cluster_domain: str, ips: tuple[str, ...]) -> None:
    """Write ca.crt/ca.key and a serving tls.crt/tls.key whose SANs are the Service's DNS names."""
    from .certs import service_dns_names, write_certs

    try:
        files = write_certs(out_dir, service_dns_names(service, namespace, cluster_domain), list(ips), days)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(f"wrote {files.ca_cert}, {files.cert}, {files.key} (keys are mode 0600)")
    click.echo(f"caBundle for the webhook configuration: base64 -w0 {files.ca_cert}")


@main.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False), envvar="KUBECTL_GPU_WEBHOOK_CONFIG",
              help="Config file (the API timeout); the resource.k8s.io version is the newest the cluster serves.")
@click.option("--namespace", default=None, help="Only this namespace (default: all).")
@click.option("--dry-run", is_flag=True, help="Only report what would be marked and deleted.")
@click.option("--grace-seconds", type=click.FloatRange(min=0), default=None,
              help="How long an object stays marked unused before it is deleted (default 600).")
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None)
@click.option("--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
def cleanup(config_path: str | None, namespace: str | None, dry_run: bool, grace_seconds: float | None,
            kubeconfig: str | None, output: str) -> None:
    """Delete the ResourceClaimTemplates/ResourceClaims the webhook created that nothing references.

    Two passes: unreferenced objects are first marked, and deleted by a later run once the mark is
    older than the grace period and a fresh check still finds no reference.  Run it from a CronJob.
    """
    from .cleanup import DEFAULT_GRACE_SECONDS, run_cleanup
    from .references import ReferencesUnknown
    from kubectl_gpu.k8s import ApiError

    from .kubeapi import sync_client

    config = _load(config_path, {})
    api = sync_client(kubeconfig, config.api_timeout_seconds)
    try:
        report = run_cleanup(
            api, None, namespace, dry_run, DEFAULT_GRACE_SECONDS if grace_seconds is None else grace_seconds,
        )
    except ReferencesUnknown as exc:
        click.echo(f"cleanup stopped: {exc}", err=True)
        sys.exit(1)
    except ApiError as exc:
        click.echo(f"cleanup stopped: Kubernetes API error {exc}; nothing further was deleted", err=True)
        sys.exit(1)
    if output == "json":
        click.echo(json.dumps(report.__dict__, indent=2))
        return
    verb = "would " if dry_run else ""
    for label, items in (("mark unused", report.marked), ("unmark (in use again)", report.unmarked),
                         ("delete", report.deleted), ("skip", report.skipped)):
        for item in items:
            click.echo(f"{verb}{label}: {item}")
    if not (report.marked or report.unmarked or report.deleted or report.skipped):
        click.echo("nothing to clean up")
