"""Synthetic but realistic Kubernetes objects for GPU clusters: NVIDIA DRA ResourceSlices (as the
NVIDIA DRA driver publishes them), nodes with device-plugin capacity, pods, claims, templates,
DeviceClasses and webhook plumbing.  Plain dicts, as the API server returns them."""

from __future__ import annotations

import uuid
from typing import Any, Iterable

DRA = "resource.k8s.io/v1"
NVIDIA = "gpu.nvidia.com"
DRA_NODE_LABELS = {"ack.node.gpu.schedule": "disabled"}
MANAGED = {"app.kubernetes.io/managed-by": "kubectl-gpu"}


def gpu_uuid(node: str, index: int) -> str:
    return "GPU-" + str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{node}/{index}"))


def gpu_device(node: str, index: int, *, product: str = "NVIDIA H100 80GB HBM3",
               memory: str = "80Gi", with_index: bool = False,
               shareable: bool = False) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "type": {"string": "gpu"},
        "uuid": {"string": gpu_uuid(node, index)},
        "productName": {"string": product},
        "brand": {"string": "Nvidia"},
        "architecture": {"string": "Hopper"},
        "cudaComputeCapability": {"version": "9.0.0"},
        "driverVersion": {"version": "575.57.8"},
        "cudaDriverVersion": {"version": "12.9.0"},
        "resource.kubernetes.io/pciBusID": {"string": f"0000:{index + 0x18:02x}:00.0"},
    }
    if with_index:  # drivers before v25.8.0 published these
        attributes["index"] = {"int": index}
        attributes["minor"] = {"int": index}
    device: dict[str, Any] = {"name": f"gpu-{index}", "attributes": attributes,
                              "capacity": {"memory": {"value": memory}}}
    if shareable:
        device["allowMultipleAllocations"] = True
        device["capacity"]["memory"]["requestPolicy"] = {"default": "1Gi",
                                                         "validRange": {"min": "1Gi"}}
    return device


def mig_device(node: str, parent: int, slot: int, profile: str = "1g.10gb",
               memory: str = "9984Mi") -> dict[str, Any]:
    return {
        "name": f"gpu-{parent}-mig-{profile.replace('.', '-')}-{slot}",
        "attributes": {
            "type": {"string": "mig"},
            "uuid": {"string": "MIG-" + str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{node}/{parent}/{slot}"))},
            "parentUUID": {"string": gpu_uuid(node, parent)},
            "profile": {"string": profile},
            "productName": {"string": "NVIDIA A100-SXM4-80GB"},
            "driverVersion": {"version": "575.57.8"},
        },
        "capacity": {"memory": {"value": memory}, "multiprocessors": {"value": "14"}},
    }


def gpu_slice(node: str, gpus: int = 8, *, devices: Iterable[dict] | None = None,
              generation: int = 0, api_version: str = DRA, **device_options: Any) -> dict[str, Any]:
    items = list(devices) if devices is not None else [
        gpu_device(node, i, **device_options) for i in range(gpus)]
    if api_version.endswith("v1beta1"):
        items = [{"name": d["name"], "basic": {k: v for k, v in d.items() if k != "name"}} for d in items]
    return {
        "apiVersion": api_version, "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{NVIDIA}-{generation}"},
        "spec": {"driver": NVIDIA, "nodeName": node,
                 "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
                 "devices": items},
    }


def dynamic_mig_slices(node: str = "node-1") -> list[dict]:
    """NVIDIA's DynamicMIG shape: the whole GPU and each MIG placement draw on one counter set."""
    whole = gpu_device(node, 0)
    whole["consumesCounters"] = [{"counterSet": "gpu-0", "counters": {"memory": {"value": "80Gi"}}}]
    migs = []
    for slot in range(2):
        mig = mig_device(node, 0, slot, "3g.40gb", "40Gi")
        mig["consumesCounters"] = [{"counterSet": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}]
        migs.append(mig)
    devices = gpu_slice(node, devices=[whole, *migs])
    devices["spec"]["pool"]["resourceSliceCount"] = 2
    counters = {"apiVersion": DRA, "kind": "ResourceSlice", "metadata": {"name": f"{node}-counters"},
                "spec": {"driver": NVIDIA, "nodeName": node, "pool": {"name": node, "generation": 0, "resourceSliceCount": 2},
                         "sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": "80Gi"}}}]}}
    return [devices, counters]


def node(name: str, *, labels: dict[str, str] | None = None,
         legacy: dict[str, str] | None = None, allocatable: dict[str, str] | None = None) -> dict[str, Any]:
    capacity = {"cpu": "96", "memory": "1056Gi", "pods": "110", **(legacy or {})}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {"capacity": capacity, "allocatable": {**capacity, **(allocatable or {})}},
    }


def dra_node(name: str, **options: Any) -> dict[str, Any]:
    labels = {**DRA_NODE_LABELS, **options.pop("labels", {})}
    return node(name, labels=labels, **options)


def pod(name: str, namespace: str = "default", *, node_name: str | None = None,
        phase: str = "Running", limits: dict[str, Any] | None = None,
        claims: Iterable[dict[str, str]] = (), claim_statuses: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None,
        unschedulable: str | None = None, uid: str | None = None) -> dict[str, Any]:
    claims = list(claims)
    container: dict[str, Any] = {"name": "main", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"}
    if limits:
        container["resources"] = {"limits": dict(limits)}
    if claims:
        container.setdefault("resources", {})["claims"] = [{"name": c["name"]} for c in claims]
    spec: dict[str, Any] = {"containers": [container]}
    if claims:
        spec["resourceClaims"] = claims
    if node_name:
        spec["nodeName"] = node_name
    status: dict[str, Any] = {"phase": phase}
    if claim_statuses:
        status["resourceClaimStatuses"] = [{"name": k, "resourceClaimName": v}
                                           for k, v in claim_statuses.items()]
    if unschedulable:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                 "message": unschedulable}]
    metadata: dict[str, Any] = {"name": name, "namespace": namespace,
                                "uid": uid or str(uuid.uuid5(uuid.NAMESPACE_URL, f"{namespace}/{name}"))}
    if annotations:
        metadata["annotations"] = dict(annotations)
    if labels:
        metadata["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def exact_request(name: str = "gpu", device_class: str = NVIDIA, *, count: int = 1,
                  selectors: Iterable[str] = (), capacity: dict[str, str] | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": device_class, "allocationMode": "ExactCount",
                               "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    if capacity:
        exactly["capacity"] = {"requests": dict(capacity)}
    return {"name": name, "exactly": exactly}


def claim(name: str, namespace: str = "default", *, requests: Iterable[dict] | None = None,
          allocated: Iterable[tuple[str, str]] = (), node_name: str | None = None,
          reserved_for: Iterable[str] = (), owner_pod: str | None = None,
          consumed: dict[str, str] | None = None, share_id: str | None = None,
          labels: dict[str, str] | None = None) -> dict[str, Any]:
    """`allocated`: (request, device) pairs on `node_name`'s pool."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace,
                                "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"claim/{namespace}/{name}"))}
    if labels:
        metadata["labels"] = dict(labels)
    if owner_pod:
        metadata["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": owner_pod,
                                        "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{namespace}/{owner_pod}")),
                                        "controller": True, "blockOwnerDeletion": True}]
        metadata["annotations"] = {"resource.kubernetes.io/pod-claim-name": "gpu"}
    obj: dict[str, Any] = {"apiVersion": DRA, "kind": "ResourceClaim", "metadata": metadata,
                           "spec": {"devices": {"requests": list(requests or [exact_request()])}}}
    allocated = list(allocated)
    if allocated:
        results = []
        for request, device in allocated:
            result: dict[str, Any] = {"request": request, "driver": NVIDIA, "pool": node_name,
                                      "device": device}
            if consumed:
                result["consumedCapacity"] = dict(consumed)
            if share_id:
                result["shareID"] = share_id
            results.append(result)
        obj["status"] = {
            "allocation": {
                "devices": {"results": results},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node_name]}]}]},
            },
            "reservedFor": [{"resource": "pods", "name": p,
                             "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{namespace}/{p}"))}
                            for p in reserved_for],
        }
    return obj


def template(name: str, namespace: str = "default", *, requests: Iterable[dict] | None = None,
             managed: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if managed:
        metadata["labels"] = dict(MANAGED)
    return {"apiVersion": DRA, "kind": "ResourceClaimTemplate", "metadata": metadata,
            "spec": {"spec": {"devices": {"requests": list(requests or [exact_request()])}}}}


def device_class(name: str, expression: str, *, extended_resource_name: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": expression}}]}
    if extended_resource_name:
        spec["extendedResourceName"] = extended_resource_name
    return {"apiVersion": DRA, "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def nvidia_device_classes() -> list[dict[str, Any]]:
    """The classes the NVIDIA DRA driver's Helm chart installs."""
    return [
        device_class("gpu.nvidia.com", "device.driver == 'gpu.nvidia.com' && "
                     "device.attributes['gpu.nvidia.com'].type == 'gpu'"),
        device_class("mig.nvidia.com", "device.driver == 'gpu.nvidia.com' && "
                     "device.attributes['gpu.nvidia.com'].type == 'mig'"),
    ]


def deployment(name: str, namespace: str = "default", *, template_name: str | None = None,
               replicas: int = 1) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {"containers": [{"name": "main", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"}]}
    if template_name:
        pod_spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template_name}]
        pod_spec["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec}}}


def webhook_configuration(kind: str, name: str = "kubectl-gpu-webhook", *,
                          service: str = "kubectl-gpu-webhook", namespace: str = "kubectl-gpu",
                          port: int = 443, ca_bundle: str = "LS0tLS1CRUdJTi0tLS0t",
                          failure_policy: str = "Fail") -> dict[str, Any]:
    client: dict[str, Any] = {"service": {"name": service, "namespace": namespace,
                                          "path": "/mutate" if kind.startswith("Mutating") else "/validate",
                                          "port": port}}
    if ca_bundle:
        client["caBundle"] = ca_bundle
    return {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "kubectl-gpu-webhook"}},
        "webhooks": [{
            "name": "pods.kubectl-gpu.io", "clientConfig": client,
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                       "resources": ["pods"], "scope": "Namespaced"}],
            "failurePolicy": failure_policy, "sideEffects": "NoneOnDryRun",
            "admissionReviewVersions": ["v1"], "timeoutSeconds": 10,
        }],
    }


def service(name: str = "kubectl-gpu-webhook", namespace: str = "kubectl-gpu", port: int = 443) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace},
            "spec": {"type": "ClusterIP", "selector": {"app.kubernetes.io/name": "kubectl-gpu-webhook"},
                     "ports": [{"name": "https", "port": port, "targetPort": "https", "protocol": "TCP"}]}}


def endpoints(name: str = "kubectl-gpu-webhook", namespace: str = "kubectl-gpu", *,
              ready: int = 2, not_ready: int = 0) -> dict[str, Any]:
    subset: dict[str, Any] = {"ports": [{"name": "https", "port": 8443, "protocol": "TCP"}]}
    if ready:
        subset["addresses"] = [{"ip": f"10.0.0.{i + 10}"} for i in range(ready)]
    if not_ready:
        subset["notReadyAddresses"] = [{"ip": f"10.0.1.{i + 10}"} for i in range(not_ready)]
    return {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": name, "namespace": namespace},
            "subsets": [subset]}
