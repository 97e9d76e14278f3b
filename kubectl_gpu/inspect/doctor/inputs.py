"""Everything `doctor` reads from the cluster, as plain API objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from kubectl_gpu.inspect.dra_nodes import DEFAULT_DRA_NODE_LABELS, NodeLabel

Objects = tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class DoctorInputs:
    served_dra_versions: tuple[str, ...] = ()
    nodes: Objects = ()
    resource_slices: Objects = ()
    device_classes: Objects = ()
    resource_claims: Objects = ()
    resource_claim_templates: Objects = ()
    pods: Objects = ()
    # Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs, CronJobs: templates they use count
    # as used even with zero replicas.
    workloads: Objects = ()
    resource_quotas: Objects = ()
    mutating_webhooks: Objects = ()
    validating_webhooks: Objects = ()
    services: Objects = ()
    # EndpointSlices when the cluster serves discovery.k8s.io/v1, else None and `endpoints` is used.
    endpoint_slices: Objects | None = None
    endpoints: Objects = ()
    dra_node_labels: tuple[NodeLabel, ...] = DEFAULT_DRA_NODE_LABELS
    # Device-plugin GPU resources under names of their own (the webhook's extraLegacyResources).
    extra_legacy_resources: frozenset[str] = frozenset()
    # Resource (e.g. "mutatingwebhookconfigurations") -> why it could not be read (RBAC...).
    unavailable: Mapping[str, str] = field(default_factory=dict)
