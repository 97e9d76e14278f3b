"""The core checks its own output before returning it: every CEL selector it wrote must compile in
Kubernetes' DRA CEL environment (`kubectl_gpu.cel`: the same parser, macros, functions and type
checks as k8s.io/dynamic-resource-allocation/cel).

A selector that does not compile makes the API server refuse the claim template (the webhook would
deny the pod; migrate would write a manifest that never applies), so such a bug becomes an ERROR
note and an unchanged template instead of a broken object.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .model import ClaimObject
from .notes import Note, Severity


def _device_requests(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for request in (spec.get("devices") or {}).get("requests") or []:
        exactly = request.get("exactly")
        yield exactly if isinstance(exactly, Mapping) else request  # v1beta1: fields on the request
        yield from request.get("firstAvailable") or []


def selectors_of(claim: ClaimObject) -> Iterator[str]:
    for request in _device_requests(claim.claim_spec):
        for selector in request.get("selectors") or []:
            yield selector["cel"]["expression"]


def selector_errors(claims: Iterable[ClaimObject]) -> list[Note]:
    written = [(claim, expression) for claim in claims for expression in selectors_of(claim)]
    if not written:
        return []  # most claims (a whole GPU, a MIG profile) select by class alone: no CEL to load
    from kubectl_gpu.cel import CelCompileError, compile_selector  # the CEL environment loads on first use

    notes = []
    for claim, expression in written:
        try:
            compile_selector(expression)
        except CelCompileError as err:
            notes.append(Note(Severity.ERROR,
                              f"kubectl-gpu built a device selector for {claim.kind} {claim.name} that does not "
                              f"compile in Kubernetes' DRA CEL environment ({err}), so nothing was changed; this "
                              f"is a kubectl-gpu bug, please report it with the pod. Selector: {expression}"))
    return notes
