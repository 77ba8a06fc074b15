"""Nested MLflow runs (tag mlflow.parentRunId): a grouping parent and its trials, or a retry."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PARENT_TAG = "mlflow.parentRunId"


@dataclass
class Nesting:
    """How the runs read relate through mlflow.parentRunId.

    A parent is a *grouping* (a sweep, a cross-validation, a pipeline) when a nested run started
    while it was still running, or when two or more runs nest under it: it is not an attempt,
    and the runs under it are attempts of their own (trials), resuming nothing. A parent with a
    single nested run that started at or after it ended is a *retry*: that run resumed it
    (parent_attempt_id), as an attempt resumes the one before it.
    """

    groupings: set[str] = field(default_factory=set)  # parent runs that are not attempts
    parent: dict[str, str] = field(default_factory=dict)  # run -> its mlflow.parentRunId

    def retry_of(self, run_uuid: str) -> str | None:
        """The run this one resumed, if it is a retry; None for a trial or a top-level run."""
        parent = self.parent.get(run_uuid)
        return parent if parent and parent not in self.groupings else None

    def grouping_of(self, run_uuid: str) -> str | None:
        """The grouping run this one is a trial of, if any."""
        parent = self.parent.get(run_uuid)
        return parent if parent in self.groupings else None

    def ancestors(self, run_uuid: str) -> list[str]:
        """Parent, grandparent, ... (stops at a cycle, which MLflow does not prevent)."""
        found: list[str] = []
        current = self.parent.get(run_uuid)
        while current and current not in found and current != run_uuid:
            found.append(current)
            current = self.parent.get(current)
        return found


def nesting(
    runs: list[dict[str, Any]],
    tags: dict[str, dict[str, str]],
    outside: dict[str, dict[str, Any]],
) -> Nesting:
    """Classify every parent named by the runs read.

    outside: parent runs not among `runs` (outside the started_after window, or in an experiment
    not read), looked up so their times are known; a parent known nowhere is taken as retried.
    """
    known = {run["run_uuid"]: run for run in runs} | outside
    found = Nesting()
    children: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        parent = (tags.get(run["run_uuid"]) or {}).get(PARENT_TAG)
        if parent and parent.strip() and parent.strip() != run["run_uuid"]:
            found.parent[run["run_uuid"]] = parent.strip()
            children.setdefault(parent.strip(), []).append(run)
    for uuid in outside:
        parent = (tags.get(uuid) or {}).get(PARENT_TAG)
        if parent and parent.strip() and parent.strip() != uuid:
            found.parent[uuid] = parent.strip()
    for parent, nested in children.items():
        run = known.get(parent)
        if run is None:
            continue
        ended = run.get("end_time")
        during = any(
            ended is None or (child.get("start_time") is not None and child["start_time"] < ended)
            for child in nested
        )
        if during or len(nested) > 1:
            found.groupings.add(parent)
    return found
