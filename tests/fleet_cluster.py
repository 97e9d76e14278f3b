"""A simulated mixed GPU cluster for the fleet-migration tests: one DRA node already switched,
four device-plugin nodes, a dozen GPU workloads of every kind with their running pods, and
PodDisruptionBudgets. Built as plain objects so the same cluster is a file set or a seeded API.

Node facts follow GPU Feature Discovery's labels (nvidia.com/gpu.product with dashes, .memory in
MiB, .family, .count) and the NVIDIA DRA driver's ResourceSlice (driver gpu.nvidia.com, attributes
productName/architecture/type, capacity memory).
"""
from __future__ import annotations

import copy
from typing import Any

DRA_LABEL = {"ack.node.gpu.schedule": "disabled"}
GFD = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.memory": "81920",
       "nvidia.com/gpu.family": "ampere", "nvidia.com/gpu.count": "4"}
CR_KIND = ("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob")


def node(name: str, gpus: int = 4, dra: bool = False, labels: dict | None = None) -> dict:
    all_labels = {"kubernetes.io/hostname": name, **GFD, **(DRA_LABEL if dra else {}), **(labels or {})}
    allocatable = {"cpu": "64", "memory": "512Gi", "pods": "110"}
    if not dra:
        allocatable["nvidia.com/gpu"] = str(gpus)
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": f"uid-node-{name}",
                                                             "labels": all_labels},
            "status": {"capacity": dict(allocatable), "allocatable": allocatable}}


def resource_slice(node_name: str, gpus: int = 4) -> dict:
    attributes = {"type": {"string": "gpu"}, "productName": {"string": "NVIDIA A100-SXM4-80GB"},
                  "architecture": {"string": "Ampere"}, "brand": {"string": "Nvidia"},
                  "uuid": {"string": "GPU-0"}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node_name}-gpu.nvidia.com"},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": node_name,
                     "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}", "attributes": {**attributes,
                                                                     "uuid": {"string": f"GPU-{node_name}-{i}"}},
                                  "capacity": {"memory": {"value": "80Gi"}}} for i in range(gpus)]}}


def device_class() -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.nvidia.com"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && "
                                                          "device.attributes['gpu.nvidia.com'].type == 'gpu'"}}]}}


def container(gpu: str | None = "1", name: str = "main", resource: str = "nvidia.com/gpu") -> dict:
    c: dict[str, Any] = {"name": name, "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"}
    if gpu is not None:
        c["resources"] = {"limits": {resource: gpu}}
    return c


def template(app: str, *containers: dict, node_selector: dict | None = None) -> dict:
    spec: dict[str, Any] = {"containers": list(containers) or [container()]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {"metadata": {"labels": {"app": app}}, "spec": spec}


def workload(kind: str, name: str, namespace: str, tmpl: dict, replicas: int | None = 1) -> dict:
    api = {"Deployment": "apps/v1", "StatefulSet": "apps/v1", "DaemonSet": "apps/v1", "ReplicaSet": "apps/v1",
           "Job": "batch/v1", "CronJob": "batch/v1"}[kind]
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": tmpl["metadata"]["labels"]["app"]}},
                            "template": tmpl}
    if kind in ("Deployment", "StatefulSet", "ReplicaSet"):
        spec["replicas"] = replicas
    if kind == "StatefulSet":
        spec["serviceName"] = name
    if kind == "Job":
        spec = {"template": {**tmpl, "spec": {**tmpl["spec"], "restartPolicy": "Never"}}}
    if kind == "CronJob":
        spec = {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": {
            **tmpl, "spec": {**tmpl["spec"], "restartPolicy": "OnFailure"}}}}}
    return {"apiVersion": api, "kind": kind,
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{kind.lower()}-{namespace}-{name}"},
            "spec": spec}


def owned_by(obj: dict, owner: dict) -> dict:
    obj = copy.deepcopy(obj)
    obj["metadata"]["ownerReferences"] = [{"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                                           "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                                           "controller": True}]
    return obj


def pod(name: str, namespace: str, tmpl: dict, node_name: str, owner: dict | None = None) -> dict:
    obj = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": namespace, "uid": f"uid-pod-{namespace}-{name}",
                        "labels": dict(tmpl["metadata"]["labels"])},
           "spec": {**copy.deepcopy(tmpl["spec"]), "nodeName": node_name},
           "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    return owned_by(obj, owner) if owner else obj


def pdb(name: str, namespace: str, app: str, min_available: int | str = 1) -> dict:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": app}}}}


def pytorch_job(name: str, namespace: str, workers: int) -> dict:
    group, version, _, kind = CR_KIND
    return {"apiVersion": f"{group}/{version}", "kind": kind,
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-pytorchjob-{name}"},
            "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": workers, "template": template(name, container("1"))}}}}


def mixed_cluster() -> list[dict]:
    """The objects of the cluster. Legacy node load: legacy-1 3/4, legacy-2 3/4, legacy-3 2/4, legacy-4 1/4."""
    objects: list[dict] = [node("dra-1", dra=True), resource_slice("dra-1"), device_class(),
                           node("legacy-1"), node("legacy-2"), node("legacy-3"), node("legacy-4"),
                           {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "cpu-1", "uid": "uid-node-cpu-1"},
                            "status": {"allocatable": {"cpu": "16"}}}]
    for ns in ("ml", "serving"):
        objects.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

    def run(kind, name, ns, tmpl, nodes, replicas=None):
        top = workload(kind, name, ns, tmpl, replicas if replicas is not None else len(nodes))
        objects.append(top)
        owner = top
        if kind == "Deployment":
            rs = owned_by(workload("ReplicaSet", f"{name}-7d9f", ns, tmpl, len(nodes)), top)
            objects.append(rs)
            owner = rs
        for i, node_name in enumerate(nodes):
            objects.append(pod(f"{name}-{i}", ns, tmpl, node_name, owner))
        return top

    run("Deployment", "web", "serving", template("web"), ["legacy-1", "legacy-2"])
    objects.append(pdb("web", "serving", "web", 1))
    run("Deployment", "infer", "serving",
        template("infer", node_selector={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}), ["legacy-1"])
    run("StatefulSet", "store", "serving", template("store"), ["legacy-2", "legacy-3"])
    objects.append(pdb("store", "serving", "store", "50%"))
    run("DaemonSet", "probe", "ml", template("probe", node_selector={"probe": "yes"}), ["legacy-1"])
    objects[objects.index(next(o for o in objects if o.get("metadata", {}).get("name") == "legacy-1"))][
        "metadata"]["labels"]["probe"] = "yes"
    train = template("train", container("2"))
    job = run("Job", "train", "ml", train, ["legacy-2"])
    del job  # running: its template is immutable
    nightly = workload("CronJob", "nightly", "ml", template("nightly"))
    objects.append(nightly)
    objects.append(owned_by(workload("Job", "nightly-2891", "ml", template("nightly")), nightly))
    bert = pytorch_job("bert", "ml", 2)
    objects.append(bert)
    objects.extend(owned_by(pod(f"bert-worker-{i}", "ml", template("bert"), n), bert)
                   for i, n in enumerate(["legacy-3", "legacy-4"]))
    objects.append(workload("Deployment", "notebook", "ml", template("notebook"), 0))  # scaled to zero
    objects.append(workload("Deployment", "broken", "ml", template("broken", container("150", resource="nvidia.com/vcuda-core"))))
    objects.append(workload("Deployment", "h100", "ml", template(
        "h100", node_selector={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"})))
    objects.append(workload("Deployment", "cpu-only", "serving", template("cpu-only", container(None))))
    return objects
