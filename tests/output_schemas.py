"""Every -o json|yaml report of kubectl-gpu against its JSON Schema (docs/schemas/<Kind>.json).

tests/conftest.py runs `check_output` on the stdout of every CLI run through click's CliRunner
that asks for `-o json` or `-o yaml`, so each report the suite produces is held to its schema; Kubernetes'
own objects (migrate's manifests, inventory's ResourceSlices) are left to Kubernetes' schemas
(tests/strict_validation.py)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, Iterator, Sequence

from kubectl_gpu.dra.facts import REPORT_API_VERSION

SCHEMAS = Path(__file__).resolve().parent.parent / "docs" / "schemas"


def asked_output(args: Sequence[str] | None) -> str | None:
    """The -o a command line asks for (json, yaml, ...), or None."""
    words = [str(a) for a in args or ()]
    found = None
    for index, word in enumerate(words):
        if word in ("-o", "--output") and index + 1 < len(words):
            found = words[index + 1]
        elif word.startswith("--output="):
            found = word.partition("=")[2]
        elif word.startswith("-o") and len(word) > 2:
            found = word[2:]
    return found


def reports_in(value: Any) -> Iterator[dict[str, Any]]:
    """The kubectl-gpu reports in one printed value: itself, or the items of a v1 List."""
    if isinstance(value, dict) and value.get("kind") == "List" and isinstance(value.get("items"), list):
        for item in value["items"]:
            yield from reports_in(item)
    elif isinstance(value, dict) and value.get("apiVersion") == REPORT_API_VERSION:
        yield value


@cache
def registry() -> Any:
    """Every schema under its file name, which is how they refer to each other ("Explanation.json")."""
    from referencing import Registry, Resource

    return Registry().with_resources((path.name, Resource.from_contents(json.loads(path.read_text())))
                                     for path in sorted(SCHEMAS.glob("*.json")))


@cache
def validator(kind: str) -> Any:
    import jsonschema

    path = SCHEMAS / f"{kind}.json"
    assert path.is_file(), f"{kind} is printed for scripts but has no schema: add docs/schemas/{kind}.json"
    schema = json.loads(path.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, registry=registry())


def check_report(report: dict[str, Any]) -> None:
    errors = sorted(validator(str(report.get("kind"))).iter_errors(report), key=lambda e: list(e.absolute_path))
    assert not errors, f"{report.get('kind')} does not follow docs/schemas/{report.get('kind')}.json:\n" + "\n".join(
        f"  at /{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}" for e in errors[:10])


def check_output(stdout: str, output: str) -> int:
    """Hold every kubectl-gpu report in a command's -o json|yaml output to its schema; how many
    there were."""
    text = stdout.lstrip()
    if output == "json" and text.startswith("{"):
        value, _ = json.JSONDecoder().raw_decode(text)
    elif output == "yaml" and text.startswith(("apiVersion:", "kind:")):
        import yaml

        value = next(yaml.safe_load_all(text), None)
    else:
        return 0  # an error on stderr, or nothing printed
    count = 0
    for report in reports_in(value):
        check_report(report)
        count += 1
    return count
