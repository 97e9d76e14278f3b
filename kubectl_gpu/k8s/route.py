"""How every request of one client reaches its server, decided once from its ClusterAccess: the
proxy (the kubeconfig's proxy-url, else the environment's, see proxy.py), whether that proxy is
SOCKS (client-go dials through socks5:// too), the TLS context and the name the server's
certificate must carry (tls-server-name, else the server's host)."""

from __future__ import annotations

import ssl
from dataclasses import dataclass

from kubectl_gpu.k8s.access import ClusterAccess
from kubectl_gpu.k8s.proxy import effective_proxy


@dataclass(frozen=True)
class Route:
    server: str  # scheme://host:port, no trailing slash
    ssl: ssl.SSLContext | bool  # False: plain http, or insecure-skip-tls-verify
    http_proxy: str | None  # an http:// (or https://) proxy: CONNECT for https servers
    socks: str | None  # a socks5:// proxy
    server_name: str | None  # tls-server-name

    @classmethod
    def of(cls, access: ClusterAccess) -> "Route":
        proxy = effective_proxy(access.proxy, access.server)  # HTTPS_PROXY/NO_PROXY as kubectl
        socks = proxy if proxy and proxy.lower().startswith("socks") else None
        return cls(access.server.rstrip("/"), access.ssl_context(), None if socks else proxy, socks,
                   access.tls_server_name or None)
