"""Schedulers other than kube-scheduler that account DRA devices themselves, and the claim shapes
they cannot account: a pod template that names one (``spec.schedulerName``) gets only shapes it can.

* KAI Scheduler (``kai-scheduler``, NVIDIA/KAI-Scheduler pkg/common/constants/constants.go
  ``DefaultSchedulerName``): v0.13.0 added "Gpu Dra claims and resource slices accounting for the
  purpose of resource management and quota guarantees. *** This change doesn't support shared gpu
  claims or gpu claims with FirstAvailable ***" (CHANGELOG.md, #900; commit
  72de64fc8eca10fa8cca26a20156178f3edbe092; pkg/scheduler/api/node_info/node_info.go: "This
  approach doesn't support FirstAvailable requests").

* Volcano (``volcano``, volcano-sh/volcano cmd/scheduler/app/options/options.go
  ``defaultSchedulerName``): allocation is kube-scheduler's own DynamicResources plugin, embedded in
  its predicates (docs/design/dynamicresources-plugin.md), but its queue quota (the capacity plugin,
  v1.15.0+) skips requests with ``firstAvailable`` or ``allocationMode: All``
  (pkg/scheduler/cache/cache.go: "uses FirstAvailable; DRA quota tracking is skipped"; read at commit
  ed72c7c815a9fd547a787134676f73d42e9d049c), so such a claim escapes the queue's cap.  A claim shared
  by several pods is charged once (capacity_dra_test.go TestSharedResourceClaimIsChargedOnce).

So for such a template a GPU share is not written as a ``firstAvailable`` list (one shape instead),
and ``--sharing timeslicing|mps`` (one claim shared by the workload's pods) falls back to whole GPUs
per pod (exclusive).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from .model import Sharing, TranslateOptions
from .notes import Note, Severity


@dataclass(frozen=True)
class SchedulerLimits:
    label: str
    first_available: bool  # accounts requests with firstAvailable
    shared_claims: bool  # accounts one claim referenced by several pods
    source: str


SCHEDULER_LIMITS: dict[str, SchedulerLimits] = {
    "kai-scheduler": SchedulerLimits("KAI Scheduler", first_available=False, shared_claims=False,
                                     source="KAI Scheduler v0.13.0 release notes"),
    "volcano": SchedulerLimits("Volcano's queue quota", first_available=False, shared_claims=True,
                               source="Volcano v1.15.0 pkg/scheduler/cache/cache.go"),
}
_SHARED_CLAIM_MODES = (Sharing.TIMESLICING, Sharing.MPS)


def fit_to_scheduler(spec: Mapping[str, Any], options: TranslateOptions) -> tuple[TranslateOptions, tuple[Note, ...]]:
    """``options`` narrowed to what the pod's scheduler can account, and what was narrowed."""
    name = spec.get("schedulerName")
    limits = SCHEDULER_LIMITS.get(name) if isinstance(name, str) else None
    if limits is None:
        return options, ()
    notes = []
    if options.prioritized_list and not limits.first_available:
        options = replace(options, prioritized_list=False)
        notes.append(Note(Severity.INFO, f"schedulerName {name}: {limits.label} cannot account firstAvailable "
                                         f"claims ({limits.source}): a GPU share gets one shape, not an ordered list"))
    if options.sharing in _SHARED_CLAIM_MODES and not limits.shared_claims:
        notes.append(Note(Severity.WARNING, f"schedulerName {name}: {limits.label} cannot account a claim shared "
                                            f"by several pods ({limits.source}): --sharing {options.sharing.value} "
                                            "falls back to whole GPUs per pod (exclusive)"))
        options = replace(options, sharing=Sharing.EXCLUSIVE, sharing_group=None)
    return options, tuple(notes)
