"""Which proxy a request takes, as kubectl decides it.

client-go uses the kubeconfig's `proxy-url` for every request when it is set; otherwise
`http.ProxyFromEnvironment`: HTTPS_PROXY (https servers) or HTTP_PROXY, unless NO_PROXY names the
server or the server is localhost or a loopback address (golang.org/x/net/http/httpproxy,
`config.useProxy`). The kubernetes package (37+) also fills `Configuration.proxy` from the
environment, so a proxy equal to the environment's is taken to come from it and NO_PROXY applies.
"""

from __future__ import annotations

import ipaddress
import os
from urllib.parse import urlsplit


def effective_proxy(configured: str | None, server: str) -> str | None:
    """The proxy for requests to `server` (a URL), given the configuration's proxy."""
    from_environment = environment_proxy(server)
    if configured and configured != from_environment:
        return configured  # the kubeconfig's proxy-url: kubectl sends everything through it
    if from_environment is None or _bypassed(server, _env("NO_PROXY")):
        return None
    return from_environment


def environment_proxy(server: str) -> str | None:
    scheme = urlsplit(server).scheme
    return _env("HTTPS_PROXY") if scheme == "https" else _env("HTTP_PROXY")


def _env(name: str) -> str | None:
    return os.environ.get(name) or os.environ.get(name.lower()) or None


def _bypassed(server: str, no_proxy: str | None) -> bool:
    parts = urlsplit(server)
    host = (parts.hostname or "").lower()
    port = str(parts.port or (443 if parts.scheme == "https" else 80))
    if host == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        ip = None
    if ip is not None and ip.is_loopback:
        return True
    for entry in (item.strip().lower() for item in (no_proxy or "").split(",")):
        if not entry:
            continue
        if entry == "*":
            return True
        if ip is not None and "/" in entry:
            try:
                if ip in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                pass
            continue
        name, _, wanted_port = entry.rpartition(":") if _has_port(entry) else (entry, "", "")
        if wanted_port and wanted_port != port:
            continue
        name = name.strip("[]")
        if ip is not None:
            try:
                if ipaddress.ip_address(name) == ip:
                    return True
            except ValueError:
                pass
            continue
        suffix = name[1:] if name.startswith("*.") else name
        if host == suffix.lstrip(".") and not suffix.startswith(".") or host.endswith("." + suffix.lstrip(".")):
            return True
    return False


def _has_port(entry: str) -> bool:
    if entry.startswith("["):
        return "]:" in entry
    return entry.count(":") == 1
