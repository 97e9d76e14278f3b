"""Double counting: one physical GPU offered by both the device plugin and a DRA driver, so the
scheduler can give it to two pods.

It shows in four ways: a node labelled as a DRA node still advertises device-plugin GPUs; such a
node runs pods holding device-plugin GPUs; any node publishes GPUs in ResourceSlices while its
status also offers device-plugin GPUs; or HAMi's device plugin registered the node's GPUs for HAMi's
scheduler (which reads its annotation, not the node's status) while a DRA driver publishes them.
"""

from __future__ import annotations

from typing import Iterable

from kubectl_gpu.inspect import hami_device_plugin
from kubectl_gpu.inspect.devices import SliceDevice
from kubectl_gpu.inspect.dra_nodes import GPU_DRA_DRIVERS, NodeLabel
from kubectl_gpu.inspect.findings import Finding, Severity
from kubectl_gpu.inspect.legacy import LegacyPod, LegacyResource

CODE = "double-counting"
_POD_LIST_LIMIT = 5


def double_counting_finding(node: str, dra_label: NodeLabel | None,
                            legacy_resources: Iterable[LegacyResource],
                            legacy_pods: Iterable[LegacyPod],
                            devices: Iterable[SliceDevice], hami_registered: int | None = None) -> Finding | None:
    """``hami_registered``: the GPUs HAMi's device plugin registered on the node (hami_device_plugin), if any."""
    offered = [r for r in legacy_resources if r.is_gpu and r.offered]
    holders = [p for p in legacy_pods if p.holds_device_plugin_gpus]
    dra_gpus = [d for d in devices if d.is_gpu]
    reasons: list[str] = []
    offered_text = ", ".join(f"{r.name}={r.allocatable}" for r in offered)
    drivers = ", ".join(sorted({d.driver for d in dra_gpus}))
    if dra_label is not None and offered:
        reasons.append(f"it is labelled {dra_label} (DRA driver) but still advertises "
                       f"device-plugin GPUs ({offered_text})")
    # A node without the label that publishes a GPU DRA driver's devices runs its kubelet plugin
    # (GPU Operator installs label nothing, nor does HAMi's chart).
    publishing = sorted({d.driver for d in dra_gpus if d.driver in GPU_DRA_DRIVERS})
    if (dra_label is not None or publishing) and holders:
        names = ", ".join(p.ref for p in holders[:_POD_LIST_LIMIT])
        more = f" and {len(holders) - _POD_LIST_LIMIT} more" if len(holders) > _POD_LIST_LIMIT else ""
        marked = (f"labelled {dra_label}" if dra_label is not None
                  else f"publishing {', '.join(publishing)} ResourceSlices")
        reasons.append(f"it is {marked} (DRA driver) but runs {len(holders)} pod(s) "
                       f"holding device-plugin GPUs ({names}{more})")
    published = f"it publishes {len(dra_gpus)} GPU device(s) through DRA ({drivers})"
    if dra_gpus and offered:
        reasons.append(f"{published} and also offers {offered_text} through the device plugin")
    hami_plugin = hami_registered is not None
    if hami_plugin and dra_gpus:
        registered = (f"HAMi's device plugin registered {hami_registered} GPU(s) for HAMi's scheduler (annotation "
                      f"{hami_device_plugin.REGISTER_ANNOTATION}), which hands them out whatever the node's status offers")
        reasons.append(registered if offered else f"{published} while {registered}")
    if not reasons:
        return None
    fixes = []
    if hami_plugin and (offered or dra_gpus):
        key, value = hami_device_plugin.NODE_SELECTOR_LABEL
        fixes.append(f"stop HAMi's device plugin on this node (its DaemonSet runs on nodes labelled {key}={value}: "
                     f"`kubectl label node {node} {key}-`) so neither HAMi's scheduler nor the node offers these "
                     "GPUs outside DRA")
    elif offered:
        fixes.append("stop the NVIDIA device plugin on this node (GPU Operator: label the node "
                     "nvidia.com/gpu.deploy.device-plugin=false; otherwise exclude it from the "
                     "device-plugin DaemonSet with a nodeAffinity) so the node stops advertising "
                     + ", ".join(r.name for r in offered))
    if holders:
        fixes.append("recreate the listed pods so they request GPUs through DRA "
                     "(`kubectl gpu migrate` for their manifests, or let the kubectl-gpu webhook "
                     "convert them), or move them to device-plugin nodes")
    return Finding(
        code=CODE,
        severity=Severity.ERROR,
        subject=f"node/{node}",
        message=f"GPUs on node {node} can be handed out twice: " + "; ".join(reasons),
        fix="; ".join(fixes) or "run either the device plugin or the DRA driver on this node, not both",
    )
