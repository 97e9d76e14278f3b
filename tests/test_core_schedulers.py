"""A pod template whose scheduler accounts DRA devices itself (KAI Scheduler: no firstAvailable, no
claim shared by several pods; kubectl_gpu/core/schedulers.py cites it) gets only shapes it can
account, and the report says what changed."""
from __future__ import annotations

import yaml

from kubectl_gpu.core import Severity, Sharing, TranslateOptions, translate_pod_template
from tests.test_cluster_profile import SMALL_SHARE_POD, a100_mig_cluster, claims_of, migrate, request_of


def half_gpu_pod(scheduler: str | None = None) -> dict:
    spec: dict = {"containers": [{"name": "main", "image": "cuda",
                                  "resources": {"limits": {"nvidia.com/gpu": "0.5"}}}]}
    if scheduler:
        spec["schedulerName"] = scheduler
    return {"metadata": {"name": "p"}, "spec": spec}


def test_kai_gets_no_claim_shared_by_the_workloads_pods():
    options = TranslateOptions(sharing=Sharing.TIMESLICING, sharing_group="Deployment/infer")
    shared = translate_pod_template(half_gpu_pod(), options)
    assert [c.kind for c in shared.claims] == ["ResourceClaim"]
    kai = translate_pod_template(half_gpu_pod("kai-scheduler"), options)
    assert [c.kind for c in kai.claims] == ["ResourceClaimTemplate"]
    [note] = [n for n in kai.notes if "schedulerName kai-scheduler" in n.message]
    assert note.severity is Severity.WARNING
    assert "cannot account a claim shared by several pods" in note.message
    assert "--sharing timeslicing falls back to whole GPUs per pod (exclusive)" in note.message


def test_kai_gets_one_shape_instead_of_a_first_available_list(tmp_path):
    cluster = a100_mig_cluster(tmp_path, "v1")
    kai_pod = yaml.safe_load(SMALL_SHARE_POD)
    kai_pod["spec"]["schedulerName"] = "kai-scheduler"
    result, docs = migrate(yaml.safe_dump(kai_pod), "--cluster", cluster, "--kubernetes-version", "1.34")
    assert result.exit_code == 0, result.stderr
    [claim] = claims_of(docs)
    assert "firstAvailable" not in request_of(claim)
    assert "KAI Scheduler cannot account firstAvailable claims" in result.stderr


def test_other_schedulers_and_templates_without_gpus_are_untouched():
    plain = translate_pod_template(half_gpu_pod("volcano"), TranslateOptions(sharing=Sharing.TIMESLICING,
                                                                             sharing_group="Deployment/x"))
    assert [c.kind for c in plain.claims] == ["ResourceClaim"]
    no_gpu = {"metadata": {}, "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "c"}]}}
    assert translate_pod_template(no_gpu, TranslateOptions(sharing=Sharing.TIMESLICING)).notes == ()
