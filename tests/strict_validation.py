"""Objects migrate emits, held to the API server's strict schemas of every release that serves them."""

from __future__ import annotations

from typing import Any

import kubernetes_validate

# The Kubernetes releases serving each resource.k8s.io version kubectl-gpu writes, within 1.32-1.37.
RELEASES = {"v1": ("1.34", "1.35", "1.36", "1.37"), "v1beta2": ("1.33", "1.34", "1.35", "1.36", "1.37"),
            "v1beta1": ("1.32", "1.33", "1.34", "1.35", "1.36", "1.37")}
ALL_RELEASES = ("1.32", "1.33", "1.34", "1.35", "1.36", "1.37")


def assert_strictly_valid(obj: dict[str, Any], releases: tuple[str, ...] = ALL_RELEASES) -> None:
    for release in releases:
        kubernetes_validate.validate(obj, release, strict=True)


def pod_of(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
