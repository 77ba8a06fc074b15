"""SageMaker adapter: DescribeTrainingJob JSON -> attempts split at spot interruptions."""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from pathlib import Path
from typing import Any

import pyarrow as pa

from pipeline.common.errors import InputError
from pipeline.telemetry.adapters import table
from pipeline.telemetry.sagemaker_instances import resource_config

log = logging.getLogger("runcost")

SOURCE = "sagemaker"
DEFAULTS: dict[str, Any] = {
    "experiment_key": "experiment_id",  # looked up in Tags, then HyperParameters
    "attempt_key": "attempt_id",  # optional; else the training job name
    "metric": None,  # FinalMetricDataList entry to keep; default the first
    "gpus": {},  # more instance types: {"ml.x.y" = GPUs per instance}
    "on_error": "fail",
}
STATUSES = {
    "Completed": "succeeded",
    "Failed": "failed",
    "Stopped": "cancelled",
    "Stopping": "running",
    "InProgress": "running",
}
TIMEOUTS = ("MaxRuntimeExceeded", "MaxWaitTimeExceeded")
EVENTS = {
    "Interrupted": "interrupted",
    "Restarting": "resumed",
    "Training": "started",
    "Completed": "finished",
    "Failed": "failed",
}


def options(source: dict[str, object]) -> dict[str, Any]:
    """The source's settings: DEFAULTS, then top-level keys, then its `options` table."""
    merged = dict(DEFAULTS)
    merged.update({k: v for k, v in source.items() if k != "options"})
    merged.update(dict(source.get("options") or {}))  # type: ignore[call-overload]
    return merged


def read(source: dict[str, object], label: str) -> dict[str, pa.Table]:
    """Read DescribeTrainingJob JSON (a file, or a folder of *.json) into canonical tables.

    Each file holds one DescribeTrainingJob response, or a JSON list of them. A managed-spot job
    interrupted and restarted n times becomes n + 1 attempts (`<job>`, `<job>#2`, ...), each
    holding the job ARN as its resource for its own interval.
    """
    opts = options(source)
    if opts.get("jobs") is not None or opts.get("name_prefix") is not None:
        if opts.get("path"):
            raise InputError(
                f"{label}: set either path (saved DescribeTrainingJob JSON) or jobs / "
                "name_prefix (read through the SageMaker API), not both"
            )
        from pipeline.telemetry.sagemaker_api import describe_jobs

        jobs = describe_jobs(opts, label)
    elif not opts.get("path"):
        raise InputError(
            f'{label}: sagemaker source has no jobs; set options.jobs = ["name", ...] or '
            "options.name_prefix (with created_after) to read them through the SageMaker API, "
            "or path to a DescribeTrainingJob JSON file or a folder of them"
        )
    else:
        jobs = list(_jobs(Path(str(opts["path"]))))
    attempts, resources, events, errors = [], [], [], []
    seen: dict[str, str] = {}
    for where, job in jobs:
        try:
            name = job.get("TrainingJobName")
            if not name or not job.get("TrainingJobArn"):
                raise InputError(
                    f"{where}: TrainingJobName or TrainingJobArn is missing; save the whole "
                    "aws sagemaker describe-training-job output"
                )
            if name in seen:
                raise InputError(
                    f"{where}: training job {name} also in {seen[name]}; keep one "
                    "DescribeTrainingJob output per job"
                )
            seen[name] = where
            rows, held, happened = job_rows(job, f"{where} (job {name})", opts)
        except InputError as error:
            errors.append(str(error))
            continue
        attempts += rows
        resources += held
        events += happened
    if errors:
        if opts.get("on_error") != "skip":
            more = f" (and {len(errors) - 1} more bad record(s))" if len(errors) > 1 else ""
            raise InputError(f"{label}: {errors[0]}{more}")
        log.warning(
            '%s: skipped %d bad record(s) (telemetry.on_error = "skip"); first: %s',
            label,
            len(errors),
            errors[0],
        )
    unknown = [a for a in attempts if a["status"] == "unknown"]
    if unknown:
        raws = sorted({a["tags"]["raw_status"] for a in unknown})
        log.warning(
            "%s: %d attempt(s) with unknown TrainingJobStatus %s", label, len(unknown), raws
        )
    return {
        "attempts": table("attempts", attempts),
        "attempt_resources": table("attempt_resources", resources),
        "attempt_events": table("attempt_events", events),
    }


def _jobs(path: Path) -> list[tuple[str, dict]]:
    """(where, DescribeTrainingJob dict) for each job in a file or a folder's *.json files."""
    if path.is_dir():
        files = sorted(path.glob("*.json"))
    elif path.is_file():
        files = [path]
    else:
        raise InputError(f"{path}: not found; point path at DescribeTrainingJob JSON")
    found = []
    for file in files:
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise InputError(
                f"{file}: not JSON ({error}); save the output of "
                "aws sagemaker describe-training-job --output json"
            ) from None
        if isinstance(data, dict):
            found.append((str(file), data))
        elif isinstance(data, list) and all(isinstance(item, dict) for item in data):
            found.extend((f"{file}: item {i}", item) for i, item in enumerate(data, start=1))
        else:
            raise InputError(f"{file}: expected a DescribeTrainingJob object or a list of them")
    return found


def parse_time(value: object, where: str) -> dt.datetime | None:
    """ISO 8601 with offset, epoch seconds, or a datetime (boto3) -> UTC; naive is refused."""
    if value in (None, ""):
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return dt.datetime.fromtimestamp(value, dt.UTC)
    if isinstance(value, dt.datetime):
        parsed = value
    else:
        try:
            parsed = dt.datetime.fromisoformat(str(value))
        except ValueError:
            raise InputError(
                f"{where}: {value!r} is not a timestamp; save the CLI's JSON output, which "
                "writes 2026-10-01T10:00:00.000000+00:00"
            ) from None
    if parsed.tzinfo is None:
        raise InputError(f"{where}: {value!r} has no time zone; write it with +00:00 or Z")
    return parsed.astimezone(dt.UTC)


def _lookup(job: dict, key: str | None) -> str | None:
    if not key:
        return None
    for tag in job.get("Tags") or []:
        if tag.get("Key") == key and str(tag.get("Value") or "").strip():
            return str(tag["Value"]).strip()
    value = (job.get("HyperParameters") or {}).get(key)
    return str(value).strip().strip('"') or None if value is not None else None


def _snake(status: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", status).lower()


def job_rows(job: dict, where: str, opts: dict[str, Any]) -> tuple[list, list, list]:
    """One job's attempts, attempt_resources and attempt_events rows."""
    name, arn = str(job["TrainingJobName"]), str(job["TrainingJobArn"])
    experiment_id = _lookup(job, opts["experiment_key"]) or (
        (job.get("ExperimentConfig") or {}).get("ExperimentName")
    )
    if not experiment_id:
        raise InputError(
            f"{where}: no experiment id; tag the job {opts['experiment_key']}=<experiment id> "
            "(merge ListTags output as Tags), pass it as a hyperparameter, or set "
            "ExperimentConfig.ExperimentName"
        )
    base = _lookup(job, opts["attempt_key"]) or name
    raw = str(job.get("TrainingJobStatus") or "")
    final = STATUSES.get(raw, "unknown")
    if final == "failed" and job.get("SecondaryStatus") in TIMEOUTS:
        final = "timeout"
    created = parse_time(job.get("CreationTime"), f"{where}, CreationTime")
    start = parse_time(job.get("TrainingStartTime"), f"{where}, TrainingStartTime")
    end = parse_time(job.get("TrainingEndTime"), f"{where}, TrainingEndTime")
    if start and end and end < start:
        raise InputError(
            f"{where}: TrainingEndTime {end.isoformat()} is before TrainingStartTime "
            f"{start.isoformat()}; save the job's DescribeTrainingJob output again"
        )
    transitions = [
        (parse_time(t.get("StartTime"), f"{where}, transition {t.get('Status')}"), t)
        for t in job.get("SecondaryStatusTransitions") or []
    ]
    transitions = sorted((t for t in transitions if t[0] is not None), key=lambda t: t[0])
    # Attempt boundaries: an Interrupted transition ends one attempt; the next Restarting (or
    # the transition after Interrupted) starts the next.
    spans: list[list[Any]] = [[start or (transitions[0][0] if transitions else None), None]]
    after_interrupt = False
    owner: list[int] = []
    for at, transition in transitions:
        status = transition.get("Status")
        if status == "Interrupted":
            spans[-1][1] = at
            owner.append(len(spans) - 1)
            after_interrupt = True
            continue
        if after_interrupt:
            spans.append([at, None])
            after_interrupt = False
        owner.append(len(spans) - 1)
    spans[-1][1] = end if final != "running" else None
    config = resource_config(job.get("ResourceConfig") or {}, where, opts.get("gpus") or {})
    gpus = config.get("gpu_count")
    metrics = job.get("FinalMetricDataList") or []
    metric = next(
        (m for m in metrics if not opts.get("metric") or m.get("MetricName") == opts["metric"]),
        None,
    )
    arn_parts = arn.split(":")
    tags = {
        "source": SOURCE,
        "source_native_id": arn,
        "training_job_name": name,
        "billable_time_s": job.get("BillableTimeInSeconds"),
        "training_time_s": job.get("TrainingTimeInSeconds"),
        "secondary_status": job.get("SecondaryStatus"),
        "instance_groups": config.get("instance_groups"),
    }
    if final == "unknown":
        tags["raw_status"] = raw
    tags = {k: str(v) for k, v in tags.items() if v is not None}
    # the first run keeps the plain id, so it does not change when the job is interrupted later
    # (the rule the Slurm and checkpoint-log adapters follow too)
    ids = [base] + [f"{base}#{n}" for n in range(2, len(spans) + 1)]
    attempts, resources = [], []
    for index, (span_start, span_end) in enumerate(spans):
        last = index == len(spans) - 1
        attempts.append(
            {
                "attempt_id": ids[index],
                "experiment_id": experiment_id,
                "parent_attempt_id": ids[index - 1] if index else None,
                "provider": "aws",
                "account_id": arn_parts[4] if len(arn_parts) > 5 else None,
                "region": arn_parts[3] if len(arn_parts) > 5 else None,
                "instance_type": config.get("instance_type"),
                "gpu_type": config.get("gpu_type"),
                "gpu_count": gpus,
                "node_count": config.get("node_count"),
                "capacity_type": "spot" if job.get("EnableManagedSpotTraining") else "on_demand",
                "submitted_at": created,
                "started_at": span_start,
                "ended_at": span_end,
                "status": final if last else "interrupted",
                "failure_reason": job.get("FailureReason") if last else "spot interruption",
                "metric_name": metric.get("MetricName") if metric and last else None,
                "metric_value": metric.get("Value") if metric and last else None,
                "artifact_uri": (job.get("ModelArtifacts") or {}).get("S3ModelArtifacts")
                if last
                else None,
                "tags": tags,
            }
        )
        resources.append(
            {
                "attempt_id": ids[index],
                "resource_id": arn,
                "resource_kind": "sagemaker_training_job",
                "started_at": span_start,
                "ended_at": span_end,
                "gpu_count": gpus,
            }
        )
    events = []
    for (at, transition), index in zip(transitions, owner, strict=True):
        status = str(transition.get("Status"))
        ended = parse_time(transition.get("EndTime"), f"{where}, transition {status}")
        events.append(
            {
                "attempt_id": ids[index],
                "event_at": at,
                "event_type": EVENTS.get(status, _snake(status)),
                "duration_s": (ended - at).total_seconds() if ended else None,
                "details": transition.get("StatusMessage"),
            }
        )
    return attempts, resources, events
