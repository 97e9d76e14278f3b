"""Every request of the one client goes the way the kubeconfig says: through `proxy-url`, and
with TLS checked against `tls-server-name`.

client-go's kubeconfig (tools/clientcmd/api/v1/types.go, Cluster): "TLSServerName is used to
check server certificate. If TLSServerName is empty, the hostname used to contact the server is
used." and "ProxyURL is the URL to the proxy to be used for all requests made by this client."
kubectl applies both to every request, pod logs included. Without `proxy-url`, client-go takes
the environment's proxy (http.ProxyFromEnvironment: HTTPS_PROXY for an https server, never for
localhost or a loopback address, not for a server NO_PROXY names; golang.org/x/net/http/httpproxy).

The API double speaks plain HTTP; the test puts in front of it what a real cluster has: a TLS
endpoint whose certificate names only `kube-api.internal` (not the 127.0.0.1 the kubeconfig
dials), reached through an HTTP CONNECT proxy. Both record what they saw.
"""

from __future__ import annotations

import asyncio
import ssl
import threading
from pathlib import Path
from typing import Any, Awaitable, Callable

import pytest
import yaml

from kubectl_gpu.k8s import ApiError, AsyncClient, Client, connect
from kubectl_gpu.k8s.proxy import effective_proxy

pytest.importorskip("cryptography", reason="cryptography (the webhook extra) makes the test certificates")
from webhook.certs import write_certs  # noqa: E402

SERVER_NAME = "kube-api.internal"


class _LoopThread:
    """An event loop on its own thread for the test's network fronts."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="proxy-tls-fronts", daemon=True)
        self.thread.start()

    def run(self, coroutine: Awaitable[Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(10)

    def stop(self) -> None:
        self.run(self._end_connections())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()

    @staticmethod
    async def _end_connections() -> None:
        """Cancel the tunnels still open, and let their transports close, while the loop runs."""
        tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.sleep(0.05)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def _splice(client: tuple[asyncio.StreamReader, asyncio.StreamWriter], port: int) -> None:
    upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", port)
    reader, writer = client
    await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))


async def _tls_front(certs: Any, backend_port: int, server_names: list[str | None]) -> asyncio.Server:
    """TLS on 127.0.0.1 with a certificate for SERVER_NAME only, forwarding to the double."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certs.cert, certs.key)
    context.sni_callback = lambda sock, name, _ctx: server_names.append(name)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _splice((reader, writer), backend_port)

    return await asyncio.start_server(serve, "127.0.0.1", 0, ssl=context)


async def _connect_proxy(tunnels: list[str]) -> asyncio.Server:
    """An HTTP proxy that opens CONNECT tunnels (what `proxy-url: http://...` points at)."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        method, target, _version = head.split(b"\r\n", 1)[0].decode().split(" ")
        if method != "CONNECT":
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            writer.close()
            return
        tunnels.append(target)
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        await _splice((reader, writer), int(target.rsplit(":", 1)[1]))

    return await asyncio.start_server(serve, "127.0.0.1", 0)


async def _socks5_proxy(tunnels: list[str]) -> asyncio.Server:
    """A SOCKS5 proxy without authentication (RFC 1928: CONNECT to an IPv4 address or a name)."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        _version, methods = await reader.readexactly(2)
        await reader.readexactly(methods)
        writer.write(b"\x05\x00")  # no authentication
        _version, _connect, _reserved, kind = await reader.readexactly(4)
        if kind == 3:
            host = (await reader.readexactly((await reader.readexactly(1))[0])).decode()
        else:
            host = ".".join(str(b) for b in await reader.readexactly(4))
        port = int.from_bytes(await reader.readexactly(2), "big")
        tunnels.append(f"{host}:{port}")
        writer.write(b"\x05\x00\x00\x01" + bytes(6))
        await writer.drain()
        await _splice((reader, writer), port)

    return await asyncio.start_server(serve, "127.0.0.1", 0)


@pytest.fixture
def fronted(k8s_double, tmp_path: Path):
    """(write_kubeconfig(**cluster_fields) -> path, SNI names seen, CONNECT targets seen, TLS port)."""
    certs = write_certs(tmp_path / "tls", [SERVER_NAME])
    fronts = _LoopThread()
    server_names: list[str | None] = []
    tunnels: list[str] = []
    tls = fronts.run(_tls_front(certs, k8s_double.port, server_names))
    proxy = fronts.run(_connect_proxy(tunnels))
    socks = fronts.run(_socks5_proxy(tunnels))
    tls_port = tls.sockets[0].getsockname()[1]
    proxy_port = proxy.sockets[0].getsockname()[1]
    socks_port = socks.sockets[0].getsockname()[1]

    def write_kubeconfig(**cluster: Any) -> str:
        fields = {"server": f"https://127.0.0.1:{tls_port}", "certificate-authority": str(certs.ca_cert),
                  **{key.replace("_", "-"): value.format(proxy=proxy_port, socks=socks_port, tls=tls_port) for key, value in cluster.items()}}
        config = {"apiVersion": "v1", "kind": "Config",
                  "clusters": [{"name": "c", "cluster": fields}],
                  "users": [{"name": "u", "user": {"token": "t"}}],
                  "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                  "current-context": "x"}
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(config))
        return str(path)

    write_kubeconfig.proxy_port = proxy_port  # type: ignore[attr-defined]
    yield write_kubeconfig, server_names, tunnels, tls_port
    fronts.run(_close(tls, proxy, socks))
    fronts.stop()


async def _close(*servers: asyncio.Server) -> None:
    for server in servers:
        server.close()


async def _first_watch_event(configuration: Any) -> str:
    api = AsyncClient(configuration, 5)
    try:
        async for event in api.watch("/api/v1/namespaces/default/pods", timeout_seconds=1):
            return event["object"]["metadata"]["name"]
        raise AssertionError("the watch ended without an event")
    finally:
        await api.close()


def _with_client(call: Callable[[Client], Any]) -> Callable[[Any], Any]:
    def run(configuration: Any) -> Any:
        api = Client(configuration, 5)  # a new connection: the fronts see each request path's own
        try:
            return call(api)
        finally:
            api.close()
    return run


REQUEST_PATHS = {
    "request (JSON)": _with_client(lambda api: api.get_json("/api/v1/namespaces/default/pods/p")["metadata"]["name"]),
    "get_text (pod log)": _with_client(lambda api: api.get_text("/api/v1/namespaces/default/pods/p/log").strip()),
    "list (pages)": _with_client(lambda api: api.list_objects("/api/v1/namespaces/default/pods")[0]["metadata"]["name"]),
    "watch": lambda configuration: asyncio.run(_first_watch_event(configuration)),
}


@pytest.mark.parametrize("path", REQUEST_PATHS)
def test_every_request_goes_through_the_proxy_with_the_tls_server_name(fronted, k8s_double, path):
    write_kubeconfig, server_names, tunnels, tls_port = fronted
    k8s_double.seed({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                     "spec": {"containers": [{"name": "c", "image": "i"}]}})
    k8s_double.set_pod_log("p", "p\n")
    connection = connect(write_kubeconfig(proxy_url="http://127.0.0.1:{proxy}", tls_server_name=SERVER_NAME))
    connection.close()
    assert REQUEST_PATHS[path](connection.api.configuration) == "p"
    assert tunnels == [f"127.0.0.1:{tls_port}"], "the request did not go through proxy-url"
    assert server_names == [SERVER_NAME], "the TLS handshake did not name tls-server-name"


def test_without_the_tls_server_name_the_certificate_does_not_match(fronted):
    write_kubeconfig, _server_names, _tunnels, _tls_port = fronted
    connection = connect(write_kubeconfig())
    try:
        for call in (lambda: connection.api.get_json("/version"),
                     lambda: connection.api.get_text("/api/v1/namespaces/default/pods/p/log")):
            with pytest.raises(ApiError) as refused:
                call()
            assert refused.value.unreachable and "certificate" in str(refused.value).lower()
    finally:
        connection.close()


PROXY_ENV = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy")


@pytest.mark.parametrize(("environment", "server", "proxied"), [
    ({"HTTPS_PROXY": "http://127.0.0.1:{proxy}"}, SERVER_NAME, True),
    ({"https_proxy": "http://127.0.0.1:{proxy}", "NO_PROXY": ".internal"}, SERVER_NAME, False),
    ({"HTTPS_PROXY": "http://127.0.0.1:{proxy}", "no_proxy": "kube-api.internal:{tls}"}, SERVER_NAME, False),
    ({"HTTPS_PROXY": "http://127.0.0.1:{proxy}", "NO_PROXY": "other.internal,api.internal:1"}, SERVER_NAME, True),
    ({"HTTP_PROXY": "http://127.0.0.1:{proxy}"}, SERVER_NAME, False),  # an https server: HTTPS_PROXY only
    ({"HTTPS_PROXY": "http://127.0.0.1:{proxy}"}, "127.0.0.1", False),  # loopback: never from the environment
])
def test_without_proxy_url_the_environment_decides_as_for_kubectl(fronted, monkeypatch, environment, server, proxied):
    write_kubeconfig, _server_names, tunnels, tls_port = fronted
    for name in PROXY_ENV:
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value.format(proxy=write_kubeconfig.proxy_port, tls=tls_port))
    connection = connect(write_kubeconfig(server=f"https://{server}:{{tls}}", tls_server_name=SERVER_NAME))
    try:
        try:
            connection.api.get_text("/version")
        except ApiError as exc:  # straight to kube-api.internal: this machine cannot resolve it
            assert exc.unreachable and not proxied
        assert tunnels == ([f"{server}:{tls_port}"] if proxied else [])
    finally:
        connection.close()


def test_proxy_url_carries_every_request_whatever_no_proxy_says(fronted, monkeypatch):
    write_kubeconfig, _server_names, tunnels, tls_port = fronted
    monkeypatch.setenv("NO_PROXY", "*")
    connection = connect(write_kubeconfig(proxy_url="http://127.0.0.1:{proxy}", tls_server_name=SERVER_NAME))
    try:
        assert connection.api.get_json("/version")
        assert tunnels == [f"127.0.0.1:{tls_port}"]
    finally:
        connection.close()


@pytest.mark.parametrize(("no_proxy", "server", "proxy"), [
    ("10.96.0.0/12", "https://10.96.0.1:443", None),  # the service CIDR of an in-cluster webhook
    ("10.0.0.0/8,*.svc", "https://kubernetes.default.svc", None),
    ("", "https://10.96.0.1:443", "http://proxy.corp:3128"),
    ("10.96.0.1:6443", "https://10.96.0.1:443", "http://proxy.corp:3128"),  # another port
    ("*", "https://10.96.0.1", None),
    ("svc", "https://kubernetes.default.svc", None),
    (".svc", "https://svc", "http://proxy.corp:3128"),  # a leading dot matches subdomains only
])
def test_no_proxy_entries_match_as_in_go(monkeypatch, no_proxy, server, proxy):
    for name in PROXY_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    monkeypatch.setenv("NO_PROXY", no_proxy)
    assert effective_proxy("http://proxy.corp:3128", server) == proxy  # the kubernetes package read it too
    assert effective_proxy(None, server) == proxy  # or did not (older releases)


def test_a_socks5_proxy_url_carries_every_request_and_resolves_the_name_remotely(fronted):
    """Kubernetes docs, "Use a SOCKS5 Proxy to Access the Kubernetes API": `proxy-url:
    socks5://localhost:1080` in the kubeconfig (an `ssh -D` tunnel); client-go hands the server's
    name to the proxy, which resolves it on its side of the tunnel."""
    pytest.importorskip("aiohttp_socks", reason="aiohttp-socks is not installed: run scripts/bootstrap")
    write_kubeconfig, server_names, tunnels, tls_port = fronted
    connection = connect(write_kubeconfig(server=f"https://{SERVER_NAME}:{{tls}}",
                                          proxy_url="socks5://127.0.0.1:{socks}"))
    try:
        assert connection.api.get_json("/version")
        assert connection.api.get_text("/version")
        assert tunnels == [f"{SERVER_NAME}:{tls_port}"]  # one kept-alive connection, by name
        assert server_names == [SERVER_NAME]
    finally:
        connection.close()


def test_the_ca_given_inline_checks_the_server_as_the_file_does(fronted, tmp_path):
    """certificate-authority-data (base64 of the PEM) wins over certificate-authority (client-go's
    kubeconfig types.go: "CertificateAuthorityData contains PEM-encoded certificate authority
    certificates. Overrides CertificateAuthority")."""
    import base64

    write_kubeconfig, server_names, _tunnels, _tls_port = fronted
    ca = Path(yaml.safe_load(Path(write_kubeconfig()).read_text())["clusters"][0]["cluster"]["certificate-authority"])
    inline = base64.b64encode(ca.read_bytes()).decode()
    connection = connect(write_kubeconfig(certificate_authority=str(tmp_path / "absent.pem"),
                                          certificate_authority_data=inline, tls_server_name=SERVER_NAME))
    try:
        assert connection.api.get_json("/version")
        assert server_names == [SERVER_NAME]
    finally:
        connection.close()
