"""Objects read back from a cluster (`kubectl get deploy -o yaml | kubectl gpu migrate -`).

The API server sets fields a manifest must not carry when it is applied again: a stale
`metadata.resourceVersion` makes `kubectl apply`/`replace` fail with a conflict, `uid`,
`creationTimestamp`, `generation` and `managedFields` are the server's own bookkeeping, and
`status` is written by controllers (kubectl apply ignores it; keeping it only misleads).
A rewritten live object loses them, and the report says so.  A live Pod cannot be rewritten
in place at all: a Pod's spec is immutable apart from a few fields (image, tolerations
additions, activeDeadlineSeconds), so its owner has to be migrated instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .tree_patch import join_pointer

# metadata fields the API server sets (k8s.io/apimachinery ObjectMeta: "Populated by the
# system. Read-only."), in the order a report lists them.
SERVER_SET_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink")


def is_live(obj: Mapping[str, Any]) -> bool:
    """The object came from a cluster (the server stamped it), not from a source manifest."""
    metadata = obj.get("metadata")
    return isinstance(metadata, Mapping) and any(
        key in metadata for key in ("uid", "resourceVersion", "managedFields", "creationTimestamp"))


def server_set_pointers(obj: Mapping[str, Any]) -> list[str]:
    """JSON pointers (relative to the object) of every server-set field it holds."""
    pointers: list[str] = []
    metadata = obj.get("metadata")
    if isinstance(metadata, Mapping):
        pointers.extend(join_pointer(["metadata", key]) for key in SERVER_SET_METADATA if key in metadata)
    if "status" in obj:
        pointers.append("/status")
    return pointers


def live_pod_warning(obj: Mapping[str, Any]) -> str | None:
    """What to do instead of applying a rewritten live Pod, or None when this is no live Pod."""
    if obj.get("kind") != "Pod" or not is_live(obj):
        return None
    metadata = obj.get("metadata") or {}
    owners = metadata.get("ownerReferences") if isinstance(metadata, Mapping) else None
    owner = next((o for o in owners or [] if isinstance(o, Mapping) and o.get("controller")), None)
    if owner is not None:
        return (f"this is a running Pod owned by {owner.get('kind')} {owner.get('name')}: a Pod's spec is immutable, "
                "so applying this output fails; migrate the owner's manifest (for a ReplicaSet, its Deployment) "
                "and let the controller replace the Pod")
    return ("this is a running Pod: a Pod's spec is immutable, so applying this output fails; migrate the manifest "
            "it was created from, or delete the Pod and create it from this output")
