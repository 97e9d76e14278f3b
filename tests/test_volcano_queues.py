"""Volcano's Queues follow the migration, as ResourceQuotas and Kueue's ClusterQueues do.

From volcano-sh/volcano v1.15.0 (commit of the tag; read at ed72c7c815a9fd547a787134676f73d42e9d049c):
the capacity plugin caps DRA devices per DeviceClass only under the keys ``deviceclass/<class>`` (a
device count) and ``<dim>.deviceclass/<class>`` (consumable capacity) in a Queue's ``capability``,
``deserved`` and ``guarantee`` (pkg/scheduler/plugins/capacity/capacity.go ``DeviceClassCountPrefix``,
``parseDRAResourceList``); a class the Queue does not name passes through uncapped
(capacity_dra_test.go "Case 4: Pass-through for unconfigured DeviceClass").  So a Queue that caps
``nvidia.com/gpu`` stops capping the pods once they hold claims of gpu.nvidia.com.  Requests with
``firstAvailable`` or ``allocationMode: All`` are not counted at all (pkg/scheduler/cache/cache.go:
"uses FirstAvailable; DRA quota tracking is skipped"); a claim shared by several pods is charged once
(TestSharedResourceClaimIsChargedOnce)."""
from __future__ import annotations

import yaml
from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from kubectl_gpu.core import Severity, Sharing, TranslateOptions, translate_pod_template
from kubectl_gpu.core import is_volcano_queue, volcano_queue_change
from tests.test_cluster_profile import SMALL_SHARE_POD, a100_mig_cluster, claims_of, migrate, request_of


def queue(name: str = "gpu-team", **sections: dict) -> dict:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": {"reclaimable": True, **sections}}


def test_each_section_capping_gpus_gets_the_device_count_of_the_gpu_class():
    """A Queue's guarantee is a struct whose ResourceList is ``guarantee.resource`` (volcano-sh/apis
    pkg/apis/scheduling/v1beta1/types.go at ed2d962a3a85cce852c88b610755c2f64d54a214, ``type
    Guarantee struct { Resource v1.ResourceList `json:"resource"` }``; the capacity plugin reads
    ``queue.Queue.Spec.Guarantee.Resource``), so that is where its GPUs and its DRA key live."""
    change = volcano_queue_change(queue(capability={"cpu": "64", "nvidia.com/gpu": "8"},
                                        deserved={"nvidia.com/gpu": "4"}, guarantee={"resource": {"nvidia.com/gpu": 1}}))
    assert change.operations == (
        {"op": "add", "path": "/spec/capability/deviceclass~1gpu.nvidia.com", "value": "8"},
        {"op": "add", "path": "/spec/deserved/deviceclass~1gpu.nvidia.com", "value": "4"},
        {"op": "add", "path": "/spec/guarantee/resource/deviceclass~1gpu.nvidia.com", "value": "1"},
    )
    assert "guarantee.resource: deviceclass/gpu.nvidia.com: 1" in change.added
    said = " ".join(n.message for n in change.notes)
    assert "capacity plugin" in said and "capacity.DynamicResourceAllocationEnable" in said and "v1.15" in said
    assert "proportion" in said  # Volcano's default queue plugin counts no DRA device at all


def test_mig_profiles_add_up_in_the_mig_class_and_lose_their_own_caps():
    change = volcano_queue_change(queue(capability={"nvidia.com/mig-1g.10gb": "14", "nvidia.com/mig-3g.40gb": "4"}))
    assert change.operations == ({"op": "add", "path": "/spec/capability/deviceclass~1mig.nvidia.com", "value": "18"},)
    assert any(n.severity is Severity.WARNING and "mig-1g.10gb" in n.message for n in change.notes)


def test_shares_of_a_gpu_are_named_not_silently_dropped():
    change = volcano_queue_change(queue(capability={"volcano.sh/vgpu-memory": "40960", "volcano.sh/vgpu-number": "4"}))
    assert change.operations == ({"op": "add", "path": "/spec/capability/deviceclass~1gpu.nvidia.com", "value": "4"},)
    [warning] = [n for n in change.notes if n.severity is Severity.WARNING]
    assert "volcano.sh/vgpu-memory" in warning.message and ".deviceclass/gpu.nvidia.com" in warning.message


def test_an_existing_dra_entry_is_kept_and_a_second_run_changes_nothing():
    once = volcano_queue_change(queue(capability={"nvidia.com/gpu": "8", "deviceclass/gpu.nvidia.com": "6"}))
    assert once.operations == ()
    assert any("already" in n.message for n in once.notes)


def test_queues_without_gpus_and_other_kinds_are_left_alone():
    assert volcano_queue_change(queue(capability={"cpu": "8"})).notes == ()
    assert not is_volcano_queue({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Queue"})
    assert is_volcano_queue(queue())


def test_migrate_rewrites_a_volcano_queue_in_a_file_keeping_its_comments(tmp_path):
    path = tmp_path / "queue.yaml"
    path.write_text("# the research team's cap\n" + yaml.safe_dump(queue(capability={"nvidia.com/gpu": "8"})))
    first = CliRunner().invoke(main, ["migrate", str(path)])
    assert first.exit_code == 0, first.output
    migrated = yaml.safe_load(first.stdout.split("---", 1)[-1]) if first.stdout.startswith("---") else yaml.safe_load(first.stdout)
    assert migrated["spec"]["capability"] == {"nvidia.com/gpu": "8", "deviceclass/gpu.nvidia.com": "8"}
    assert first.stdout.lstrip("-\n").startswith("# the research team's cap")
    path.write_text(first.stdout)
    again = CliRunner().invoke(main, ["migrate", str(path)])
    assert again.stdout == first.stdout


def test_volcano_scheduled_pods_get_no_firstavailable_list_its_queues_would_not_count(tmp_path):
    cluster = a100_mig_cluster(tmp_path, "v1")
    pod = yaml.safe_load(SMALL_SHARE_POD)
    pod["spec"]["schedulerName"] = "volcano"
    result, docs = migrate(yaml.safe_dump(pod), "--cluster", cluster, "--kubernetes-version", "1.34")
    assert result.exit_code == 0, result.stderr
    [claim] = claims_of(docs)
    assert "firstAvailable" not in request_of(claim)
    assert "Volcano's queue quota cannot account firstAvailable claims" in result.stderr


def test_volcano_keeps_one_claim_shared_by_the_workloads_pods():
    """Volcano charges a shared claim once: --sharing timeslicing stays a shared claim there."""
    pod = {"metadata": {"name": "p"}, "spec": {"schedulerName": "volcano", "containers": [
        {"name": "main", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": "0.5"}}}]}}
    shared = translate_pod_template(pod, TranslateOptions(sharing=Sharing.TIMESLICING, sharing_group="Job/train"))
    assert [c.kind for c in shared.claims] == ["ResourceClaim"]


def test_plan_shows_what_volcano_queues_need_and_writes_them_in_yaml(tmp_path):
    from tests.fleet_cluster import device_class, node, resource_slice

    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([node("dra-1", dra=True), resource_slice("dra-1"), device_class(),
                                        queue("research", capability={"nvidia.com/gpu": "8"})]))
    table = CliRunner().invoke(main, ["plan", "-f", str(path)])
    assert "VOLCANO QUEUES" in table.stdout
    assert "Queue/research: add capability: deviceclass/gpu.nvidia.com: 8" in table.stdout
    document = yaml.safe_load(CliRunner().invoke(main, ["plan", "-f", str(path), "-o", "yaml"]).stdout)
    [entry] = document["volcanoQueues"]
    assert entry["queue"]["spec"]["capability"] == {"nvidia.com/gpu": "8", "deviceclass/gpu.nvidia.com": "8"}


def test_a_negative_entry_is_an_error_and_does_not_add_up_with_the_others():
    """Volcano's queue admission refuses a negative amount ("must be greater than or equal to 0",
    volcano-sh/volcano pkg/webhooks/admission/queues/validate/validate_queue_test.go
    "queue-negative-guarantee", at ed72c7c8): summed with another entry of the same
    class it would have made a wrong cap (-3 + 4 = 1) without a word."""
    change = volcano_queue_change(queue(capability={"nvidia.com/gpu": "-3", "nvidia.com/gpu.shared": "4"}))
    assert change.operations == ({"op": "add", "path": "/spec/capability/deviceclass~1gpu.nvidia.com", "value": "4"},)
    [error] = [n.message for n in change.notes if n.severity is Severity.ERROR]
    assert "capability.nvidia.com/gpu" in error and "negative" in error


def test_a_fractional_gpu_cap_becomes_the_whole_devices_it_allows():
    """Volcano reads a device count with Quantity.Value(), which rounds up (capacity.go
    parseDRAResourceList): "2.5" would let a third device in.  A claim holds whole devices, so the cap
    that holds the same is the whole number below it, and the report says so."""
    change = volcano_queue_change(queue(capability={"nvidia.com/gpu": "2500m"}))
    assert change.operations == ({"op": "add", "path": "/spec/capability/deviceclass~1gpu.nvidia.com", "value": "2"},)
    assert any("2.5 GPUs" in n.message and "rounds up" in n.message for n in change.notes)
