"""Telemetry of the scenario in the canonical CSV contract (DESIGN.md section 5)."""

from __future__ import annotations

import csv
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from pathlib import Path

FAILED_STATUSES = frozenset({"failed", "interrupted", "timeout"})


@dataclass(frozen=True)
class Attempt:
    """One row of attempts.csv; a retry is a new attempt with parent_attempt_id set."""

    attempt_id: str
    experiment_id: str
    parent_attempt_id: str | None
    model_version: str
    config_version: str
    dataset_snapshot: str
    provider: str
    account_id: str
    region: str
    cluster: str
    namespace: str
    instance_type: str
    gpu_type: str
    gpu_count: int
    node_count: int
    capacity_type: str
    submitted_at: datetime
    started_at: datetime | None
    ended_at: datetime | None
    status: str
    failure_reason: str | None
    metric_name: str | None
    metric_value: float | None
    artifact_uri: str | None


@dataclass(frozen=True)
class AttemptResource:
    """One row of attempt_resources.csv; empty times fall back to the attempt's own."""

    attempt_id: str
    resource_id: str
    resource_kind: str
    started_at: datetime | None
    ended_at: datetime | None
    gpu_count: int
    vcpu_count: float | None = None  # requested on the resource (cpu_memory_requested driver)
    memory_gib: float | None = None


@dataclass(frozen=True)
class Experiment:
    """One row of experiments.csv."""

    experiment_id: str
    team: str
    quality_metric: str
    quality_threshold: float
    higher_is_better: bool


@dataclass(frozen=True)
class AttemptEvent:
    """One row of attempt_events.csv: a checkpoint, the first step, an interruption."""

    attempt_id: str
    event_at: datetime
    event_type: str
    step: int | None = None
    duration_s: float | None = None
    details: str | None = None


def iso(moment: datetime) -> str:
    """ISO 8601 in UTC with a trailing Z, as the telemetry contract writes timestamps."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return iso(value)
    return str(value)


def write_rows(
    path: Path,
    rows: list[Attempt] | list[AttemptResource] | list[Experiment] | list[AttemptEvent],
) -> None:
    """Write dataclass rows as CSV with a header named after the fields."""
    kind = type(rows[0])
    names = [item.name for item in fields(kind)]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(names)
        for row in rows:
            writer.writerow([_cell(getattr(row, name)) for name in names])


def write_telemetry(
    folder: Path,
    attempts: list[Attempt],
    resources: list[AttemptResource],
    experiments: list[Experiment],
    events: list[AttemptEvent] | None = None,
) -> None:
    """Write attempts.csv, attempt_resources.csv, experiments.csv (and attempt_events.csv)."""
    write_rows(folder / "attempts.csv", attempts)
    write_rows(folder / "attempt_resources.csv", resources)
    write_rows(folder / "experiments.csv", experiments)
    if events:
        write_rows(folder / "attempt_events.csv", events)
