"""MIG profile tables for the DynamicMIG predictions: ``nvidia-smi mig -lgip`` parsed, and the
placements NVML gives each GPU instance profile.

Placements: the NVIDIA Multi-Instance GPU User Guide lists ``nvidia-smi mig -lgipp`` for the A100
(7 compute, 8 memory slices); the H100 and H200 have the same geometry.  The real H200 and H100
recordings in ../shared/nvml were made with MIG off and hold no placements, so these are the
guide's, by GPU instance profile id.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED_NVML = REPO.parent / "shared" / "nvml"
MISSING = "the real NVML recordings (../shared/nvml beside the repository) are not checked out"

PLACEMENTS_BY_PROFILE_ID = {
    19: [(s, 1) for s in range(7)],          # 1g        {0,1,2,3,4,5,6}:1
    20: [(s, 1) for s in range(7)],          # 1g+me     {0,1,2,3,4,5,6}:1
    15: [(s, 2) for s in (0, 2, 4, 6)],      # 1g (2 memory slices) {0,2,4,6}:2
    14: [(s, 2) for s in (0, 2, 4)],         # 2g        {0,2,4}:2
    9: [(0, 4), (4, 4)],                     # 3g        {0,4}:4
    5: [(0, 4)],                             # 4g        {0}:4
    0: [(0, 8)],                             # 7g        {0}:8
}
# NVML_GPU_INSTANCE_PROFILE_* enum of each profile id, as ../shared/nvml/README.md records the H200
# answering nvmlDeviceGetGpuInstanceProfileInfo (enums 0-4, 7, 9 -> ids 19, 14, 9, 5, 0, 20, 15).
ENUM_BY_PROFILE_ID = {19: 0, 14: 1, 9: 2, 5: 3, 0: 4, 20: 7, 15: 9}

_ROW = re.compile(r"^\|\s+\d+\s+MIG (?P<name>\S+)\s+(?P<id>\d+)\s+(?P<free>\d+)/(?P<total>\d+)\s+"
                  r"(?P<gib>[\d.]+)\s+\w+\s+(?P<sm>\d+)\s+(?P<dec>\d+)\s+(?P<enc>\d+)\s+\|$")
_SECOND = re.compile(r"^\|\s+(?P<ce>\d+)\s+(?P<jpeg>\d+)\s+(?P<ofa>\d+)\s+\|$")


def lgip_profiles(text: str) -> list[dict]:
    """The recording's gpuInstanceProfiles for an ``nvidia-smi mig -lgip`` table (memory: its GiB,
    shown to two decimals, to the nearest 1/8 GiB), with the guide's placements."""
    lines = text.splitlines()
    profiles = []
    for first, second in zip(lines, lines[1:]):
        row, more = _ROW.match(first), _SECOND.match(second)
        if not row or not more:
            continue
        profile_id = int(row["id"])
        slices = int(row["name"].split("g.")[0].split(".")[-1])
        profiles.append({
            "profile": ENUM_BY_PROFILE_ID[profile_id], "id": profile_id, "sliceCount": slices,
            "instanceCount": int(row["total"]), "multiprocessorCount": int(row["sm"]),
            "copyEngineCount": int(more["ce"]), "decoderCount": int(row["dec"]), "encoderCount": int(row["enc"]),
            "jpegCount": int(more["jpeg"]), "ofaCount": int(more["ofa"]),
            "memorySizeMB": round(float(row["gib"]) * 8) * 128,
            "placements": [{"start": s, "size": n} for s, n in PLACEMENTS_BY_PROFILE_ID[profile_id]],
        })
    return sorted(profiles, key=lambda p: p["profile"])


def with_placements(profiles: list[dict]) -> list[dict]:
    return [{**p, "placements": [{"start": s, "size": n} for s, n in PLACEMENTS_BY_PROFILE_ID[p["id"]]]}
            for p in profiles]
