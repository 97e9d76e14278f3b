"""kubectl's three dry runs for the commands that change a cluster (migrate --from-cluster, migrate
nodes, rollback): `--dry-run=none` writes, `server` sends every write with dryRun=All (the API
server validates it, runs admission and answers conflicts, and persists nothing), `client` sends
no write at all (kubectl's `--dry-run=client`: what would be sent, judged only here).

The client dry run is the same code path as the others, over a client whose writes stay here
(`ClientDryRun`): reads go to the cluster, each write answers the object it would have sent.  So
what a client dry run prints is what the planning decided, never what the server said.
"""

from __future__ import annotations

from enum import Enum
from typing import Any


class DryRun(Enum):
    NONE = "none"
    SERVER = "server"
    CLIENT = "client"

    @property
    def writes(self) -> bool:
        return self is DryRun.NONE

    @property
    def words(self) -> str:
        """How a line says it was not written: `(server dry run)`."""
        return f"({self.value} dry run)"


_READS = frozenset({"GET", "HEAD"})


class ClientDryRun:
    """A kubectl_gpu.k8s.Client whose writes are not sent: each answers its body (the object as it
    would have been written; an eviction answers nothing), as if the server took it unchanged."""

    dry_run = DryRun.CLIENT

    def __init__(self, api: Any) -> None:
        self._api = api

    def request(self, method: str, path: str, *, body: Any = None, **options: Any) -> Any:
        if method.upper() in _READS:
            return self._api.request(method, path, body=body, **options)
        return dict(body) if isinstance(body, dict) else {}

    # The client's write helpers, over this request: reached through __getattr__ they would be the
    # real client's, bound to its own request, and write.
    def create(self, resource: Any, namespace: str | None, obj: dict[str, Any]) -> Any:
        return self.request("POST", resource.path(namespace), body=obj)

    def merge_patch(self, resource: Any, namespace: str | None, name: str, patch: dict[str, Any]) -> Any:
        return self.request("PATCH", resource.path(namespace, name), body=patch)

    def delete(self, resource: Any, namespace: str | None, name: str, resource_version: str | None = None) -> None:
        self.request("DELETE", resource.path(namespace, name))

    def __getattr__(self, name: str) -> Any:  # lists, text and everything else a read needs
        if name == "aio":  # the asynchronous client writes as it is told
            raise AttributeError(f"a client dry run has no {name}")
        return getattr(self._api, name)


def mode_of(api: Any) -> DryRun:
    """The dry run a simulated write over ``api`` is: client over ClientDryRun, else the server's."""
    return getattr(api, "dry_run", DryRun.SERVER)
