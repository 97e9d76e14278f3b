"""Fleet migration: plan which workloads and nodes move to DRA in which waves, then apply.

Data flows one way: a ``Snapshot`` of cluster objects (parsed from files or listed live) ->
``plan_migration`` (pure: workloads, waves, capacity checks) -> the CLI applies a wave
(server-side apply of workloads, cordon/label/drain of nodes) through the API.
"""
from .snapshot import Snapshot, snapshot_from_objects
from .workloads import WorkloadPlan, plan_workloads

__all__ = ["Snapshot", "WorkloadPlan", "plan_workloads", "snapshot_from_objects"]
