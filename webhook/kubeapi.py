"""How the webhook connects to the Kubernetes API: in-cluster credentials when running in a pod,
the kubeconfig otherwise.  The client itself is kubectl-gpu's one client (kubectl_gpu.k8s), async:
the webhook's API calls (cache misses only) wait on the event loop, not on a thread pool."""

from __future__ import annotations

from kubectl_gpu.k8s import AsyncClient, Client
from kubectl_gpu.k8s.kubeconfig import in_cluster_or_kubeconfig


def async_client(kubeconfig: str | None, timeout_seconds: float) -> AsyncClient:
    """The webhook server's client."""
    return AsyncClient(in_cluster_or_kubeconfig(kubeconfig), timeout_seconds)


def sync_client(kubeconfig: str | None, timeout_seconds: float) -> Client:
    """The client of one-shot commands (cleanup)."""
    return Client(in_cluster_or_kubeconfig(kubeconfig), timeout_seconds)
