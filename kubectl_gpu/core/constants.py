"""Names shared by every face of kubectl-gpu: the driver's and DRA's come from `facts`, the one
table of them; the legacy family names are the core's own vocabulary."""

from __future__ import annotations

from kubectl_gpu.dra.facts import (DRA_GROUP, GPU_DEVICE_CLASS, MANAGED_BY_LABEL, MANAGED_BY_VALUE, MIG_DEVICE_CLASS,
                    NVIDIA_ATTRIBUTE_DOMAIN, NVIDIA_CONFIG_API_VERSION, NVIDIA_DRIVER, OPT_OUT_LABEL,
                    ORIGINAL_RESOURCES_ANNOTATION, REMOVED_NVIDIA_ATTRIBUTES, SUMMARY_ANNOTATION,
                    TPU_DEVICE_CLASS)

__all__ = [
    "DRA_GROUP", "GPU_DEVICE_CLASS", "MANAGED_BY_LABEL", "MANAGED_BY_VALUE", "MIG_DEVICE_CLASS",
    "NVIDIA_ATTRIBUTE_DOMAIN", "NVIDIA_CONFIG_API_VERSION", "NVIDIA_DRIVER", "OPT_OUT_LABEL",
    "ORIGINAL_RESOURCES_ANNOTATION", "REMOVED_NVIDIA_ATTRIBUTES", "SUMMARY_ANNOTATION", "TPU_DEVICE_CLASS",
    "NVIDIA_GPU", "VCUDA", "MIG", "HAMI", "ALIYUN", "VGPU_MANAGER", "VOLCANO", "VOLCANO_GPUSHARE", "KOORDINATOR",
    "TPU", "FAMILIES",
]

# Legacy families, by the names configuration uses.
NVIDIA_GPU = "nvidia-gpu"
VCUDA = "vcuda"
MIG = "mig"
HAMI = "hami"
ALIYUN = "aliyun"
VGPU_MANAGER = "vgpu-manager"
VOLCANO = "volcano"
VOLCANO_GPUSHARE = "volcano-gpushare"  # Volcano's GPU share before vGPU: volcano.sh/gpu-memory, gpu-number
KOORDINATOR = "koordinator"  # Koordinator's device share: koordinator.sh/gpu-core, gpu-memory(-ratio), gpu.shared
TPU = "tpu"
FAMILIES = (NVIDIA_GPU, VCUDA, MIG, HAMI, ALIYUN, VGPU_MANAGER, VOLCANO, VOLCANO_GPUSHARE, KOORDINATOR, TPU)
