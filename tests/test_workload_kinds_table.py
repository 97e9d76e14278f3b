"""One table of the built-in workloads (kubectl_gpu/k8s/paths.py, WORKLOADS): fleet lists and
patches them, the webhook rewrites their pod templates and labels its metrics with their kinds,
the clean-up scans them for claim references, and the chart routes them to /mutate.  A kind
added to the table reaches every one of them; a place that keeps its own list fails here.

ReplicationController is one of them: its pod template is spec.template
(k8s.io/api core/v1 ReplicationControllerSpec.Template), docs/webhook.md promises its rewrite."""

from __future__ import annotations

from kubectl_gpu.fleet.cluster_io import BUILTIN_WORKLOADS
from kubectl_gpu.fleet.execute import BUILTIN_PLURALS
from kubectl_gpu.fleet.snapshot import snapshot_from_objects
from kubectl_gpu.fleet.workloads import TEMPLATE_POINTERS
from kubectl_gpu.k8s.paths import POD, WORKLOAD_RESOURCES, WORKLOADS
from webhook.metrics import KIND_LABELS
from webhook.mutation import POD_TEMPLATE_PATHS

from tests.test_chart_support import needs_helm, rendered, webhook_entries

TABLE = {(w.resource.group, w.resource.kind): w.template for w in WORKLOADS}


def test_the_table_names_every_built_in_workload_with_its_template():
    assert TABLE == {
        ("apps", "Deployment"): ("spec", "template"), ("apps", "StatefulSet"): ("spec", "template"),
        ("apps", "DaemonSet"): ("spec", "template"), ("apps", "ReplicaSet"): ("spec", "template"),
        ("batch", "Job"): ("spec", "template"), ("batch", "CronJob"): ("spec", "jobTemplate", "spec", "template"),
        ("", "ReplicationController"): ("spec", "template"),
    }


def test_fleet_lists_reads_and_patches_every_workload_of_the_table():
    assert set(BUILTIN_WORKLOADS) == {(r.group, r.version, r.plural) for r in WORKLOAD_RESOURCES}
    assert set(BUILTIN_PLURALS) == {(r.api_version, r.kind) for r in (*WORKLOAD_RESOURCES, POD)}
    assert TEMPLATE_POINTERS == {key: "".join(f"/{p}" for p in path) for key, path in TABLE.items()}


def test_a_replication_controller_is_a_fleet_workload():
    rc = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc", "namespace": "ns"},
          "spec": {"replicas": 2, "template": {"spec": {"containers": [
              {"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}}
    snapshot = snapshot_from_objects([rc])
    assert [w["kind"] for w in snapshot.workloads] == ["ReplicationController"]


def test_the_webhook_rewrites_and_labels_every_workload_of_the_table():
    assert POD_TEMPLATE_PATHS == {("", "Pod"): (), **TABLE}
    assert {kind for _, kind in TABLE} <= KIND_LABELS


@needs_helm
def test_the_chart_routes_every_workload_of_the_table_to_mutate():
    """The chart rendered by the real helm (.tools/bin, as the other chart tests render it)."""
    entries = webhook_entries(rendered(None), "MutatingWebhookConfiguration")
    mutate_rules = [rule for name, entry in entries.items() if name != "pods.kubectl-gpu.io" for rule in entry["rules"]]
    routed = {(group, version, resource) for rule in mutate_rules for group in rule["apiGroups"]
              for version in rule["apiVersions"] for resource in rule["resources"]}
    assert routed == {(r.group, r.version, r.plural) for r in WORKLOAD_RESOURCES}
