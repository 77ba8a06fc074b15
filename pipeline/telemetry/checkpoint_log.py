"""Checkpoint event logs (JSON lines of timestamp, job_name, event_type, step) -> attempt_events.

The format is the event log training jobs print for goodput measurement:
`{"timestamp": "...", "job_name": "...", "event_type": "checkpoint_saved", "step": 500}`.
A log only has events, so its attempts must come from another source (Kubernetes, Slurm,
SageMaker, canonical files); merging refuses events of an attempt no source reports.

Which attempt an event belongs to: the record's `attempt_id` when it has one; otherwise its
`job_name`, mapped through `options.attempts` (job name -> attempt id) when given. Each
`job_started` after the first of a job starts a new attempt of it, named `<attempt>#2`, `#3`...
(the convention the SageMaker adapter uses for a restarted job).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pyarrow as pa

from pipeline.common.errors import InputError
from pipeline.telemetry.adapters import Outcome, table, utc

# The log's names for what runcost's canonical events call them; anything else passes as is.
EVENT_TYPES = {"job_started": "started", "job_terminated": "terminated"}
_KNOWN_FIELDS = {"timestamp", "job_name", "attempt_id", "event_type", "step", "duration_s"}


def read(source: dict[str, object], label: str) -> dict[str, pa.Table]:
    """Every event of every log file at source['path'] (a .jsonl file or a folder of them)."""
    options: dict[str, Any] = dict(source.get("options") or {})  # type: ignore[arg-type]
    path = Path(str(source.get("path") or ""))
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    if not files or not all(file.is_file() for file in files):
        raise InputError(f"{label}: {path}: no such log file or folder of .jsonl files")
    zone = _zone(options.get("timezone"), label)
    attempts = {str(key): str(value) for key, value in dict(options.get("attempts") or {}).items()}
    outcome = Outcome(source, label)
    rows: list[dict[str, Any]] = []
    for file in files:
        rows.extend(_events(file, zone, attempts, outcome))
    outcome.report()
    return {"attempt_events": table("attempt_events", rows)}


def _events(
    file: Path, zone: ZoneInfo | None, attempts: dict[str, str], outcome: Outcome
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    runs: dict[str, int] = {}  # job -> how many job_started seen, i.e. which run is current
    with file.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{file}: line {number}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                outcome.bad(where, f"not a JSON object ({error.msg}); one event per line")
                continue
            if not isinstance(record, dict):
                outcome.bad(where, "not a JSON object; one event per line")
                continue
            job = record.get("attempt_id") or record.get("job_name")
            kind = record.get("event_type")
            if not job or not kind:
                outcome.bad(where, "needs job_name (or attempt_id) and event_type")
                continue
            at = _timestamp(record.get("timestamp"), zone, where, outcome)
            if at is None:
                continue
            if kind == "job_started":
                runs[job] = runs.get(job, 0) + 1
            run = max(runs.get(job, 1), 1)
            base = job if record.get("attempt_id") else attempts.get(job, job)
            step = record.get("step")
            details = {key: value for key, value in record.items() if key not in _KNOWN_FIELDS}
            rows.append(
                {
                    "attempt_id": base if run == 1 else f"{base}#{run}",
                    "event_at": at,
                    "event_type": EVENT_TYPES.get(kind, kind),
                    "step": int(step) if isinstance(step, int | float) else None,
                    "duration_s": record.get("duration_s"),
                    "details": json.dumps(details, sort_keys=True) if details else None,
                }
            )
    return rows


def _timestamp(
    value: object, zone: ZoneInfo | None, where: str, outcome: Outcome
) -> dt.datetime | None:
    try:
        parsed = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        outcome.bad(where, f"timestamp {value!r} is not ISO 8601")
        return None
    if parsed.tzinfo is None:
        if zone is None:
            outcome.bad(
                where,
                f"timestamp {value!r} has no time zone; set options.timezone to the zone the "
                'job wrote its log in (for example "UTC")',
            )
            return None
        parsed = parsed.replace(tzinfo=zone)
    return utc(parsed)


def _zone(name: object, label: str) -> ZoneInfo | None:
    if name in (None, ""):
        return None
    try:
        return ZoneInfo(str(name))
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise InputError(
            f"{label}: options.timezone {name!r} is not a time zone name such as "
            '"UTC" or "Europe/Paris"'
        ) from error
