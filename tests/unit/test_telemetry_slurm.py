"""Slurm adapter: sacct --json and --parsable2 -> canonical attempts and attempt_resources."""

from __future__ import annotations

import datetime as dt
import json
import logging
from pathlib import Path

import polars as pl
import pytest

from pipeline.common.errors import InputError
from pipeline.telemetry import slurm
from pipeline.telemetry.canonical import arrow_schema
from schemas.attempt_resources import AttemptResources
from schemas.attempts import TAGS, Attempts

UTC = dt.UTC
HEADER = (
    "JobIDRaw|JobID|JobName|Cluster|User|Submit|Start|End|State|ExitCode|NNodes|NodeList|AllocTRES"
)
# Job 100: ran 10:00-11:00 UTC on gpu-[01-02], was requeued (NODE_FAIL), ran again 11:10-12:00.
# Job 101: array task 7 of 90, cancelled. Times in America/Toronto (EDT, UTC-4) for parsable2.
PSV = [
    "100|100|train-llm|c1|ann|2026-06-01T05:55:00|2026-06-01T06:00:00|2026-06-01T07:00:00|"
    "NODE_FAIL|0:9|2|gpu-[01-02]|billing=16,cpu=16,gres/gpu=16,mem=64G,node=2",
    "100.batch|100.batch|batch|c1|||2026-06-01T06:00:00|2026-06-01T07:00:00|NODE_FAIL|0:9|1|"
    "gpu-01|cpu=8,gres/gpu=8,mem=32G,node=1",
    "100.extern|100.extern|extern|c1|||2026-06-01T06:00:00|2026-06-01T07:00:00|COMPLETED|0:0|2|"
    "gpu-[01-02]|billing=16,cpu=16,gres/gpu=16,mem=64G,node=2",
    "100|100|train-llm|c1|ann|2026-06-01T07:05:00|2026-06-01T07:10:00|2026-06-01T08:00:00|"
    "COMPLETED|0:0|2|gpu-[02-03]|billing=16,cpu=16,gres/gpu:a100=16,mem=64G,node=2",
    "100.0|100.0|python|c1|||2026-06-01T07:10:00|2026-06-01T08:00:00|COMPLETED|0:0|2|"
    "gpu-[02-03]|cpu=16,gres/gpu:a100=16,mem=64G,node=2",
    "101|90_7|sweep|c1|bob|2026-06-01T05:00:00|2026-06-01T06:30:00|2026-06-01T06:45:00|"
    "CANCELLED by 1000|0:15|1|cpu7|billing=4,cpu=4,mem=8G,node=1",
]


def epoch(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp())


def json_job(
    job_id: int,
    name: str,
    state: str,
    times: tuple[str, str, str],
    nodes: str,
    tres: list[dict],
    **more: object,
) -> dict:
    submit, start, end = times
    return {
        "job_id": job_id,
        "name": name,
        "cluster": "c1",
        "user": more.pop("user", "ann"),
        "state": {"current": state, "reason": "None"},
        "time": {
            "submission": epoch(submit),
            "start": epoch(start),
            "end": epoch(end),
            "elapsed": 1,
        },
        "nodes": nodes,
        "tres": {"allocated": tres},
        "exit_code": {"return_code": 0},
        "steps": [{"step": {"name": "batch"}}],
        **more,
    }


GPU16 = [{"type": "node", "name": None, "count": 2}, {"type": "gres", "name": "gpu", "count": 16}]
JOBS = [
    # Order in the dump does not matter: the requeue is ordered by its times.
    json_job(
        100,
        "train-llm",
        "COMPLETED",
        ("2026-06-01T11:05:00", "2026-06-01T11:10:00", "2026-06-01T12:00:00"),
        "gpu-[02-03]",
        [{"type": "node", "count": 2}, {"type": "gres", "name": "gpu:a100", "count": 16}],
    ),
    json_job(
        100,
        "train-llm",
        "NODE_FAIL",
        ("2026-06-01T09:55:00", "2026-06-01T10:00:00", "2026-06-01T11:00:00"),
        "gpu-[01-02]",
        GPU16,
    ),
    json_job(
        101,
        "sweep",
        "CANCELLED",
        ("2026-06-01T09:00:00", "2026-06-01T10:30:00", "2026-06-01T10:45:00"),
        "cpu7",
        [{"type": "node", "count": 1}],
        user="bob",
        array={"job_id": 90, "task_id": 7},
    ),
]
MAP = [
    "node,instance_id,valid_from,valid_to",
    "gpu-01,i-0aaa,2026-06-01T00:00:00Z,",
    "gpu-02,i-0bbb,2026-06-01T00:00:00Z,2026-06-01T11:30:00Z",
    "gpu-02,i-0ccc,2026-06-01T11:30:00Z,",
    "gpu-03,i-0ddd,2026-06-01T00:00:00Z,",
]


def write_psv(tmp_path: Path, lines: list[str], header: str = HEADER) -> Path:
    path = tmp_path / "sacct.psv"
    path.write_text("\n".join([header, *lines]) + "\n", encoding="utf-8")
    return path


def write_json(tmp_path: Path, jobs: list[dict]) -> Path:
    path = tmp_path / "sacct.json"
    path.write_text(json.dumps({"meta": {}, "errors": [], "jobs": jobs}), encoding="utf-8")
    return path


def read(path: Path, **options: object) -> dict:
    on_error = options.pop("on_error", "fail")
    source = {"kind": "slurm", "path": path, "options": options, "on_error": on_error}
    return slurm.read(source, "telemetry.sources[1] (slurm)")


def read_both(tmp_path: Path, **options: object) -> list[dict]:
    map_path = tmp_path / "nodes.csv"
    map_path.write_text("\n".join(MAP) + "\n", encoding="utf-8")
    psv = read(
        write_psv(tmp_path, PSV), timezone="America/Toronto", node_map="nodes.csv", **options
    )
    js = read(write_json(tmp_path, JOBS), node_map=map_path, **options)
    return [psv, js]


def at(hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime(2026, 6, 1, hour, minute, tzinfo=UTC)


@pytest.mark.parametrize("fmt", ["parsable2", "json"])
def test_requeues_steps_gpus_hostlists_and_times(tmp_path: Path, fmt: str) -> None:
    tables = read_both(tmp_path)[0 if fmt == "parsable2" else 1]
    assert tables["attempts"].schema == arrow_schema("attempts")
    assert tables["attempt_resources"].schema == arrow_schema("attempt_resources")
    Attempts.validate(pl.from_arrow(tables["attempts"]).cast({"tags": TAGS}))
    rows = {row["attempt_id"]: row for row in tables["attempts"].to_pylist()}
    assert list(rows) == ["slurm:100", "slurm:100#2", "slurm:101"]
    first, second, cancelled = rows.values()
    assert (first["started_at"], first["ended_at"], first["submitted_at"]) == (
        at(10),
        at(11),
        at(9, 55),
    )
    assert (first["status"], first["failure_reason"], first["parent_attempt_id"]) == (
        "failed",
        "node_fail",
        None,
    )
    assert (first["gpu_count"], first["gpu_type"], first["node_count"]) == (16, None, 2)
    assert (second["started_at"], second["ended_at"], second["status"]) == (
        at(11, 10),
        at(12),
        "succeeded",
    )
    assert (second["parent_attempt_id"], second["gpu_count"], second["gpu_type"]) == (
        "slurm:100",
        16,
        "a100",
    )
    assert (cancelled["status"], cancelled["failure_reason"], cancelled["experiment_id"]) == (
        "cancelled",
        None,
        "sweep",
    )
    assert first["experiment_id"] == second["experiment_id"] == "train-llm"
    assert first["cluster"] == "c1"
    tags = dict(first["tags"])
    assert (tags["source"], tags["source_native_id"], tags["raw_status"]) == (
        "slurm",
        "100",
        "NODE_FAIL",
    )
    assert tags["nodes"] == "gpu-01,gpu-02"
    assert dict(second["tags"])["source_native_id"] == "100#2"
    assert dict(cancelled["tags"])["source_native_id"] == "90_7"
    assert dict(cancelled["tags"])["raw_status"].startswith("CANCELLED")
    expected_steps = "2" if fmt == "parsable2" else "1"
    assert dict(first["tags"])["steps"] == expected_steps


def test_both_formats_give_the_same_attempts_and_resources(tmp_path: Path) -> None:
    psv, js = read_both(tmp_path)
    columns = [c for c in arrow_schema("attempts").names if c != "tags"]
    assert psv["attempts"].select(columns).to_pylist() == js["attempts"].select(columns).to_pylist()
    assert psv["attempt_resources"].to_pylist() == js["attempt_resources"].to_pylist()


def test_node_map_gives_resources_clipped_to_attempt_and_validity(tmp_path: Path) -> None:
    resources = read_both(tmp_path)[0]["attempt_resources"]
    AttemptResources.validate(pl.from_arrow(resources))
    got = [
        (r["attempt_id"], r["resource_id"], r["started_at"], r["ended_at"], r["gpu_count"])
        for r in resources.to_pylist()
    ]
    assert got == [
        ("slurm:100", "i-0aaa", at(10), at(11), 8),
        ("slurm:100", "i-0bbb", at(10), at(11), 8),
        # gpu-02 was replaced at 11:30: the second attempt held both instances in turn.
        ("slurm:100#2", "i-0bbb", at(11, 10), at(11, 30), 8),
        ("slurm:100#2", "i-0ccc", at(11, 30), at(12), 8),
        ("slurm:100#2", "i-0ddd", at(11, 10), at(12), 8),
    ]
    assert {r["resource_kind"] for r in resources.to_pylist()} == {"ec2_instance"}


@pytest.mark.parametrize(
    ("hostlist", "nodes"),
    [
        ("gpu-[01-03,07]", ["gpu-01", "gpu-02", "gpu-03", "gpu-07"]),
        ("a[1-2]-b[8-9]", ["a1-b8", "a1-b9", "a2-b8", "a2-b9"]),
        ("n[9-10],login1", ["n9", "n10", "login1"]),
        ("cdr247", ["cdr247"]),
        ("n[01-03]-ib,n[1-2][3-4]", ["n01-ib", "n02-ib", "n03-ib", "n13", "n14", "n23", "n24"]),
        ("None assigned", []),
        ("", []),
    ],
)
def test_hostlist_expands(hostlist: str, nodes: list[str]) -> None:
    assert slurm.expand_hostlist(hostlist) == nodes


def test_naive_times_without_timezone_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError) as raised:
        read(write_psv(tmp_path, PSV))
    message = str(raised.value)
    assert "sacct.psv: line 2 (job 100)" in message
    assert "has no time zone" in message and "timezone" in message


def test_offsets_and_unknown_times_need_no_timezone(tmp_path: Path) -> None:
    line = "7|7|j|c1|u|2026-06-01T10:00:00+02:00|Unknown|Unknown|PENDING|0:0|1|None assigned|"
    (row,) = read(write_psv(tmp_path, [line]))["attempts"].to_pylist()
    assert (row["submitted_at"], row["started_at"], row["ended_at"]) == (at(8), None, None)
    assert (row["status"], row["gpu_count"], row["node_count"]) == ("running", None, 1)


def test_unknown_state_is_kept_and_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    line = PSV[-1].replace("CANCELLED by 1000", "WEIRD_STATE")
    with caplog.at_level(logging.WARNING, logger="runcost"):
        (row,) = read(write_psv(tmp_path, [line]), timezone="UTC")["attempts"].to_pylist()
    assert row["status"] == "unknown"
    assert dict(row["tags"])["raw_status"] == "WEIRD_STATE"
    assert "'WEIRD_STATE' x1" in caplog.text


def test_end_before_start_fails_or_is_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bad = "9|9|j|c1|u|2026-06-01T10:00:00|2026-06-01T10:00:00|2026-06-01T09:00:00|FAILED|1:0|1|n1|"
    path = write_psv(tmp_path, [bad, PSV[-1]])
    with pytest.raises(InputError, match=r"line 2 \(job 9\): End .* is before Start"):
        read(path, timezone="UTC")
    with caplog.at_level(logging.WARNING, logger="runcost"):
        tables = read(path, timezone="UTC", on_error="skip")
    assert tables["attempts"].column("attempt_id").to_pylist() == ["slurm:101"]
    assert "skipped 1 bad record(s)" in caplog.text


@pytest.mark.parametrize(
    ("lines", "error"),
    [
        (
            ["100.batch|100.batch|batch|c1||||||0:0|1|n1|"],
            r"line 2 \(job 100.batch\): step .* no job",
        ),
        ([PSV[0], PSV[0]], r"line 3 \(job 100\): job 100 is reported twice"),
        (["||j|c1||||||0:0|1|n1|"], r"line 2: empty JobIDRaw"),
        (
            ["5|5|j|c1||2026-13-01|Unknown|Unknown|PENDING|0:0|1|n1|"],
            r"Submit '2026-13-01' is not a time",
        ),
        (
            ["5|5|j|c1||Unknown|Unknown|Unknown|PENDING|0:0|1|n[a-b]|"],
            r"line 2 \(job 5\): NodeList 'n\[a-b\]' is not a Slurm hostlist \(bad range\)",
        ),
        (
            ["5|5|j|c1||Unknown|Unknown|Unknown|PENDING|0:0|1|n[1-3|"],
            r"line 2 \(job 5\): NodeList 'n\[1-3' is not a Slurm hostlist \(unbalanced",
        ),
        (
            ["5|5|j|c1||Unknown|Unknown|Unknown|PENDING|0:0|1|n[10-8]|"],
            r"line 2 \(job 5\): NodeList 'n\[10-8\]' is not a Slurm hostlist \(start > stop",
        ),
        (
            [
                "5|5|j|c1||Unknown|Unknown|Unknown|PENDING|0:0|1||",
                "5.batch|5.batch|batch|c1||||||0:0|1|n[2-|",
            ],
            r"line 3 \(job 5.batch\): NodeList 'n\[2-' is not a Slurm hostlist",
        ),
        (["5|5||c1||Unknown|Unknown|Unknown|PENDING|0:0|1|n1|"], r"no experiment id"),
        (["5|5|j"], r"line 2: 3 fields but the header has 13"),
    ],
)
def test_bad_records_are_named(tmp_path: Path, lines: list[str], error: str) -> None:
    with pytest.raises(InputError, match=error):
        read(write_psv(tmp_path, lines), timezone="UTC")


def test_bad_json_records_are_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"jobs\[0\]: no job_id"):
        read(write_json(tmp_path, [{"name": "x"}]))
    (tmp_path / "not.json").write_text('{"jobs": 3}', encoding="utf-8")
    with pytest.raises(InputError, match="no top-level 'jobs' list"):
        read(tmp_path / "not.json")
    job = json_job(6, "x", "COMPLETED", ("2026-06-01T10:00:00",) * 3, "gpu-[01-04", [])
    with pytest.raises(InputError, match=r"jobs\[0\] \(job 6\): NodeList 'gpu-\[01-04' is not"):
        read(write_json(tmp_path, [job]))


def test_comment_tags_give_attempt_and_experiment_ids(tmp_path: Path) -> None:
    job = json_job(
        5,
        "x",
        "RUNNING",
        ("2026-06-01T10:00:00", "2026-06-01T10:00:00", "1970-01-01T00:00:00"),
        "n1",
        [],
        comment={"job": "user_attempt_id=att-7,user_experiment_id=exp-3,team=nlp"},
    )
    (row,) = read(write_json(tmp_path, [job]))["attempts"].to_pylist()
    assert (row["attempt_id"], row["experiment_id"], row["status"]) == ("att-7", "exp-3", "running")
    assert (row["started_at"], row["ended_at"]) == (at(10), None)
    tags = dict(row["tags"])
    assert (tags["team"], tags["source_native_id"], "comment" in tags) == ("nlp", "5", False)


def test_two_jobs_with_one_attempt_tag_are_refused(tmp_path: Path) -> None:
    times = ("2026-06-01T10:00:00", "2026-06-01T10:00:00", "2026-06-01T11:00:00")
    jobs = [
        json_job(n, "x", "COMPLETED", times, "n1", [], comment={"job": "user_attempt_id=a"})
        for n in (1, 2)
    ]
    with pytest.raises(InputError, match=r"jobs\[1\] \(job 2\): attempt id 'a' is also used"):
        read(write_json(tmp_path, jobs))


def test_experiment_from_other_fields(tmp_path: Path) -> None:
    rows = read_both(tmp_path, experiment_from="job")[1]["attempts"].to_pylist()
    assert [r["experiment_id"] for r in rows] == ["slurm:100", "slurm:100", "slurm:101"]
    with pytest.raises(InputError, match="experiment_from 'nope' is not known"):
        read(write_json(tmp_path, JOBS), experiment_from="nope")


def test_data_parser_v0039_numbers_and_state_lists(tmp_path: Path) -> None:
    job = json_job(8, "x", "TIMEOUT", ("2026-06-01T10:00:00",) * 3, "n1", [])
    job["state"] = {"current": ["TIMEOUT"], "reason": "None"}
    job["time"]["start"] = {"set": True, "infinite": False, "number": epoch("2026-06-01T10:00:00")}
    job["time"]["end"] = {"set": True, "infinite": False, "number": epoch("2026-06-01T12:00:00")}
    (row,) = read(write_json(tmp_path, [job]))["attempts"].to_pylist()
    assert (row["status"], row["failure_reason"], row["ended_at"]) == ("timeout", "timeout", at(12))
