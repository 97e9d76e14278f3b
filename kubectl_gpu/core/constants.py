"""Names shared by every face of kubectl-gpu (labels, annotations, legacy families)."""

from __future__ import annotations

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "kubectl-gpu"

# JSON of the legacy requests and node constraints a rewrite replaced: makes every
# rewrite traceable and reversible.
ORIGINAL_RESOURCES_ANNOTATION = "kubectl-gpu.io/original-resources"
# On generated claim objects: a one-line description of what the claim asks for.
SUMMARY_ANNOTATION = "kubectl-gpu.io/summary"
OPT_OUT_LABEL = "kubectl-gpu.io/opt-out"

DRA_GROUP = "resource.k8s.io"

NVIDIA_DRIVER = "gpu.nvidia.com"
# DeviceClasses the NVIDIA DRA driver installs, and GKE's TPU class.
GPU_DEVICE_CLASS = "gpu.nvidia.com"
MIG_DEVICE_CLASS = "mig.nvidia.com"
TPU_DEVICE_CLASS = "tpu.google.com"
NVIDIA_ATTRIBUTE_DOMAIN = "gpu.nvidia.com"
NVIDIA_CONFIG_API_VERSION = "resource.nvidia.com/v1beta1"

# Legacy families, by the names configuration uses.
NVIDIA_GPU = "nvidia-gpu"
VCUDA = "vcuda"
MIG = "mig"
HAMI = "hami"
ALIYUN = "aliyun"
VGPU_MANAGER = "vgpu-manager"
TPU = "tpu"
FAMILIES = (NVIDIA_GPU, VCUDA, MIG, HAMI, ALIYUN, VGPU_MANAGER, TPU)

# Attributes the NVIDIA DRA driver stopped publishing in v25.12: a selector on them is a
# runtime error for every device, which aborts scheduling of the pod.
REMOVED_NVIDIA_ATTRIBUTES = ("index", "minor")
