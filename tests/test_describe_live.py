"""`kubectl gpu describe` against the HTTP API double (real HTTP, real kubernetes client),
seeded with corpus manifests and synthetic NVIDIA nodes, slices, claims and pods."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from kubectl_gpu.k8s import DEFAULT_PAGE_SIZE
from tests import builders as b
from tests.corpus import corpus_file
from tests.k8sdouble import K8sDouble



def run(double, *args: str, kubeconfig: str | None = None):
    result = CliRunner().invoke(main, [*args, "--kubeconfig", kubeconfig or double.kubeconfig_path()],
                                catch_exceptions=False)
    return result


def as_json(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def corpus(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(corpus_file("dra", name).read_text()) if d]


@pytest.fixture
def gpu_cluster(k8s_double):
    """Two DRA nodes (8 H100s each), one device-plugin node, a DRA node that still runs the device
    plugin, pods on all of them."""
    k8s_double.seed(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
        *b.nvidia_device_classes(),
        b.dra_node("dra-a"), b.dra_node("dra-b"), b.dra_node("dra-bad", legacy={"nvidia.com/gpu": "8"}),
        b.node("legacy-1", legacy={"nvidia.com/gpu": "4"}), b.node("cpu-1"),
        b.gpu_slice("dra-a"), b.gpu_slice("dra-b"), b.gpu_slice("dra-bad"),
        b.template("one-gpu", "ml"),
        b.pod("train-0", "ml", node_name="dra-a", claims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
              claim_statuses={"gpu": "train-0-gpu-7x2kq"}, labels={"app": "train"}),
        b.claim("train-0-gpu-7x2kq", "ml", allocated=[("gpu", "gpu-5")], node_name="dra-a",
                reserved_for=["train-0"], owner_pod="train-0"),
        b.pod("old-job", "ml", node_name="legacy-1", limits={"nvidia.com/gpu": 2}, labels={"app": "old"}),
        b.pod("sneaky", "default", node_name="dra-bad", limits={"nvidia.com/gpu": 1}),
        b.pod("done", "default", node_name="dra-b", phase="Succeeded", limits={"nvidia.com/gpu": 1}),
    )
    return k8s_double


def test_cluster_summary_counts_gpus_holders_and_flags_double_counting(gpu_cluster):
    summary = as_json(run(gpu_cluster, "describe", "-o", "json"))
    assert summary["kind"] == "GpuClusterSummary"
    assert summary["totals"] == {"nodes": 4, "draNodes": 3, "gpus": 24, "allocated": 1, "shared": 0,
                                 "free": 23, "migDevices": 0, "migDevicesInUse": 0, "legacyGpuPods": 2}
    nodes = {n["name"]: n for n in summary["nodes"]}
    assert "cpu-1" not in nodes
    assert nodes["dra-a"]["allocated"] == 1 and nodes["dra-a"]["products"] == ["NVIDIA H100 80GB HBM3"]
    assert nodes["legacy-1"]["legacyResources"] == [{"name": "nvidia.com/gpu", "family": "nvidia-gpu",
                                                     "capacity": "4", "allocatable": "4"}]
    assert [(f["code"], f["subject"]) for f in summary["findings"]] == [("double-counting", "node/dra-bad")]
    assert "default/sneaky" in summary["findings"][0]["message"]


def test_cluster_summary_table_for_people(gpu_cluster):
    """kubectl's default table fits 80 columns; the rest is -o wide's.  A DRA GPU count and a
    device-plugin count are never one column: DRA GPUS and DRA USE count DRA devices, LEGACY USE
    the device plugin's GPUs its pods hold, LEGACY (ALLOCATABLE) names its resources."""
    result = run(gpu_cluster, "describe")
    assert result.exit_code == 0, result.output
    table = result.output.split("\n\n")[0].splitlines()
    assert max(len(line) for line in table) <= 80, table
    lines = {line.split()[0]: line.split() for line in table}
    assert " ".join(lines["NODE"]) == "NODE DRA DRA GPUS DRA USE LEGACY USE FINDINGS"
    assert lines["dra-a"][:3] == ["dra-a", "yes", "8"] and lines["dra-a"][4:] == ["1/8", "-", "-"]
    assert lines["legacy-1"][:4] == ["legacy-1", "no", "0", "-"] and lines["legacy-1"][-2:] == ["2/4", "-"]
    assert lines["dra-bad"][-1] == "double-counting"
    wide = run(gpu_cluster, "describe", "-o", "wide").output
    header = wide.splitlines()[0].split()
    assert " ".join(header) == ("NODE DRA DRA GPUS ALLOCATED SHARED FREE MIG (IN USE) DRA USE LEGACY USE "
                                "LEGACY (ALLOCATABLE) LEGACY PODS PRODUCT MEMORY FINDINGS")
    assert "NVIDIA H100 80GB HBM3" in wide and "80Gi" in wide and "nvidia.com/gpu=4" in wide


def test_namespace_narrows_the_summary_to_the_gpus_its_pods_use(gpu_cluster):
    """-n NS: the nodes where NS's pods hold GPUs (a DRA claim's devices, device-plugin GPUs), each
    device as the cluster sees it (another namespace's claim still takes it), and NS's legacy pods only."""
    summary = as_json(run(gpu_cluster, "describe", "-n", "ml", "-o", "json"))
    assert [n["name"] for n in summary["nodes"]] == ["dra-a", "legacy-1"]  # train-0's claim, old-job
    assert summary["totals"]["legacyGpuPods"] == 1 and summary["totals"]["allocated"] == 1
    default = as_json(run(gpu_cluster, "describe", "-n", "default", "-o", "json"))
    assert [n["name"] for n in default["nodes"]] == ["dra-bad"]  # sneaky; done has finished
    assert [(f["code"], f["subject"]) for f in default["findings"]] == [("double-counting", "node/dra-bad")]
    everyone = as_json(run(gpu_cluster, "describe", "-A", "-o", "json"))
    assert everyone["totals"]["nodes"] == 4 and everyone["totals"]["legacyGpuPods"] == 2


def test_label_selector_narrows_the_nodes(gpu_cluster):
    summary = as_json(run(gpu_cluster, "describe", "-l", "ack.node.gpu.schedule=disabled", "-o", "json"))
    assert sorted(n["name"] for n in summary["nodes"]) == ["dra-a", "dra-b", "dra-bad"]


def test_describe_node_lists_every_device_with_its_holder(gpu_cluster):
    node = as_json(run(gpu_cluster, "describe", "node", "dra-a", "-o", "json"))
    devices = {d["name"]: d for d in node["devices"]}
    assert len(devices) == 8
    held = devices["gpu-5"]
    assert held["state"] == "allocated"
    assert held["uuid"] == b.gpu_uuid("dra-a", 5) and held["memory"] == "80Gi"
    assert held["holders"] == [{"claim": "ml/train-0-gpu-7x2kq", "request": "gpu", "pods": ["ml/train-0"],
                                "consumedCapacity": {}, "shareID": None, "adminAccess": False}]
    assert node["findings"] == []
    table = run(gpu_cluster, "describe", "node", "dra-a").output
    assert "ml/train-0" in table.split() and b.gpu_uuid("dra-a", 5) not in table  # UUIDs are for -o wide
    wide = run(gpu_cluster, "describe", "node", "dra-a", "-o", "wide").output
    assert b.gpu_uuid("dra-a", 5) in wide and "ml/train-0-gpu-7x2kq" in wide


def test_describe_node_fits_80_columns_with_kubectls_usual_names(gpu_cluster):
    """A Deployment's pod names (and the claim names generated from them, longer still) on a DRA
    node and on a device-plugin node: the default tables fit 80 columns, saying which pod holds
    each GPU; the claim's name and whether DRA serves a legacy request (KEP-5004) are -o wide's."""
    pod = "inference-server-7d9f8c6b5d-xk2p9"
    gpu_cluster.seed(
        b.pod(pod, "serving", node_name="dra-b", claims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
              claim_statuses={"gpu": f"{pod}-gpu-abcde"}),
        b.claim(f"{pod}-gpu-abcde", "serving", allocated=[("gpu", "gpu-0")], node_name="dra-b", reserved_for=[pod],
                owner_pod=pod),
        b.pod("embeddings-batch-5f7c9d8b6-q8w2z", "serving", node_name="legacy-1", limits={"nvidia.com/gpu": 1}))
    for name in ("dra-b", "legacy-1"):
        table = run(gpu_cluster, "describe", "node", name).output.splitlines()
        assert max(len(line) for line in table) <= 80, table
    dra = run(gpu_cluster, "describe", "node", "dra-b").output
    assert f"serving/{pod}" in dra and "-gpu-abcde" not in dra
    assert f"serving/{pod}-gpu-abcde" in run(gpu_cluster, "describe", "node", "dra-b", "-o", "wide").output
    legacy = run(gpu_cluster, "describe", "node", "legacy-1", "-o", "wide").output
    assert "SERVED BY DRA (KEP-5004)" in legacy and "SERVED BY DRA" not in run(gpu_cluster, "describe", "node",
                                                                                "legacy-1").output


def test_describe_node_with_a_custom_dra_label(gpu_cluster):
    report = as_json(run(gpu_cluster, "describe", "node", "legacy-1", "--dra-node-label",
                         "kubernetes.io/hostname=legacy-1", "-o", "json"))
    assert report["draNodeLabel"] == "kubernetes.io/hostname=legacy-1"
    assert report["findings"][0]["code"] == "double-counting"
    assert "ml/old-job" in report["findings"][0]["message"]


def test_describe_node_that_does_not_exist(gpu_cluster):
    result = run(gpu_cluster, "describe", "node", "nope")
    assert result.exit_code == 1
    assert 'node "nope" not found' in result.output


def test_describe_pod_shows_generated_claim_and_allocated_device(gpu_cluster):
    pod = as_json(run(gpu_cluster, "describe", "pod", "train-0", "-n", "ml", "-o", "json"))
    (claim,) = pod["claims"]
    assert claim["resourceClaimTemplateName"] == "one-gpu"
    assert claim["resourceClaimName"] == "train-0-gpu-7x2kq" and claim["generated"]
    assert claim["devices"][0]["uuid"] == b.gpu_uuid("dra-a", 5)
    assert claim["devices"][0]["attributes"]["gpu.nvidia.com/productName"] == "NVIDIA H100 80GB HBM3"
    assert pod["explanation"] is None  # running pods need no explanation


def test_describe_pod_uses_the_context_namespace(gpu_cluster):
    kubeconfig = gpu_cluster.kubeconfig_path(namespace="ml")
    pod = as_json(run(gpu_cluster, "describe", "pod", "old-job", "-o", "json", kubeconfig=kubeconfig))
    assert pod["legacyRequests"] == [{"container": "main", "resource": "nvidia.com/gpu", "amount": "2",
                                      "family": "nvidia-gpu"}]
    assert run(gpu_cluster, "describe", "pod", "old-job").exit_code == 1  # not in "default"


def test_describe_pods_across_namespaces_and_by_label(gpu_cluster):
    everywhere = as_json(run(gpu_cluster, "describe", "pod", "-A", "-o", "json"))
    assert sorted(f'{p["namespace"]}/{p["name"]}' for p in everywhere["items"]) == [
        "default/done", "default/sneaky", "ml/old-job", "ml/train-0"]
    labelled = as_json(run(gpu_cluster, "describe", "pod", "-n", "ml", "-l", "app=train", "-o", "json"))
    assert [p["name"] for p in labelled["items"]] == ["train-0"]


def test_describe_unallocated_claim_says_why_against_everyone_elses_allocations(gpu_cluster):
    # dra-a has 7 free H100s (train-0 holds gpu-5), dra-b and dra-bad 8 each: 9 fit on no node.
    gpu_cluster.seed(b.claim("waiting", "ml", requests=[b.exact_request(count=9)]))
    claim = as_json(run(gpu_cluster, "describe", "claim", "waiting", "-n", "ml", "-o", "json"))
    assert claim["state"] == "waiting for allocation" and claim["devices"] == []
    (item,) = claim["explanation"]["items"]
    alternative = item["requests"][0]["alternatives"][0]
    assert (alternative["inClass"], alternative["free"], alternative["bestNodeFree"]) == (24, 23, 8)
    assert "at most 8 free on one node" in item["verdict"]
    table = run(gpu_cluster, "describe", "claim", "waiting", "-n", "ml").output
    assert "Why (explain):" in table and "at most 8 free on one node" in table


def test_describe_lists_print_one_line_per_pod_or_claim_and_a_table_per_node(gpu_cluster):
    claims = run(gpu_cluster, "describe", "claim", "-n", "ml").output.splitlines()
    assert [line.split() for line in claims] == [
        ["NAME", "STATE", "NODE", "DEVICES"],
        ["train-0-gpu-7x2kq", "allocated", "dra-a", "gpu-5"]]
    nodes = run(gpu_cluster, "describe", "node").output
    assert all(f"Node: {n}" in nodes for n in ("dra-a", "dra-b", "dra-bad", "legacy-1"))
    assert "cpu-1" not in nodes
    pods = run(gpu_cluster, "describe", "pod", "-A", "--no-headers").output.splitlines()
    assert [line.split()[:3] for line in pods] == [["default", "done", "Succeeded"], ["default", "sneaky", "Running"],
                                                   ["ml", "old-job", "Running"], ["ml", "train-0", "Running"]]
    assert run(gpu_cluster, "describe", "pod", "-n", "ml", "-o", "name").output == "pod/old-job\npod/train-0\n"
    assert run(gpu_cluster, "describe", "claim", "-n", "ml", "-o", "name").output == \
        "resourceclaim.resource.k8s.io/train-0-gpu-7x2kq\n"
    assert run(gpu_cluster, "describe", "-o", "name").output.split() == [
        "node/dra-a", "node/dra-b", "node/dra-bad", "node/legacy-1"]
    assert run(gpu_cluster, "describe", "claim", "-n", "default").output.strip() == "No ResourceClaims found."
    assert run(gpu_cluster, "describe", "node", "-l", "app=none").output.strip() == "No GPU nodes found."
    assert run(gpu_cluster, "describe", "pod", "-l", "app=none").output.strip() == "No pods using GPUs found."


def test_pending_pod_from_the_corpus_is_explained(k8s_double):
    docs = corpus("kubernetes-sigs__dra-driver-nvidia-gpu__demo_specs_quickstart_v1beta1_gpu-test1.yaml")
    k8s_double.seed(docs)
    k8s_double.seed(b.dra_node("dra-a"), b.gpu_slice("dra-a", 1),
                    b.claim("holder", "gpu-test1", allocated=[("gpu", "gpu-0")], node_name="dra-a",
                            reserved_for=["someone"]))
    pod = as_json(run(k8s_double, "describe", "pod", "pod1", "-n", "gpu-test1", "-o", "json"))
    assert pod["phase"] == "Pending"
    assert pod["claims"][0]["state"] == "not created yet"
    explanation = pod["explanation"]
    assert explanation["allocatable"] is False
    (item,) = explanation["items"]
    assert item["kind"] == "ResourceClaimTemplate" and item["name"] == "single-gpu"
    alternative = item["requests"][0]["alternatives"][0]
    assert (alternative["inClass"], alternative["free"]) == (1, 0)
    table = run(k8s_double, "describe", "pod", "pod1", "-n", "gpu-test1").output
    assert "Why (explain):" in table


def test_describe_claim_with_consumable_capacity_from_the_corpus(k8s_double):
    docs = corpus("kubernetes-sigs__dra-driver-nvidia-gpu__demo_specs_consumable-shares_memory-sharing.yaml")
    k8s_double.seed(docs)
    k8s_double.seed(b.dra_node("dra-a"), b.gpu_slice("dra-a", 1, shareable=True),
                    *[b.claim(f"memory-sharing-{i}-gpu", "gpu-share-memory", requests=[
                        b.exact_request(capacity={"memory": "4Gi"})], allocated=[("gpu", "gpu-0")],
                        node_name="dra-a", reserved_for=[f"memory-sharing-{i}"], owner_pod=f"memory-sharing-{i}",
                        consumed={"memory": "4Gi"}, share_id=f"share-{i}") for i in range(2)])
    claim = as_json(run(k8s_double, "describe", "claim", "memory-sharing-0-gpu", "-n", "gpu-share-memory",
                        "-o", "json"))
    assert claim["state"] == "allocated" and claim["node"] == "dra-a"
    assert claim["devices"][0]["consumedCapacity"] == {"memory": "4Gi"}
    assert claim["devices"][0]["shareID"] == "share-0"
    assert claim["requests"][0]["capacityRequests"] == {"memory": "4Gi"}
    node = as_json(run(k8s_double, "describe", "node", "dra-a", "-o", "json"))
    assert node["devices"][0]["state"] == "shared"
    assert node["devices"][0]["consumedCapacity"] == {"memory": "8Gi/80Gi"}
    as_yaml = yaml.safe_load(run(k8s_double, "describe", "node", "dra-a", "-o", "yaml").output)
    assert as_yaml == node


def test_example_driver_slices_from_the_corpus(k8s_double):
    listing = yaml.safe_load(corpus_file("dra", "kubernetes-sigs__dra-example-driver__README.md__L189-L320.yaml").read_text())
    k8s_double.seed(listing, b.node("dra-example-driver-cluster-worker"))
    node = as_json(run(k8s_double, "describe", "node", "dra-example-driver-cluster-worker", "-o", "json"))
    assert [d["product"] for d in node["devices"]] == ["LATEST-GPU-MODEL"] * 8
    assert node["devices"][7]["uuid"] == "gpu-657bd2e7-f5c2-a7f2-fbaa-0d1cdc32f81b"


def test_a_cluster_serving_only_v1beta1_is_read_in_v1beta1():
    with K8sDouble(kubernetes_version="1.32",
                   disabled_group_versions=["resource.k8s.io/v1", "resource.k8s.io/v1beta2"]) as double:
        double.seed(b.dra_node("dra-a"), b.gpu_slice("dra-a", 2, api_version="resource.k8s.io/v1beta1"))
        node = as_json(run(double, "describe", "node", "dra-a", "-o", "json"))
        assert [d["product"] for d in node["devices"]] == ["NVIDIA H100 80GB HBM3"] * 2
        assert {r.version for r in double.requests if r.resource == "resourceslices"} == {"v1beta1"}


def test_every_list_is_paginated_and_an_expired_continue_token_restarts_the_list(k8s_double):
    pods = 2 * DEFAULT_PAGE_SIZE + 100  # three pages
    k8s_double.seed(*[b.pod(f"p{i}", node_name="legacy-1", limits={"nvidia.com/gpu": 1}) for i in range(pods)],
                    b.node("legacy-1", legacy={"nvidia.com/gpu": str(pods)}))
    k8s_double.fail("list", "pods", status=410, reason="Expired", message="continue token expired", times=1)
    summary = as_json(run(k8s_double, "describe", "-o", "json"))
    assert summary["totals"]["legacyGpuPods"] == pods
    lists = [r for r in k8s_double.requests if r.verb == "list"]
    assert DEFAULT_PAGE_SIZE >= 500  # pages no smaller than kubectl's, so lists cost few round trips
    assert lists and all(r.query.get("limit") == str(DEFAULT_PAGE_SIZE) for r in lists)
    pod_pages = [r for r in lists if r.resource == "pods"]
    assert len(pod_pages) == 1 + 3  # the expired first attempt, then three pages
    assert sum(1 for r in pod_pages if r.query.get("continue")) == 2


def test_claims_read_page_by_page_are_counted_once_when_their_list_restarts(k8s_double):
    """describe reads who holds each device from each page of claims as it comes (while the
    server prepares the next); a continue token that expires on a later page restarts the list,
    and what the first reading saw is not counted twice."""
    nodes = 3
    k8s_double.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}})
    for n in range(nodes):
        k8s_double.seed(b.dra_node(f"gpu-{n}"), b.gpu_slice(f"gpu-{n}", 8))
    claims = 2 * DEFAULT_PAGE_SIZE + 10  # three pages, spread over 3 x 8 GPUs (shared where several)
    k8s_double.seed(*(b.claim(f"c{i}", "ml", allocated=[("gpu", f"gpu-{i % 8}")], node_name=f"gpu-{i % nodes}")
                      for i in range(claims)))
    k8s_double.fail("list", "resourceclaims", status=410, reason="Expired", message="continue token expired",
                    continuing=True, times=1)
    node = as_json(run(k8s_double, "describe", "node", "gpu-0", "-o", "json"))
    holders = [h["claim"] for d in node["devices"] for h in d["holders"]]
    assert sorted(holders) == sorted(f"ml/c{i}" for i in range(claims) if i % nodes == 0)  # each once
    claim_pages = [r for r in k8s_double.requests if r.verb == "list" and r.resource == "resourceclaims"]
    assert [bool(r.query.get("continue")) for r in claim_pages] == [False, True, False, True, True]


def test_errors_say_what_to_change(k8s_double, tmp_path):
    missing = run(k8s_double, "describe", kubeconfig=str(tmp_path / "nope.yaml"))
    assert missing.exit_code != 0 and "nope.yaml" in missing.output
    context = CliRunner().invoke(main, ["describe", "--kubeconfig", k8s_double.kubeconfig_path(),
                                        "--context", "prod"])
    assert context.exit_code == 2  # exits.USAGE: the kubeconfig/flags need changing
    assert "--context 'prod' is not a context in" in context.output and "k8s-double" in context.output
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(Path(k8s_double.kubeconfig_path()).read_text())
    k8s_double.stop()
    down = CliRunner().invoke(main, ["describe", "--kubeconfig", str(kubeconfig)])
    assert down.exit_code == 4 and "cannot reach the API server" in down.output


def test_forbidden_lists_are_reported_with_the_rbac_hint(gpu_cluster):
    gpu_cluster.fail("list", "resourceslices", status=403, times=None, message="resourceslices is forbidden")
    result = run(gpu_cluster, "describe")
    assert result.exit_code == 0  # what can be seen is shown, as doctor does
    assert result.stdout.splitlines()[0].split()[:2] == ["NODE", "DRA"]
    assert ("warning: forbidden to list resourceslices.resource.k8s.io across the cluster (HTTP 403)"
            in result.stderr and "a ClusterRole granting list on resourceslices.resource.k8s.io" in result.stderr)


def test_explain_pod_live_reports_the_selector_error_as_the_scheduler_would(k8s_double):
    k8s_double.seed(*b.nvidia_device_classes(), b.dra_node("dra-a"), b.gpu_slice("dra-a", 2),
                    b.template("pinned", requests=[b.exact_request(
                        selectors=["device.attributes['gpu.nvidia.com'].index == 0"])]),
                    b.pod("waiting", phase="Pending", claims=[{"name": "gpu", "resourceClaimTemplateName": "pinned"}]))
    result = CliRunner().invoke(main, ["explain", "waiting", "--kubeconfig", k8s_double.kubeconfig_path(),
                                       "-o", "json"])
    assert result.exit_code == 1, result.output
    data = json.loads(result.output)
    (item,) = data["items"]
    assert (item["kind"], item["name"], item["allocatable"]) == ("ResourceClaimTemplate", "pinned", False)
    selector = item["requests"][0]["alternatives"][0]["selectors"][-1]
    assert selector["errors"] == 2 and "index" in selector["firstError"]
    missing = CliRunner().invoke(main, ["explain", "ghost", "--kubeconfig", k8s_double.kubeconfig_path()])
    assert missing.exit_code == 1 and 'pod "ghost" not found' in missing.output


def test_kinds_take_kubectls_names(gpu_cluster):
    """kubectl describe accepts plural and short names: pods, po, nodes, no, resourceclaims."""
    for alias, canonical in (("pods", "pod"), ("po", "pod"), ("nodes", "node"), ("no", "node"),
                             ("claims", "claim"), ("resourceclaims", "claim")):
        assert run(gpu_cluster, "describe", alias, "-A").output == run(gpu_cluster, "describe", canonical, "-A").output


def test_describe_reads_the_clusters_devices_without_loading_the_cel_compiler(gpu_cluster):
    """describe reads ResourceSlices through the one slice parser (kubectl_gpu/dra/devices.py) but
    compiles no selector: cel-python, lark and pendulum (about 0.16 s of start-up) stay unloaded."""
    import subprocess
    import sys

    probe = ("import sys\nfrom kubectl_gpu.cli.main import main\n"
             "try:\n    main(sys.argv[1:])\nexcept SystemExit as done:\n"
             "    print(sorted(m for m in ('celpy', 'lark', 'pendulum') if m in sys.modules), done.code)")
    result = subprocess.run([sys.executable, "-c", probe, "describe", "--kubeconfig", gpu_cluster.kubeconfig_path()],
                            capture_output=True, text=True, check=False, cwd=Path(__file__).parent.parent)
    assert "dra-a" in result.stdout, result.stderr[-2000:]
    assert result.stdout.splitlines()[-1] == "[] 0", result.stderr[-2000:]


def _tables(output: str) -> list[str]:
    """The lines of a report's tables (a header line in capitals and the rows under it)."""
    lines, inside = [], False
    for line in output.splitlines():
        inside = inside and bool(line.strip()) or (line[:1].isupper() and line.split()[0].isupper()
                                                   and line.split()[0] not in ("DRA",) and line == line.upper())
        if inside:
            lines.append(line)
    return lines


def test_describe_node_and_pod_tables_fit_80_columns_and_wide_adds_the_details(gpu_cluster):
    node = run(gpu_cluster, "describe", "node", "dra-a").output
    assert _tables(node) and max(len(line) for line in _tables(node)) <= 80, node
    assert "GPUs: 8 NVIDIA H100 80GB HBM3 (80Gi)" in node  # the product once, above the table
    assert _tables(node)[0].split() == ["DEVICE", "TYPE", "STATE", "PODS"]
    wide = run(gpu_cluster, "describe", "node", "dra-a", "-o", "wide").output
    assert _tables(wide)[0].split()[:9] == ["DEVICE", "TYPE", "STATE", "PODS", "CLAIM", "PRODUCT", "MEMORY", "MIG",
                                            "PROFILE"]
    pod = run(gpu_cluster, "describe", "pod", "train-0", "-n", "ml").output
    assert _tables(pod) and max(len(line) for line in _tables(pod)) <= 80, pod
    assert _tables(pod)[0].split() == ["REQUEST", "DEVICE", "NODE", "CONSUMED"]
    wide = run(gpu_cluster, "describe", "pod", "train-0", "-n", "ml", "-o", "wide").output
    assert "NVIDIA H100 80GB HBM3" in wide and _tables(wide)[0].split()[4:6] == ["PRODUCT", "MEMORY"]


def test_the_pod_list_fits_80_columns_and_shows_nodes_claims_and_devices_under_o_wide(gpu_cluster):
    """`describe pods -A` has kubectl get pods' look: by default each pod's legacy GPU requests and
    how many claims it has in which state; -o wide adds the node (as `kubectl get pods -o wide`),
    the claims' names and the devices they hold.  Legacy requests and claims never share a column."""
    for i in range(3):  # a Deployment's pods
        pod = f"inference-7d9f8c6-x{i}k2"
        gpu_cluster.seed(
            b.pod(pod, "ml", node_name="dra-b", claims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
                  claim_statuses={"gpu": f"{pod}-gpu-abcde"}),
            b.claim(f"{pod}-gpu-abcde", "ml", allocated=[("gpu", f"gpu-{i}")], node_name="dra-b",
                    reserved_for=[pod], owner_pod=pod))
    table = run(gpu_cluster, "describe", "pods", "-A").output.splitlines()
    assert max(len(line) for line in table) <= 80, table
    rows = {line.split()[1]: line.split() for line in table}
    assert " ".join(rows["NAME"]) == "NAMESPACE NAME PHASE LEGACY GPUS CLAIMS"
    assert rows["train-0"][-3:] == ["-", "1", "allocated"] and rows["old-job"][-2:] == ["nvidia.com/gpu=2", "-"]
    wide = run(gpu_cluster, "describe", "pods", "-A", "-o", "wide").output.splitlines()
    assert " ".join(wide[0].split()) == "NAMESPACE NAME PHASE NODE LEGACY GPUS CLAIMS DEVICES"
    train = next(line.split() for line in wide if " train-0 " in line)
    assert train[3] == "dra-a" and train[-3:] == ["gpu", "(allocated)", "gpu-5"]


def test_the_claim_list_fits_80_columns_and_shows_who_it_is_reserved_for_under_o_wide(gpu_cluster):
    """`describe claims -A` (kubectl get resourceclaims' look): a generated claim's name is its
    pod's and longer, so the pods it is reserved for are -o wide's."""
    pod = "inference-7d9f8c6b5d-xk2p9"  # a Deployment's pod; its claim: POD-CLAIM-xxxxx (ResourceClaim's generateName)
    gpu_cluster.seed(b.claim(f"{pod}-gpu-abcde", "ml", allocated=[("gpu", "gpu-0")], node_name="dra-b",
                             reserved_for=[pod], owner_pod=pod))
    table = run(gpu_cluster, "describe", "claims", "-A").output.splitlines()
    assert max(len(line) for line in table) <= 80, table
    assert table[0].split() == ["NAMESPACE", "NAME", "STATE", "NODE", "DEVICES"]
    wide = run(gpu_cluster, "describe", "claims", "-A", "-o", "wide").output.splitlines()
    assert wide[0].split() == ["NAMESPACE", "NAME", "STATE", "NODE", "DEVICES", "RESERVED", "FOR"]
    assert next(line for line in wide if f"{pod}-gpu-abcde" in line).split()[-1] == pod
