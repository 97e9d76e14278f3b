"""One table of resource.k8s.io versions (kubectl_gpu/dra/facts.py, DRA_API_VERSIONS) and of the
Kubernetes releases kubectl-gpu supports: every other place reads them from there, so adding a
version or a release is one edit.  Upstream: v1beta1 served from 1.32, v1beta2 from 1.33, v1 GA
in 1.34 (kubernetes/kubernetes pkg/apis/resource, CHANGELOG-1.32/1.33/1.34)."""

from __future__ import annotations

import click

from kubectl_gpu.cli.main import main
from kubectl_gpu.cluster.profile import build_profile
from kubectl_gpu.core import ApiVersion
from kubectl_gpu.dra import facts
from kubectl_gpu.dra.gates import DEFAULT_MINOR, SUPPORTED_MINORS, default_gates
from kubectl_gpu.explain import specs


def test_the_written_versions_newest_first_with_the_release_serving_each():
    assert facts.DRA_VERSIONS == ("v1", "v1beta2", "v1beta1")
    assert facts.DRA_VERSION_SINCE == {"v1": (1, 34), "v1beta2": (1, 33), "v1beta1": (1, 32)}
    assert facts.FLAT_REQUEST_VERSIONS == ("v1beta1",)


def test_the_core_writes_exactly_the_tables_versions():
    assert [member.value for member in ApiVersion] == [f"{facts.DRA_GROUP}/{v}" for v in facts.DRA_VERSIONS]


def test_explain_reads_every_version_in_the_table_by_its_shape():
    assert specs.WRAPPED_VERSIONS == {"v1", "v1beta2"}
    assert specs.FLAT_VERSIONS == {"v1beta1", "v1alpha3"}


def test_the_supported_releases_run_from_the_oldest_written_version_to_the_newest_release():
    assert list(facts.SUPPORTED_KUBERNETES_MINORS) == [32, 33, 34, 35, 36, 37, 38]
    assert SUPPORTED_MINORS is facts.SUPPORTED_KUBERNETES_MINORS
    assert DEFAULT_MINOR == facts.NEWEST_KUBERNETES_MINOR


def _choices(command: click.Command, option: str) -> list[str]:
    [param] = [p for p in command.params if option in p.opts]
    return list(param.type.choices)


def _commands(group: click.Group) -> list[click.Command]:
    ctx = click.Context(group)
    found: list[click.Command] = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        found += _commands(command) if isinstance(command, click.Group) else [command]
    return found


def test_every_api_version_option_offers_the_tables_versions():
    commands = [cmd for cmd in _commands(main) if any("--api-version" in p.opts for p in cmd.params)]
    assert len(commands) >= 2  # migrate, and fleet migration's shared options
    for command in commands:
        assert _choices(command, "--api-version") == list(facts.DRA_VERSIONS), command.name


def test_a_profile_read_from_files_assumes_the_release_first_serving_the_newest_version():
    slice_v1beta2 = {"apiVersion": "resource.k8s.io/v1beta2", "kind": "ResourceSlice",
                     "metadata": {"name": "s"}, "spec": {"driver": "gpu.nvidia.com", "nodeName": "n",
                                                        "pool": {"name": "n", "generation": 1, "resourceSliceCount": 1},
                                                        "devices": []}}
    profile = build_profile("files", objects=[slice_v1beta2])
    assert profile.api_version is ApiVersion.V1BETA2
    assert profile.feature_gates == default_gates(33)
