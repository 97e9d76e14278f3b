#!/usr/bin/env python3
"""Show that a change left what users see byte for byte the same: explain's, migrate's, describe's,
doctor's and the webhook's answers in a git revision and in the working tree, on the same inputs
(explain, describe and doctor piped and in colour).

    python3 scripts/compare_outputs.py REVISION        # e.g. main, 07cacc4

The inputs are built once, by the working tree: the benchmarks' inputs (scripts/bench_explain.py's
slices and claim, scripts/bench_migrate.py's manifest stream, scripts/bench_webhook.py's pod
reviews) and tests/data with examples/.  The revision is checked out in a temporary git worktree;
each side then runs the same probe, which uses only what both have (the CLI's `main`, the webhook
server's application, the tests' API double), with its own code first on sys.path and its own
empty cache.  Exit status 0: every output identical; 1: the differing outputs are listed.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Run in each tree (its code first on sys.path): every answer written to OUT, one file each.
PROBE = r'''
import asyncio, base64, json, os, sys
from pathlib import Path

tree, inputs, out = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
sys.path.insert(0, str(tree))
os.chdir(tree)

import kubectl_gpu
assert Path(kubectl_gpu.__file__).resolve().is_relative_to(tree.resolve()), kubectl_gpu.__file__
from click.testing import CliRunner
from kubectl_gpu.cli.main import main

runner = CliRunner()


def cli(name, *args):
    result = runner.invoke(main, list(args), catch_exceptions=True)
    error = "" if result.exception is None or isinstance(result.exception, SystemExit) else repr(result.exception)
    (out / name).write_text(f"exit {result.exit_code}{error}\n{result.output}", encoding="utf-8")


def coloured(name, *args):
    """The command on a colour terminal (COLUMNS wide): both trees decide colour in
    kubectl_gpu/cli/console.py's colour_allowed, and the output, escape codes and all, is compared."""
    from kubectl_gpu.cli import console

    allowed, no_color, term = console.colour_allowed, os.environ.pop("NO_COLOR", None), os.environ.get("TERM")
    console.colour_allowed = lambda stream: True
    os.environ["TERM"] = "xterm-256color"
    try:
        cli(name, *args)
    finally:
        console.colour_allowed = allowed
        os.environ.update({"NO_COLOR": no_color} if no_color is not None else {})
        os.environ.pop("TERM") if term is None else os.environ.update(TERM=term)


manifest = json.loads((inputs / "manifest.json").read_text())
for i, (claims, slices) in enumerate(manifest["explain"]):
    cli(f"explain-{i}.txt", "explain", "-f", claims, "--slices", slices)
    coloured(f"explain-{i}-colour.txt", "explain", "-f", claims, "--slices", slices)
    cli(f"explain-{i}.json", "explain", "-f", claims, "--slices", slices, "-o", "json")
for i, path in enumerate(manifest["migrate"]):
    cli(f"migrate-{i}.yaml", "migrate", path)
    cli(f"migrate-{i}-v1beta1.yaml", "migrate", path, "--api-version", "v1beta1")


def describes():
    """describe's outputs (summary, -o wide/json/yaml, --tree, -n, node, pod, claim) over one
    cluster of every kind of node: DRA nodes, a MIG node, a shared GPU, device-plugin nodes, a
    node counted twice, and pods holding GPUs each way."""
    from tests import builders as b
    from tests.k8sdouble import K8sDouble

    with K8sDouble() as double:
        double.seed(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}}, *b.nvidia_device_classes(),
            b.dra_node("dra-a"), b.dra_node("dra-b"), b.dra_node("dra-bad", legacy={"nvidia.com/gpu": "8"}),
            b.dra_node("mig-a"), b.dra_node("share-a"),
            b.node("legacy-1", legacy={"nvidia.com/gpu": "4"}), b.node("cpu-1"),
            b.gpu_slice("dra-a"), b.gpu_slice("dra-b", 2), b.gpu_slice("dra-bad"),
            b.gpu_slice("mig-a", devices=[b.gpu_device("mig-a", 0), *(b.mig_device("mig-a", 1, s) for s in range(3))]),
            b.gpu_slice("share-a", 2, shareable=True),
            b.template("one-gpu", "ml"),
            b.pod("train-0", "ml", node_name="dra-a", claims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
                  claim_statuses={"gpu": "train-0-gpu"}),
            b.claim("train-0-gpu", "ml", allocated=[("gpu", "gpu-5")], node_name="dra-a", reserved_for=["train-0"],
                    owner_pod="train-0"),
            b.claim("mig-0", "ml", allocated=[("gpu", "gpu-1-mig-1g-10gb-1")], node_name="mig-a"),
            b.claim("share-0", "default", allocated=[("gpu", "gpu-0")], node_name="share-a", consumed={"memory": "4Gi"},
                    share_id="a"),
            b.claim("share-1", "ml", allocated=[("gpu", "gpu-0")], node_name="share-a", consumed={"memory": "8Gi"},
                    share_id="b"),
            b.claim("pending", "ml"),
            b.pod("old-job", "ml", node_name="legacy-1", limits={"nvidia.com/gpu": 2}),
            b.pod("sneaky", "default", node_name="dra-bad", limits={"nvidia.com/gpu": 1}),
            b.pod("done", "default", node_name="dra-b", phase="Succeeded", limits={"nvidia.com/gpu": 1}),
            b.pod("waiting", "ml", phase="Pending", claims=[{"name": "gpu", "resourceClaimName": "pending"}]),
        )
        kubeconfig = double.kubeconfig_path()
        for name, args in (("summary", []), ("wide", ["-o", "wide"]), ("json", ["-o", "json"]), ("yaml", ["-o", "yaml"]),
                           ("tree", ["--tree"]), ("ns", ["-n", "ml"]), ("ns-json", ["-n", "ml", "-o", "json"]),
                           ("nodes", ["node"]), ("node", ["node", "mig-a", "-o", "wide"]),
                           ("node-json", ["node", "share-a", "-o", "json"]), ("pods", ["pod", "-A"]),
                           ("pod", ["pod", "waiting", "-n", "ml"]), ("claim", ["claim", "share-1", "-n", "ml", "-o", "yaml"]),
                           ("no-headers", ["--no-headers"]), ("node-bad", ["node", "dra-bad"]),
                           ("pods-wide", ["pod", "-A", "-o", "wide"]), ("claims", ["claim", "-A"]),
                           ("claim-pending", ["claim", "pending", "-n", "ml"]), ("pod-running", ["pod", "train-0", "-n", "ml"])):
            cli(f"describe-{name}.txt", "describe", "--kubeconfig", kubeconfig, *args)
            if "json" not in name and "yaml" not in name and name != "claim":
                coloured(f"describe-{name}-colour.txt", "describe", "--kubeconfig", kubeconfig, *args)
        for name, args in (("doctor", []), ("doctor-wide", ["-o", "wide"])):
            cli(f"{name}.txt", "doctor", "--kubeconfig", kubeconfig, *args)
            coloured(f"{name}-colour.txt", "doctor", "--kubeconfig", kubeconfig, *args)


describes()


async def reviews():
    from aiohttp.test_utils import TestClient, TestServer
    from tests.k8sdouble import K8sDouble
    from kubectl_gpu.k8s import AsyncClient
    from webhook.config import load_config
    from webhook.server import Timings, WebhookServer

    double = K8sDouble().start()
    for namespace in manifest["namespaces"]:
        double.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    config = load_config(None, {}, {"cert_file": str(inputs / "unused.crt"), "key_file": str(inputs / "unused.key")})
    api = AsyncClient(double.api_client().configuration, config.api_timeout_seconds)
    server = WebhookServer(config, api, Timings(label_ttl=3600))
    client = TestClient(TestServer(server.app()))
    await client.start_server()
    try:
        for i, (endpoint, path) in enumerate(manifest["reviews"]):
            response = await client.post(f"/{endpoint}", data=Path(path).read_bytes(),
                                         headers={"Content-Type": "application/json"})
            body = await response.read()
            answer = json.loads(body) if response.status == 200 else None
            patch = (answer or {}).get("response", {}).get("patch")
            decoded = base64.b64decode(patch).decode() if patch else ""
            (out / f"review-{i}-{endpoint}.txt").write_bytes(
                f"status {response.status}\n".encode() + body + b"\n" + decoded.encode())
    finally:
        await client.close()
        await server.admission.templates.close()
        await api.close()
        double.stop()

asyncio.run(reviews())
'''


def admission_review(obj: dict, uid: str, operation: str = "CREATE") -> dict:
    """The AdmissionReview the API server sends for ``obj`` (as tests/conftest.py builds it)."""
    group, _, version = str(obj.get("apiVersion", "v1")).rpartition("/")
    kind = obj.get("kind", "Pod")
    plural = kind.lower() + ("es" if kind.endswith("s") else "s")
    namespace = (obj.get("metadata") or {}).get("namespace") or "default"
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": uid, "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": plural},
        "requestKind": {"group": group, "version": version, "kind": kind},
        "name": (obj.get("metadata") or {}).get("name", ""), "namespace": namespace, "operation": operation,
        "userInfo": {"username": "compare"}, "object": obj, "oldObject": None, "dryRun": False}}


def build_inputs(inputs: Path) -> None:
    """Every input file and the manifest naming them, built by the working tree."""
    import yaml

    sys.path.insert(0, str(ROOT / "scripts"))
    sys.path.insert(0, str(ROOT))
    import bench_explain
    import bench_migrate
    import bench_webhook

    data = ROOT / "tests" / "data"
    slices = sorted(str(p) for p in (data / "slices").glob("*.yaml"))
    claims = sorted(str(p) for p in (data / "manifests" / "claims").glob("*.yaml"))
    (inputs / "bench-slices.yaml").write_text(yaml.safe_dump_all(bench_explain.build_slices()))
    (inputs / "bench-claim.yaml").write_text(yaml.safe_dump(bench_explain.CLAIM))
    explain = [(c, s) for c in claims for s in slices] + [(str(inputs / "bench-claim.yaml"), str(inputs / "bench-slices.yaml"))]

    (inputs / "bench-stream.yaml").write_text(bench_migrate.build_stream(300, 0.5))
    manifests = sorted(str(p) for p in (*(ROOT / "examples").glob("*.yaml"), *(data / "manifests").glob("*.yaml")))
    migrate = [*manifests, str(inputs / "bench-stream.yaml")]

    reviews: list[tuple[str, str]] = []
    namespaces = {"bench"}
    for i in range(16):
        for distinct in (False, True):
            path = inputs / f"bench-review-{i}-{distinct}.json"
            path.write_bytes(bench_webhook.gpu_pod_review(i, distinct))
            reviews.append(("mutate", str(path)))
    documents = [doc for name in manifests for doc in yaml.safe_load_all(Path(name).read_text()) if isinstance(doc, dict)]
    documents += [doc for name in claims for doc in yaml.safe_load_all(Path(name).read_text()) if isinstance(doc, dict)]
    for i, doc in enumerate(documents):
        namespaces.add((doc.get("metadata") or {}).get("namespace") or "default")
        path = inputs / f"object-review-{i}.json"
        path.write_text(json.dumps(admission_review(doc, f"00000000-0000-4000-9000-{i:012d}")))
        endpoint = "validate" if doc.get("kind") in ("ResourceClaim", "ResourceClaimTemplate") else "mutate"
        reviews.append((endpoint, str(path)))
    namespaces.discard("default")  # the API double has it
    (inputs / "manifest.json").write_text(json.dumps(
        {"explain": explain, "migrate": migrate, "reviews": reviews, "namespaces": sorted(namespaces)}))


def run_probe(tree: Path, inputs: Path, out: Path, probe: Path) -> None:
    out.mkdir()
    env = {**os.environ, "XDG_CACHE_HOME": str(out.parent / f"{out.name}-cache"), "NO_COLOR": "1", "COLUMNS": "120"}
    env.pop("PYTHONPATH", None)
    subprocess.run([sys.executable, str(probe), str(tree), str(inputs), str(out)], check=True, env=env, cwd=tree)


def differing(left: Path, right: Path) -> list[str]:
    names = sorted({p.name for p in left.iterdir()} | {p.name for p in right.iterdir()})
    return [n for n in names if not ((left / n).exists() and (right / n).exists()
                                     and filecmp.cmp(left / n, right / n, shallow=False))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("revision", help="the git revision to compare the working tree with")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="compare-outputs-") as temp:
        work = Path(temp)
        inputs, probe, old_tree = work / "inputs", work / "probe.py", work / "revision"
        inputs.mkdir()
        probe.write_text(PROBE)
        build_inputs(inputs)
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(old_tree), args.revision],
                       check=True)
        try:
            run_probe(old_tree, inputs, work / "before", probe)
            run_probe(ROOT, inputs, work / "after", probe)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old_tree)], check=True)
        outputs = sorted(p.name for p in (work / "after").iterdir())
        changed = differing(work / "before", work / "after")
        kinds = {k: sum(name.startswith(k) for name in outputs)
                 for k in ("explain", "migrate", "describe", "doctor", "review")}
        print(f"{len(outputs)} outputs compared ({kinds['explain']} explain, {kinds['migrate']} migrate, "
              f"{kinds['describe']} describe, {kinds['doctor']} doctor, {kinds['review']} webhook reviews; "
              f"{sum(name.endswith('-colour.txt') for name in outputs)} of them in colour) between {args.revision} "
              "and the working tree")
        after = work / "after"
        succeeded = sum((after / n).read_text(encoding="utf-8").startswith("exit 0") for n in outputs
                        if not n.startswith("review"))
        patched = sum(b'"patch"' in (after / n).read_bytes() for n in outputs if n.startswith("review"))
        print(f"(of which {succeeded} CLI runs exited 0, {patched} reviews answered with a patch)")
        if changed:
            print(f"{len(changed)} differ:")
            for name in changed:
                print(f"  {name}")
                subprocess.run(["diff", "-u", str(work / "before" / name), str(work / "after" / name)])
            return 1
        print("all byte-identical")
        return 0


if __name__ == "__main__":
    sys.exit(main())
