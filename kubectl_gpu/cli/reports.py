"""The one contract for scripts: what every command prints with -o json|yaml.

Each value is a Kubernetes-shaped object: `apiVersion` and `kind` first, camelCase keys.  The
plugin's own reports (GpuNode, MigrationPlan, NodeWave, ...) are `kubectl_gpu.dra.facts.
REPORT_API_VERSION`, each kind described by docs/schemas/<Kind>.json (tests/test_output_schemas.py
holds every -o json output of the suite to its schema); several objects are one `v1` List, as
kubectl prints them.  YAML is the same value as JSON, written by kubectl_gpu/cli/yaml_output.py.
"""

from __future__ import annotations

import json
from typing import Any

import click


def object_list(items: list[dict[str, Any]]) -> dict[str, Any]:
    """Several objects as one value, as `kubectl get -o json` prints them (a `v1` List)."""
    return {"apiVersion": "v1", "kind": "List", "items": items}


def object_name(kind: str, api_version: str, name: str) -> str:
    """An object as `kubectl get -o name` names it: lower-case kind, its API group (none for the core
    group), the name (deployment.apps/web, pod/train-0, pytorchjob.kubeflow.org/bert)."""
    group = api_version.rpartition("/")[0]
    return f"{kind.lower()}{'.' + group if group else ''}/{name}"


def print_structured(payload: Any, output: str) -> None:
    """`payload` on stdout as JSON (indented by 2, as kubectl) or YAML."""
    if output == "json":
        click.echo(json.dumps(payload, indent=2))
    else:
        from kubectl_gpu.cli import yaml_output  # only here: -o json and tables never load PyYAML

        click.echo(yaml_output.dump(payload), nl=False)
