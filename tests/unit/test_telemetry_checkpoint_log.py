"""Checkpoint event logs: events per run of a job, time zones, and merging with attempts."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from pipeline.common.errors import InputError
from pipeline.telemetry import adapters
from pipeline.telemetry.canonical import arrow_schema
from pipeline.telemetry.checkpoint_log import read
from pipeline.telemetry.merge import merge

JOB = "llm-7b-pretrain"


def write_log(folder: Path, records: list[dict], name: str = "events.jsonl") -> Path:
    path = folder / name
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def event(at: str, kind: str, step: int | None = None, **extra: object) -> dict:
    record: dict = {"timestamp": at, "job_name": JOB, "event_type": kind, **extra}
    if step is not None:
        record["step"] = step
    return record


RESTARTED = [
    event("2026-10-05T08:00:00", "job_started", node_rank=0),
    event("2026-10-05T08:01:00", "checkpoint_loaded", 0),
    event("2026-10-05T09:00:00", "checkpoint_saved", 500),
    event("2026-10-05T09:30:00", "job_terminated"),
    event("2026-10-05T09:35:00", "job_started"),
    event("2026-10-05T09:36:00", "checkpoint_loaded", 500),
    event("2026-10-05T10:30:00", "checkpoint_saved", 1000),
]


def source(path: Path, **options: object) -> dict:
    return {"kind": "checkpoint_log", "path": str(path), "options": options}


def test_each_restart_is_the_next_run_of_the_job(tmp_path: Path) -> None:
    log = write_log(tmp_path, RESTARTED)
    events = read(source(log, timezone="Europe/Paris"), "log")["attempt_events"]
    assert events.schema == arrow_schema("attempt_events")
    rows = [
        (row["attempt_id"], row["event_type"], row["step"], row["event_at"])
        for row in events.to_pylist()
    ]
    paris = dt.timedelta(hours=2)  # October 5 is summer time: UTC+2
    at = lambda text: dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC) - paris  # noqa: E731
    assert rows == [
        (JOB, "started", None, at("2026-10-05T08:00:00")),
        (JOB, "checkpoint_loaded", 0, at("2026-10-05T08:01:00")),
        (JOB, "checkpoint_saved", 500, at("2026-10-05T09:00:00")),
        (JOB, "terminated", None, at("2026-10-05T09:30:00")),
        (f"{JOB}#2", "started", None, at("2026-10-05T09:35:00")),
        (f"{JOB}#2", "checkpoint_loaded", 500, at("2026-10-05T09:36:00")),
        (f"{JOB}#2", "checkpoint_saved", 1000, at("2026-10-05T10:30:00")),
    ]
    assert json.loads(events.to_pylist()[0]["details"]) == {"node_rank": 0}


def test_job_names_map_to_attempt_ids_and_explicit_ids_win(tmp_path: Path) -> None:
    records = [*RESTARTED[:3], event("2026-10-05T09:10:00", "first_step", attempt_id="att-x")]
    log = write_log(tmp_path, records)
    events = read(source(log, timezone="UTC", attempts={JOB: "att-llm-01"}), "log")
    assert [row["attempt_id"] for row in events["attempt_events"].to_pylist()] == [
        "att-llm-01",
        "att-llm-01",
        "att-llm-01",
        "att-x",
    ]


def test_a_folder_of_logs_is_read_file_by_file(tmp_path: Path) -> None:
    write_log(tmp_path, RESTARTED[:2], "a.jsonl")
    write_log(tmp_path, [event("2026-10-05T12:00:00Z", "checkpoint_saved", 9)], "b.jsonl")
    (tmp_path / "notes.txt").write_text("not a log", encoding="utf-8")
    events = read(source(tmp_path, timezone="UTC"), "log")["attempt_events"].to_pylist()
    assert [(row["event_type"], row["step"]) for row in events] == [
        ("started", None),
        ("checkpoint_loaded", 0),
        ("checkpoint_saved", 9),
    ]


def test_naive_times_need_a_zone(tmp_path: Path) -> None:
    log = write_log(tmp_path, RESTARTED)
    with pytest.raises(InputError) as caught:
        read(source(log), "telemetry.sources[2] (checkpoint_log)")
    assert str(caught.value) == (
        f"telemetry.sources[2] (checkpoint_log): {log}: line 1: timestamp "
        "'2026-10-05T08:00:00' has no time zone; set options.timezone to the zone the job wrote "
        'its log in (for example "UTC")'
    )


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("{not json", "not a JSON object"),
        ('["a list"]', "not a JSON object"),
        ('{"timestamp": "2026-10-05T08:00:00Z", "event_type": "x"}', "needs job_name"),
        ('{"timestamp": "soon", "job_name": "j", "event_type": "x"}', "is not ISO 8601"),
    ],
)
def test_bad_records_name_the_line_or_are_skipped(tmp_path: Path, line: str, problem: str) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text(json.dumps(event("2026-10-05T08:00:00Z", "job_started")) + "\n" + line + "\n")
    with pytest.raises(InputError, match=f"{log}: line 2: .*{problem}"):
        read(source(log), "log")
    kept = read({**source(log), "on_error": "skip"}, "log")["attempt_events"]
    assert kept.num_rows == 1


def test_unknown_zone_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"options\.timezone 'Mars/Olympus' is not a time zone"):
        read(source(write_log(tmp_path, RESTARTED), timezone="Mars/Olympus"), "log")
    with pytest.raises(InputError, match="no such log file"):
        read(source(tmp_path / "absent.jsonl"), "log")


def test_events_join_the_attempts_another_source_reports(tmp_path: Path) -> None:
    log = write_log(tmp_path, RESTARTED)
    attempts = adapters.table(
        "attempts",
        [
            {"attempt_id": JOB, "experiment_id": "exp", "status": "interrupted"},
            {"attempt_id": f"{JOB}#2", "experiment_id": "exp", "status": "succeeded"},
        ],
    )
    merged = merge(
        [("k8s", {"attempts": attempts}), ("log", read(source(log, timezone="UTC"), "log"))]
    )
    assert merged["attempt_events"].num_rows == len(RESTARTED)
    with pytest.raises(InputError, match="attempt_events name attempt"):
        merge([("log", read(source(log, timezone="UTC"), "log"))])
