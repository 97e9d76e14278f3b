"""DeviceClasses that let the scheduler serve MIG extended resources from DRA (KEP-5004).

A DeviceClass with ``spec.extendedResourceName`` (resource.k8s.io/v1, gate DRAExtendedResource:
alpha 1.34-1.35, beta and on by default from 1.36) makes the scheduler satisfy a pod's plain
``nvidia.com/mig-1g.10gb: 1`` with a DRA device of that class, without rewriting the pod.  NVIDIA's
GPU class already maps ``nvidia.com/gpu``; MIG profiles need one class each.  The shape and names
follow NVIDIA's own example (kubernetes-sigs/dra-driver-nvidia-gpu
demo/specs/extended-resources/mig-1g-12gb.yaml): class ``mig-1g-12gb.gpu.nvidia.com``, selector on
the driver, ``type == 'mig'`` and the driver's ``profile``, extendedResourceName the device plugin's
resource name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from kubectl_gpu.core import constants as c
from kubectl_gpu.dra.facts import device_plugin_mig_resource
from kubectl_gpu.core import mig_profile_of

MANAGED = {c.MANAGED_BY_LABEL: c.MANAGED_BY_VALUE}


def class_name(profile: str) -> str:
    """``1g.10gb+me`` -> ``mig-1g-10gb-me.gpu.nvidia.com`` (a DNS subdomain, as NVIDIA names them)."""
    return f"mig-{re.sub(r'[^a-z0-9]+', '-', profile.lower()).strip('-')}.{c.NVIDIA_DRIVER}"


def mig_device_class(profile: str, extended_resource: str | None = None) -> dict[str, Any]:
    resource = extended_resource or device_plugin_mig_resource(profile)
    domain = c.NVIDIA_ATTRIBUTE_DOMAIN
    expression = (f"device.driver == '{c.NVIDIA_DRIVER}' && device.attributes['{domain}'].type == 'mig' && "
                  f"device.attributes['{domain}'].profile == '{profile}'")
    return {
        "apiVersion": f"{c.DRA_GROUP}/v1",
        "kind": "DeviceClass",
        "metadata": {"name": class_name(profile), "labels": dict(MANAGED)},
        "spec": {"selectors": [{"cel": {"expression": expression}}], "extendedResourceName": resource},
    }


def mig_device_classes(resources: Iterable[str] = (), profiles: Iterable[str] = ()) -> list[dict[str, Any]]:
    """One class per MIG profile: those the legacy ``resources`` (nvidia.com/mig-...) ask for, and the
    driver ``profiles`` a cluster publishes.  A resource name that spells no profile is skipped."""
    wanted: dict[str, str] = {}
    for resource in resources:
        profile = mig_profile_of(resource)
        if profile is not None:
            wanted.setdefault(profile, resource.strip())
    for profile in profiles:
        wanted.setdefault(profile, device_plugin_mig_resource(profile))
    return [mig_device_class(p, r) for p, r in sorted(wanted.items())]
