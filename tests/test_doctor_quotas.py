"""`doctor` finds namespaces whose GPU use is capped only by legacy quota entries while their pods
hold DRA claims, with the cap and the devices held."""

from __future__ import annotations

from kubectl_gpu.inspect.doctor import DoctorInputs, run_doctor

DEVICES = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"


def quota(hard: dict, namespace: str = "team-a") -> dict:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "gpus", "namespace": namespace},
            "spec": {"hard": hard}}


def allocated_claim(name: str, devices: int, namespace: str = "team-a", device_class: str = "gpu.nvidia.com") -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class,
                                                                           "allocationMode": "ExactCount",
                                                                           "count": devices}}]}},
            "status": {"allocation": {"devices": {"results": [
                {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "n1", "device": f"gpu-{i}"}
                for i in range(devices)]}}}}


def findings(**objects):
    report = run_doctor(DoctorInputs(served_dra_versions=("v1",), **{k: tuple(v) for k, v in objects.items()}))
    [check] = [c for c in report.checks if c.name == "quotas"]
    return check


def test_a_legacy_only_cap_over_namespaces_that_hold_claims_is_found_with_the_numbers():
    check = findings(resource_quotas=[quota({"requests.nvidia.com/gpu": "4"})],
                     resource_claims=[allocated_claim("a", 2), allocated_claim("b", 4)])
    [finding] = check.findings
    assert finding.code == "quota-legacy-only" and finding.subject == "resourcequota/team-a/gpus"
    assert finding.message == ("ResourceQuota team-a/gpus caps requests.nvidia.com/gpu at 4, but the namespace's "
                               "claims hold 6 device(s) of DeviceClass gpu.nvidia.com, which it does not count")
    assert finding.fix.startswith(f'add {DEVICES}: "4"')
    assert check.summary == "1 ResourceQuota(s), 1 capping legacy GPUs"


def test_a_quota_with_the_dra_entry_or_without_claims_is_fine():
    assert findings(resource_quotas=[quota({"requests.nvidia.com/gpu": "4", DEVICES: "4"})],
                    resource_claims=[allocated_claim("a", 2)]).findings == ()
    assert findings(resource_quotas=[quota({"requests.nvidia.com/gpu": "4"})]).findings == ()
    assert findings(resource_quotas=[quota({"requests.nvidia.com/gpu": "4"}, namespace="other")],
                    resource_claims=[allocated_claim("a", 2)]).findings == ()


def test_a_class_whose_extended_resource_is_counted_keeps_the_legacy_cap():
    # The API server keeps extendedResourceName only with DRAExtendedResource on: then claims of the
    # class count toward requests.nvidia.com/gpu.
    gpu_class = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.nvidia.com"},
                 "spec": {"extendedResourceName": "nvidia.com/gpu"}}
    check = findings(resource_quotas=[quota({"requests.nvidia.com/gpu": "4"})], device_classes=[gpu_class],
                     resource_claims=[allocated_claim("a", 2)])
    assert check.findings == ()
    other = findings(resource_quotas=[quota({"requests.aliyun.com/gpu-count": "4"})], device_classes=[gpu_class],
                     resource_claims=[allocated_claim("a", 2)])
    assert [f.code for f in other.findings] == ["quota-legacy-only"]


def test_doctor_reads_the_quotas_from_the_cluster(k8s_double):
    from click.testing import CliRunner

    from kubectl_gpu.cli.main import main

    k8s_double.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
                    quota({"requests.nvidia.com/gpu": "4"}), allocated_claim("a", 2))
    result = CliRunner().invoke(main, ["doctor", "-o", "json"], env=k8s_double.kubectl_env())
    assert "quota-legacy-only" in result.output and "hold 2 device(s)" in result.output
