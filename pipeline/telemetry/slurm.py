"""Slurm accounting (`sacct --json`, `sacct --parsable2`) -> canonical attempts and resources."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pyarrow as pa

from pipeline.common.errors import InputError
from pipeline.telemetry.adapters import Outcome, table
from pipeline.telemetry.slurm_fields import (
    expand_hostlist,
    parse_epoch,
    parse_gpus,
    parse_local_time,
    parse_number,
    parse_tres,
)
from pipeline.telemetry.slurm_nodes import node_resources

log = logging.getLogger("runcost")

UTC = dt.UTC
# sacct State (its first word: "CANCELLED by 1234") -> canonical status; PENDING and the other
# not-yet-ended states are 'running' (a pending attempt has started_at NULL).
_STATES = {
    "succeeded": "COMPLETED",
    "failed": "FAILED OUT_OF_MEMORY BOOT_FAIL NODE_FAIL",
    "interrupted": "PREEMPTED REQUEUED",
    "cancelled": "CANCELLED",
    "timeout": "TIMEOUT DEADLINE",
    "running": "RUNNING PENDING SUSPENDED COMPLETING CONFIGURING REQUEUE_HOLD REQUEUE_FED "
    "RESIZING SIGNALING STAGE_OUT",
}
STATUSES = {state: status for status, states in _STATES.items() for state in states.split()}
# Where experiment_id comes from when the job comment carries no experiment key.
EXPERIMENT_FROM = ("name", "wckey", "account", "array_job", "job")
# Job fields kept as tags: tag -> sacct --parsable2 column (the JSON reader fills the same).
_TAG_PAIRS = (
    "cluster:Cluster account:Account user:User partition:Partition qos:QOS comment:Comment "
    "wckey:WCKey exit_code:ExitCode state_reason:Reason elapsed_s:ElapsedRaw"
)
TAG_COLUMNS = dict(pair.split(":") for pair in _TAG_PAIRS.split())
HOW = "export with sacct --json, or sacct -D -P --format=JobIDRaw,JobID,...,NodeList,AllocTRES"


@dataclass
class Job:
    """One job record of a sacct dump (its step rows folded in), in source-neutral form."""

    where: str  # "<file>: jobs[3] (job 123)" or "<file>: line 4 (job 123)", for messages
    job_id: str
    display_id: str  # 123_7 for array task 7 of array job 123
    name: str
    state: str
    submitted: dt.datetime | None
    started: dt.datetime | None
    ended: dt.datetime | None
    nodes: list[str]
    gpus: int | None
    gpu_type: str | None
    node_count: int | None
    tags: dict[str, str] = field(default_factory=dict)
    steps: int = 0


def read(source: dict[str, object], label: str) -> dict[str, pa.Table]:
    """One sacct dump (source["path"]) -> canonical attempts and attempt_resources.

    Options: format ("json" | "parsable2", else detected), timezone (IANA name; required for
    times without a zone), node_map (CSV node,instance_id,valid_from,valid_to), experiment_from
    (EXPERIMENT_FROM, default "name"), attempt_key / experiment_key (key=value pairs of the job
    comment, defaults user_attempt_id / user_experiment_id), provider, region, cluster.
    """
    options = dict(source.get("options") or {})  # type: ignore[call-overload]
    outcome = Outcome(source, label)
    path = Path(str(source.get("path") or ""))
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{label}: {path}: cannot read the sacct output ({exc}); {HOW}") from exc
    zone = _zone(options.get("timezone"), label)
    fmt = options.get("format") or ("json" if text.lstrip().startswith("{") else "parsable2")
    if fmt == "json":
        jobs = list(_json_jobs(text, path, outcome))
    elif fmt == "parsable2":
        jobs = list(_parsable_jobs(text, path, zone, outcome))
    else:
        raise InputError(f"{label}: format {fmt!r} is not known; use json or parsable2")
    rows = _attempts(jobs, options, outcome, label)
    node_map = path.parent / str(options["node_map"]) if options.get("node_map") else None
    resources = node_resources(rows, node_map, zone) if node_map else []
    outcome.report()
    return {
        "attempts": table("attempts", rows),
        "attempt_resources": table("attempt_resources", resources),
    }


def _zone(name: object, label: str) -> ZoneInfo | None:
    if not name:
        return None
    try:
        return ZoneInfo(str(name))
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InputError(
            f"{label}: timezone {name!r} is not known; use an IANA name such as America/Toronto"
        ) from exc


# ---- sacct --json ------------------------------------------------------------------------


def _json_jobs(text: str, path: Path, outcome: Outcome) -> Iterator[Job]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{outcome.label}: {path}: line {exc.lineno}: not JSON; {HOW}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), list):
        raise InputError(f"{outcome.label}: {path}: no top-level 'jobs' list; {HOW}")
    for index, job in enumerate(data["jobs"]):
        job_id = parse_number(job.get("job_id")) if isinstance(job, dict) else None
        where = f"{path}: jobs[{index}]" + (f" (job {job_id})" if job_id else "")
        if not job_id:
            outcome.bad(where, f"no job_id; {HOW}")
            continue
        try:
            yield _json_job(job, where, str(job_id))
        except ValueError as exc:
            outcome.bad(where, str(exc))


def _json_job(job: dict, where: str, job_id: str) -> Job:
    time, state = job.get("time") or {}, job.get("state") or {}
    current = state.get("current") if isinstance(state, dict) else state
    if isinstance(current, list):  # data_parser v0.0.39+: ["COMPLETED"] or flags after it
        current = current[0] if current else ""
    array = job.get("array") or {}
    array_job, task = parse_number(array.get("job_id")), parse_number(array.get("task_id"))
    pairs = [
        (
            f"{t.get('type')}/{t.get('name')}" if t.get("name") else str(t.get("type")),
            t.get("count"),
        )
        for t in (job.get("tres") or {}).get("allocated") or []
        if isinstance(t, dict)
    ]
    gpus, gpu_type, node_count = parse_gpus(pairs)

    def inner(key: str, sub: str) -> object:
        value = job.get(key)
        return value.get(sub) if isinstance(value, dict) else value

    exit_code = parse_number(inner("exit_code", "return_code"))
    tags = {
        **{tag: job.get(tag) for tag in ("cluster", "account", "user", "partition", "qos")},
        "comment": inner("comment", "job"),
        "wckey": inner("wckey", "wckey"),
        "exit_code": exit_code,
        "state_reason": state.get("reason") if isinstance(state, dict) else None,
        "elapsed_s": parse_number(time.get("elapsed")),
        "array_job": array_job,
    }
    return Job(
        where=where,
        job_id=job_id,
        display_id=f"{array_job}_{task}" if array_job and task is not None else job_id,
        name=str(job.get("name") or ""),
        state=str(current or ""),
        submitted=parse_epoch(time.get("submission")),
        started=parse_epoch(time.get("start")),
        ended=parse_epoch(time.get("end")),
        nodes=expand_hostlist(str(job.get("nodes") or "")),
        gpus=gpus,
        gpu_type=gpu_type,
        node_count=node_count
        if node_count is not None
        else parse_number(job.get("allocation_nodes")),
        tags={k: str(v) for k, v in tags.items() if v not in (None, "")},
        steps=len(job.get("steps") or []),
    )


def _parsable_jobs(text: str, path: Path, zone: ZoneInfo | None, outcome: Outcome) -> Iterator[Job]:
    reader = csv.reader(io.StringIO(text), delimiter="|", quoting=csv.QUOTE_NONE)
    header = next(reader, [])
    missing = [c for c in ("State", "Start", "End") if c not in header]
    if not {"JobIDRaw", "JobID"} & set(header) or missing:
        needed = ", ".join(missing or ["JobIDRaw"])
        raise InputError(f"{outcome.label}: {path}: line 1: sacct header lacks {needed}; {HOW}")
    job: Job | None = None
    for line, values in enumerate(reader, start=2):
        if not values:
            continue
        if len(values) != len(header):
            outcome.bad(
                f"{path}: line {line}",
                f"{len(values)} fields but the header has {len(header)}; use -P (--parsable2)",
            )
            continue
        row = dict(zip(header, values, strict=True))
        raw_id = (row.get("JobIDRaw") or row.get("JobID") or "").strip()
        base, _, step = raw_id.partition(".")
        where = f"{path}: line {line} (job {raw_id})"
        if not base:
            outcome.bad(f"{path}: line {line}", "empty JobIDRaw; every row needs a job id")
        elif step:  # .batch, .extern, .0 fold into the job row above them
            if job is None or job.job_id != base:
                outcome.bad(where, f"step {raw_id} has no job row above it; export without -X")
            else:
                try:
                    _fold_step(job, row)
                except ValueError as exc:
                    outcome.bad(where, str(exc))
        else:
            if job is not None:
                yield job
            job = None
            try:
                job = _parsable_job(row, where, base, zone)
            except ValueError as exc:
                outcome.bad(where, str(exc))
    if job is not None:
        yield job


def _parsable_job(row: dict[str, str], where: str, job_id: str, zone: ZoneInfo | None) -> Job:
    gpus, gpu_type, tres_nodes = parse_gpus(parse_tres(row.get("AllocTRES", "")))
    display = (row.get("JobID") or job_id).strip()
    tags = {tag: row.get(column, "").strip() for tag, column in TAG_COLUMNS.items()}
    tags["array_job"] = display.split("_")[0] if "_" in display else ""
    nnodes = row.get("NNodes", "").strip()
    return Job(
        where=where,
        job_id=job_id,
        display_id=display,
        name=row.get("JobName", "").strip(),
        state=row.get("State", ""),
        submitted=parse_local_time(row.get("Submit", ""), zone, "Submit"),
        started=parse_local_time(row.get("Start", ""), zone, "Start"),
        ended=parse_local_time(row.get("End", ""), zone, "End"),
        nodes=expand_hostlist(row.get("NodeList", "")),
        gpus=gpus,
        gpu_type=gpu_type,
        node_count=int(nnodes) if nnodes.isdigit() else tres_nodes,
        tags={k: v for k, v in tags.items() if v},
    )


def _fold_step(job: Job, row: dict[str, str]) -> None:
    """A step row counts toward its job and fills GPUs and nodes the job row lacks."""
    job.steps += 1
    gpus, gpu_type, _ = parse_gpus(parse_tres(row.get("AllocTRES", "")))
    if job.gpus is None and gpus is not None:
        job.gpus, job.gpu_type = gpus, job.gpu_type or gpu_type
    if not job.nodes:
        job.nodes = expand_hostlist(row.get("NodeList", ""))


def _attempts(jobs: list[Job], options: dict, outcome: Outcome, label: str) -> list[dict]:
    """One attempt per job record; the records of one job id are its requeues, oldest first."""
    source = str(options.get("experiment_from") or "name")
    if source not in EXPERIMENT_FROM:
        raise InputError(
            f"{label}: experiment_from {source!r} is not known; use {', '.join(EXPERIMENT_FROM)}"
        )
    attempt_key = str(options.get("attempt_key") or "user_attempt_id")
    experiment_key = str(options.get("experiment_key") or "user_experiment_id")
    by_id: dict[str, list[Job]] = {}
    for job in jobs:
        by_id.setdefault(job.job_id, []).append(job)
    far = dt.datetime.max.replace(tzinfo=UTC)
    rows: list[dict] = []
    claimed: dict[str, str] = {}
    for job_id, records in by_id.items():
        records.sort(key=lambda j: (j.submitted or far, j.started or far, j.ended or far))
        seen: dict[tuple, str] = {}
        parent = None
        for number, job in enumerate(records, start=1):
            times = (job.submitted, job.started, job.ended)
            if times in seen:
                outcome.bad(
                    job.where,
                    f"job {job_id} is reported twice (also {seen[times]}) "
                    "with the same Submit, Start and End; export each record once",
                )
                continue
            seen[times] = job.where
            if job.started and job.ended and job.ended < job.started:
                outcome.bad(
                    job.where,
                    f"End {job.ended.isoformat()} is before Start "
                    f"{job.started.isoformat()}; fix or drop the record",
                )
                continue
            comment = _comment_tags(job.tags.get("comment", ""))
            suffix = "" if number == 1 else f"#{number}"
            attempt_id = (comment.get(attempt_key) or f"slurm:{job_id}") + suffix
            experiment = comment.get(experiment_key) or _experiment(job, source)
            if not experiment:
                outcome.bad(
                    job.where,
                    f"no experiment id: {source} is empty and the comment "
                    f"has no {experiment_key}=...; set sbatch --comment",
                )
                continue
            if attempt_id in claimed:
                outcome.bad(
                    job.where,
                    f"attempt id {attempt_id!r} is also used by "
                    f"{claimed[attempt_id]}; give each job its own {attempt_key}",
                )
                continue
            claimed[attempt_id] = job.where
            rows.append(
                _row(job, attempt_id, experiment, parent, comment, suffix, options, outcome)
            )
            parent = attempt_id
    return rows


def _experiment(job: Job, source: str) -> str | None:
    if source == "name":
        return job.name or None
    return f"slurm:{job.job_id}" if source == "job" else job.tags.get(source)


def _comment_tags(comment: str) -> dict[str, str]:
    """key=value pairs of a job comment (sbatch --comment "user_attempt_id=a1,team=x"), or {}."""
    pairs = [item.partition("=") for item in re.split(r"[,;\s]+", comment.strip()) if item]
    if not pairs or any(not sep or not key for key, sep, _ in pairs):
        return {}
    return {key: value for key, _, value in pairs}


def _row(
    job: Job,
    attempt_id: str,
    experiment: str,
    parent: str | None,
    comment: dict,
    suffix: str,
    options: dict,
    outcome: Outcome,
) -> dict:
    word = job.state.strip().split(" ")[0].upper().rstrip("+")
    tags = {**job.tags, **comment, "source": "slurm", "slurm_job_id": job.job_id}
    if comment:
        del tags["comment"]
    status = outcome.status(word, STATUSES, tags)
    tags.update(source_native_id=job.display_id + suffix, raw_status=job.state.strip())
    if job.nodes:
        tags["nodes"] = ",".join(job.nodes)
    if job.steps:
        tags["steps"] = str(job.steps)
    return {
        "attempt_id": attempt_id,
        "experiment_id": experiment,
        "parent_attempt_id": parent,
        "provider": options.get("provider"),
        "region": options.get("region"),
        "cluster": job.tags.get("cluster") or options.get("cluster"),
        "gpu_type": job.gpu_type,
        "gpu_count": job.gpus,
        "node_count": job.node_count if job.node_count is not None else len(job.nodes) or None,
        "submitted_at": job.submitted,
        "started_at": job.started,
        "ended_at": None if status == "running" else job.ended,
        "status": status,
        "failure_reason": word.lower() if status in ("failed", "interrupted", "timeout") else None,
        "tags": tags,
        "nodes": job.nodes,
    }
