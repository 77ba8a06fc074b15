"""Telemetry files (CSV, JSON lines, Parquet) -> canonical Arrow tables, and every bad input."""

from __future__ import annotations

import csv
import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.common.errors import InputError
from pipeline.telemetry import arrow_schema, load_telemetry

FORMATS = ("csv", "jsonl", "parquet")
UTC = dt.UTC
CONVENTION = {
    "csv": "(rows are data rows counted from 1; the header line is not counted)",
    "jsonl": "(rows are JSON records counted from 1; blank lines are not counted)",
    "parquet": "(rows are counted from 1)",
}
# no line break: a control character in an id is refused (a tag may hold one)
NASTY = "x'); drop table attempts; -- \"quoted\", 'single' \\ back"


def write(folder: Path, name: str, fmt: str, rows: list[dict]) -> Path:
    """Write rows as <folder>/<name>.<fmt>; columns are the union of the rows' keys, in order."""
    path = folder / f"{name}.{fmt}"
    columns = list(dict.fromkeys(key for row in rows for key in row))
    if fmt == "csv":
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(columns)
            writer.writerows(
                [["" if row.get(c) is None else row.get(c) for c in columns] for row in rows]
            )
    elif fmt in ("jsonl", "ndjson"):
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    else:
        table = pa.Table.from_pylist([{c: row.get(c) for c in columns} for row in rows])
        pq.write_table(table, path)
    return path


def attempt(attempt_id: str = "a1", **columns: object) -> dict:
    return {"attempt_id": attempt_id, "experiment_id": "e1", "status": "succeeded", **columns}


def load_error(folder: Path) -> str:
    with pytest.raises(InputError) as raised:
        load_telemetry(folder)
    return str(raised.value)


# --- happy path -------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_happy_path_types_order_utc_and_tags(tmp_path: Path, fmt: str) -> None:
    rows = [
        {
            "status": "succeeded",
            "gpu_count": "8",
            "started_at": "2026-10-01T12:00:00+02:00",
            "ended_at": "2026-10-01T11:30:00Z",
            "experiment_id": "e1",
            "attempt_id": "a1",
            "capacity_type": "spot",
            "metric_value": "0.93",
            "tags": '{"team": "vision", "user_attempt_id": "u-1"}',
            "queue": "gpu-high",
        },
        attempt("a2", status="running", started_at="2026-10-01 10:00Z"),
    ]
    write(tmp_path, "attempts", fmt, rows)

    tables = load_telemetry(tmp_path)

    assert list(tables) == ["attempts", "attempt_resources", "attempt_events", "experiments"]
    attempts = tables["attempts"]
    assert attempts.schema == arrow_schema("attempts")
    assert attempts.column_names[:3] == ["attempt_id", "experiment_id", "parent_attempt_id"]
    assert attempts.column_names[-1] == "tags"
    first, second = attempts.to_pylist()
    assert first["gpu_count"] == 8
    assert first["metric_value"] == 0.93
    assert first["started_at"] == dt.datetime(2026, 10, 1, 10, 0, tzinfo=UTC)
    assert first["ended_at"] == dt.datetime(2026, 10, 1, 11, 30, tzinfo=UTC)
    assert first["capacity_type"] == "spot"
    assert first["node_count"] is None
    assert first["parent_attempt_id"] is None
    assert first["tags"] == [("queue", "gpu-high"), ("team", "vision"), ("user_attempt_id", "u-1")]
    assert second["started_at"] == dt.datetime(2026, 10, 1, 10, 0, tzinfo=UTC)
    assert second["ended_at"] is None
    assert second["status"] == "running"
    assert second["tags"] == []
    for name in ("attempt_resources", "attempt_events", "experiments"):
        assert tables[name].num_rows == 0
        assert tables[name].schema == arrow_schema(name)


@pytest.mark.parametrize(
    ("text", "utc"),
    [
        ("2026-10-01T10:00:00Z", dt.datetime(2026, 10, 1, 10, 0, tzinfo=UTC)),
        ("2026-10-01T10:00:00.123456Z", dt.datetime(2026, 10, 1, 10, 0, 0, 123456, tzinfo=UTC)),
        ("2026-10-01 12:00:00+02:00", dt.datetime(2026, 10, 1, 10, 0, tzinfo=UTC)),
        ("2026-10-01 12:00:00 +0200", dt.datetime(2026, 10, 1, 10, 0, tzinfo=UTC)),
        ("2026-10-01T05:00:00-05", dt.datetime(2026, 10, 1, 10, 0, tzinfo=UTC)),
        ("2026-10-01t10:00z", dt.datetime(2026, 10, 1, 10, 0, tzinfo=UTC)),
        (" 2026-10-01T00:30:00+01:00 ", dt.datetime(2026, 9, 30, 23, 30, tzinfo=UTC)),
    ],
)
def test_accepted_timestamp_spellings(tmp_path: Path, text: str, utc: dt.datetime) -> None:
    write(tmp_path, "attempts", "csv", [attempt("a1", submitted_at=text)])

    assert load_telemetry(tmp_path)["attempts"].column("submitted_at").to_pylist() == [utc]


def test_canonical_schema_types() -> None:
    attempts = arrow_schema("attempts")
    assert attempts.field("gpu_count").type == pa.int64()
    assert attempts.field("metric_value").type == pa.float64()
    assert attempts.field("submitted_at").type == pa.timestamp("us", tz="UTC")
    assert attempts.field("tags").type == pa.map_(pa.string(), pa.string())
    assert arrow_schema("attempt_events").names == [
        "attempt_id",
        "event_at",
        "event_type",
        "step",
        "duration_s",
        "details",
    ]
    assert arrow_schema("attempt_resources").field("gpu_count").type == pa.int64()
    assert arrow_schema("experiments").field("higher_is_better").type == pa.bool_()
    assert arrow_schema("experiments").field("quality_threshold").type == pa.float64()


@pytest.mark.parametrize("fmt", FORMATS)
def test_all_four_datasets(tmp_path: Path, fmt: str) -> None:
    write(tmp_path, "attempts", fmt, [attempt("a1")])
    write(
        tmp_path,
        "attempt_resources",
        fmt,
        [
            {
                "resource_id": "i-0abc",
                "attempt_id": "a1",
                "resource_kind": "ec2_instance",
                "started_at": "2026-10-01T10:00:00-05:00",
                "ended_at": "2026-10-01T16:00:00Z",
                "gpu_count": "8",
                "vcpu_count": "4.5",
                "memory_gib": "16",
            }
        ],
    )
    write(
        tmp_path,
        "attempt_events",
        fmt,
        [
            {
                "attempt_id": "a1",
                "event_at": "2026-10-01T15:05:00.250Z",
                "event_type": "checkpoint_saved",
                "step": "1000",
                "duration_s": "42.5",
                "details": "s3://b/ckpt/1000",
            }
        ],
    )
    write(
        tmp_path,
        "experiments",
        fmt,
        [
            {"experiment_id": "e1", "team": "vision", "quality_threshold": "0.9"},
            {"experiment_id": "e2", "higher_is_better": "false"},
            {"experiment_id": "e3", "higher_is_better": "true"},
        ],
    )

    tables = load_telemetry(tmp_path)

    assert tables["attempt_resources"].to_pylist() == [
        {
            "attempt_id": "a1",
            "resource_id": "i-0abc",
            "resource_kind": "ec2_instance",
            "started_at": dt.datetime(2026, 10, 1, 15, 0, tzinfo=UTC),
            "ended_at": dt.datetime(2026, 10, 1, 16, 0, tzinfo=UTC),
            "gpu_count": 8,
            "vcpu_count": 4.5,
            "memory_gib": 16.0,
            "pod": None,
        }
    ]
    assert tables["attempt_events"].to_pylist() == [
        {
            "attempt_id": "a1",
            "event_at": dt.datetime(2026, 10, 1, 15, 5, 0, 250000, tzinfo=UTC),
            "event_type": "checkpoint_saved",
            "step": 1000,
            "duration_s": 42.5,
            "details": "s3://b/ckpt/1000",
        }
    ]
    experiments = tables["experiments"].to_pylist()
    assert [row["higher_is_better"] for row in experiments] == [None, False, True]
    assert experiments[0]["quality_threshold"] == 0.9
    assert experiments[0]["team"] == "vision"
    for name, table in tables.items():
        assert table.schema == arrow_schema(name)


def test_jsonl_native_values(tmp_path: Path) -> None:
    write(
        tmp_path,
        "attempts",
        "jsonl",
        [attempt("a1", gpu_count=8, node_count=2.0, metric_value=1, tags={"team": "nlp", "n": 3})],
    )
    write(
        tmp_path,
        "attempt_events",
        "ndjson",
        [
            {
                "attempt_id": "a1",
                "event_at": "2026-10-01T10:00:00Z",
                "event_type": "interrupted",
                "details": {"reason": "spot reclaim"},
            }
        ],
    )

    tables = load_telemetry(tmp_path)

    row = tables["attempts"].to_pylist()[0]
    assert (row["gpu_count"], row["node_count"], row["metric_value"]) == (8, 2, 1.0)
    assert row["tags"] == [("n", "3"), ("team", "nlp")]
    details = tables["attempt_events"].column("details").to_pylist()[0]
    assert json.loads(details) == {"reason": "spot reclaim"}


def test_parquet_native_types(tmp_path: Path) -> None:
    berlin = pa.timestamp("ms", tz="Europe/Berlin")
    table = pa.table(
        {
            "attempt_id": ["a1"],
            "experiment_id": ["e1"],
            "status": ["failed"],
            "gpu_count": pa.array([4], pa.int32()),
            "started_at": pa.array([dt.datetime(2026, 10, 1, 8, 0, tzinfo=UTC)], berlin),
            "account_id": pa.array([123456789012], pa.int64()),
            "tags": pa.array([[("team", "speech")]], pa.map_(pa.string(), pa.string())),
            "spot_interruptions": pa.array([2], pa.int64()),
        }
    )
    pq.write_table(table, tmp_path / "attempts.parquet")
    experiments = pa.table({"experiment_id": ["e1"], "higher_is_better": [False]})
    pq.write_table(experiments, tmp_path / "experiments.parquet")

    tables = load_telemetry(tmp_path)

    row = tables["attempts"].to_pylist()[0]
    assert row["started_at"] == dt.datetime(2026, 10, 1, 8, 0, tzinfo=UTC)
    assert row["gpu_count"] == 4
    assert row["account_id"] == "123456789012"
    assert row["tags"] == [("spot_interruptions", "2"), ("team", "speech")]
    assert tables["experiments"].column("higher_is_better").to_pylist() == [False]


@pytest.mark.parametrize("fmt", FORMATS)
def test_values_are_data_never_sql(tmp_path: Path, fmt: str) -> None:
    note = NASTY + "\nsecond line"
    rows = [attempt(NASTY, tags=json.dumps({"note": note}), user_attempt_id=NASTY)]
    write(tmp_path, "attempts", fmt, rows)
    write(tmp_path, "attempt_resources", fmt, [{"attempt_id": NASTY, "resource_id": NASTY}])

    tables = load_telemetry(tmp_path)

    row = tables["attempts"].to_pylist()[0]
    assert row["attempt_id"] == NASTY
    assert row["tags"] == [("note", note), ("user_attempt_id", NASTY)]
    assert tables["attempt_resources"].column("resource_id").to_pylist() == [NASTY]


def test_header_only_csv_is_an_empty_dataset(tmp_path: Path) -> None:
    write(tmp_path, "attempts", "csv", [attempt()])
    (tmp_path / "attempt_events.csv").write_text("attempt_id,event_at,event_type\n")
    (tmp_path / "experiments.jsonl").write_text("\n")

    tables = load_telemetry(tmp_path)

    assert tables["attempt_events"].num_rows == 0
    assert tables["attempt_events"].schema == arrow_schema("attempt_events")
    assert tables["experiments"].num_rows == 0


# --- files ------------------------------------------------------------------------------------


def test_missing_attempts_file(tmp_path: Path) -> None:
    write(tmp_path, "experiments", "csv", [{"experiment_id": "e1"}])

    message = load_error(tmp_path)

    assert message == (
        f"{tmp_path}: no attempts file; write the attempts (one row per attempt) to "
        "attempts.csv, attempts.jsonl, attempts.ndjson or attempts.parquet in this folder"
    )


def test_missing_folder(tmp_path: Path) -> None:
    message = load_error(tmp_path / "nope")

    assert message.startswith(f"{tmp_path / 'nope'}: telemetry folder not found;")
    assert "attempts.csv" in message


def test_two_files_for_one_dataset(tmp_path: Path) -> None:
    write(tmp_path, "attempts", "csv", [attempt()])
    write(tmp_path, "attempts", "parquet", [attempt()])

    message = load_error(tmp_path)

    assert message == (
        f"{tmp_path}: attempts has 2 files (attempts.csv and attempts.parquet); keep one of them "
        "(a dataset is one file)"
    )


@pytest.mark.parametrize(
    ("name", "rows", "missing"),
    [
        ("attempts", [{"attempt_id": "a1", "experiment_id": "e1"}], "status"),
        ("attempt_resources", [{"attempt_id": "a1", "resource_kind": "volume"}], "resource_id"),
        (
            "attempt_events",
            [{"attempt_id": "a1", "event_at": "2026-10-01T10:00:00Z"}],
            "event_type",
        ),
        ("experiments", [{"team": "vision"}], "experiment_id"),
    ],
)
@pytest.mark.parametrize("fmt", FORMATS)
def test_missing_required_column(
    tmp_path: Path, fmt: str, name: str, rows: list[dict], missing: str
) -> None:
    if name != "attempts":
        write(tmp_path, "attempts", "csv", [attempt()])
    path = write(tmp_path, name, fmt, rows)

    message = load_error(tmp_path)

    assert message.startswith(f"{path}: column {missing} is missing; {name} needs the columns ")
    assert f"(found: {', '.join(rows[0])})" in message


def test_missing_column_hint_for_near_names(tmp_path: Path) -> None:
    path = write(
        tmp_path, "attempts", "csv", [{"attempt_id": "a", "experiment_id": "e", "Status": "x"}]
    )

    message = load_error(tmp_path)

    assert message == (
        f"{path}: column status is missing; attempts needs the columns attempt_id, "
        "experiment_id, status (found: attempt_id, experiment_id, Status); column names are "
        "exact: found 'Status'"
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_extra_column_outside_attempts_is_an_error(tmp_path: Path, fmt: str) -> None:
    write(tmp_path, "attempts", fmt, [attempt()])
    path = write(
        tmp_path,
        "attempt_resources",
        fmt,
        [{"attempt_id": "a1", "resource_id": "i-1", "host": "n1"}],
    )

    message = load_error(tmp_path)

    assert message == (
        f"{path}: column host is not in attempt_resources; the allowed columns are "
        "attempt_id, resource_id, resource_kind, started_at, ended_at, gpu_count, vcpu_count, "
        "memory_gib, pod: rename or remove it"
    )


def test_duplicate_csv_header(tmp_path: Path) -> None:
    path = tmp_path / "attempts.csv"
    path.write_text("attempt_id,experiment_id,status,status\na1,e1,failed,failed\n")

    assert load_error(tmp_path) == f"{path}: column status appears twice; keep one of them"


def test_bad_json_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "attempts.jsonl"
    path.write_text(
        '{"attempt_id": "a1", "experiment_id": "e1", "status": "failed"}\n{"attempt_id": \n'
    )

    message = load_error(tmp_path)

    assert message.startswith(f"{path}: line 2 is not valid JSON (")
    assert message.endswith("); write one JSON object per line")


def test_json_line_that_is_not_an_object(tmp_path: Path) -> None:
    path = tmp_path / "attempts.jsonl"
    path.write_text('["a1", "e1"]\n')

    message = load_error(tmp_path)

    assert message.startswith(f"{path}: line 1 is a JSON list, not an object; write one JSON")


# --- values -----------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("empty", ["", "   "])
def test_empty_required_value(tmp_path: Path, fmt: str, empty: str) -> None:
    path = write(tmp_path, "attempts", fmt, [attempt("a1"), attempt("a2", experiment_id=empty)])

    message = load_error(tmp_path)

    assert message == (
        f"{path}: row 2, column experiment_id: is empty; experiment_id is required: fill it in "
        f"or remove the row {CONVENTION[fmt]}"
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_duplicate_attempt_id_names_both_rows(tmp_path: Path, fmt: str) -> None:
    rows = [attempt("a1"), attempt("a2"), attempt("a1", status="failed")]
    path = write(tmp_path, "attempts", fmt, rows)

    message = load_error(tmp_path)

    assert message == (
        f"{path}: rows 1 and 3, column attempt_id: 'a1' appears more than once; each attempt "
        "needs its own attempt_id (a retry is a new attempt with a new id): keep one of the rows "
        f"or give the other a new attempt_id {CONVENTION[fmt]}"
    )


def test_csv_rows_count_records_not_lines(tmp_path: Path) -> None:
    rows = [attempt("a1", failure_reason="two\nlines"), attempt("a2", status="done")]
    path = write(tmp_path, "attempts", "csv", rows)

    message = load_error(tmp_path)

    assert message.startswith(f"{path}: row 2, column status: 'done' is not a valid status;")


@pytest.mark.parametrize("fmt", FORMATS)
def test_bad_status(tmp_path: Path, fmt: str) -> None:
    path = write(tmp_path, "attempts", fmt, [attempt("a1", status="Succeeded")])

    message = load_error(tmp_path)

    assert message == (
        f"{path}: row 1, column status: 'Succeeded' is not a valid status; use one of "
        f"succeeded, failed, interrupted, cancelled, timeout, running, unknown {CONVENTION[fmt]}"
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_bad_capacity_type(tmp_path: Path, fmt: str) -> None:
    rows = [attempt("a1", capacity_type="spot"), attempt("a2", capacity_type="on-demand")]
    path = write(tmp_path, "attempts", fmt, rows)

    message = load_error(tmp_path)

    assert message == (
        f"{path}: row 2, column capacity_type: 'on-demand' is not a valid capacity_type; use "
        f"one of on_demand, spot, reserved, capacity_block {CONVENTION[fmt]}"
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_timestamp_without_time_zone(tmp_path: Path, fmt: str) -> None:
    path = write(tmp_path, "attempts", fmt, [attempt("a1", started_at="2026-10-01T10:00:00")])

    message = load_error(tmp_path)

    assert message == (
        f"{path}: row 1, column started_at: '2026-10-01T10:00:00' has no time zone; write UTC "
        "with a trailing Z (2026-10-01T10:00:00Z) or an explicit offset "
        f"(2026-10-01T12:00:00+02:00) {CONVENTION[fmt]}"
    )


def test_parquet_timestamp_column_without_time_zone(tmp_path: Path) -> None:
    table = pa.table(
        {
            "attempt_id": ["a1"],
            "experiment_id": ["e1"],
            "status": ["failed"],
            "ended_at": pa.array([dt.datetime(2026, 10, 1, 10, 0)], pa.timestamp("us")),
        }
    )
    pq.write_table(table, tmp_path / "attempts.parquet")

    message = load_error(tmp_path)

    assert message == (
        f"{tmp_path / 'attempts.parquet'}: row 1, column ended_at: 2026-10-01T10:00:00 is a "
        "timestamp without time zone; store the column as timestamp with time zone UTC "
        "(pa.timestamp('us', tz='UTC')), or as text: write UTC with a trailing Z "
        "(2026-10-01T10:00:00Z) or an explicit offset (2026-10-01T12:00:00+02:00) "
        f"{CONVENTION['parquet']}"
    )


def test_parquet_timestamp_column_without_time_zone_names_each_row(tmp_path: Path) -> None:
    times = [dt.datetime(2026, 10, 1, hour) for hour in (10, 11)]
    table = pa.table(
        {
            "attempt_id": ["a1", "a2", "a3"],
            "experiment_id": ["e1"] * 3,
            "status": ["failed"] * 3,
            "ended_at": pa.array([*times, None], pa.timestamp("us")),
        }
    )
    pq.write_table(table, tmp_path / "attempts.parquet")

    message = load_error(tmp_path)

    assert message.startswith(f"{tmp_path / 'attempts.parquet'}: 2 problems")
    assert "row 1, column ended_at: 2026-10-01T10:00:00 is a timestamp without time zone" in message
    assert "row 2, column ended_at: 2026-10-01T11:00:00 is a timestamp without time zone" in message
    assert "row 3" not in message


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("value", ["yesterday", "2026-13-01T10:00:00Z", "1759312800"])
def test_unparseable_timestamp(tmp_path: Path, fmt: str, value: str) -> None:
    write(tmp_path, "attempts", fmt, [attempt()])
    rows = [{"attempt_id": "a1", "event_at": value, "event_type": "resumed"}]
    path = write(tmp_path, "attempt_events", fmt, rows)

    message = load_error(tmp_path)

    assert message == (
        f"{path}: row 1, column event_at: {value!r} is not a timestamp; write ISO 8601 with a "
        f"time zone, such as 2026-10-01T10:00:00Z {CONVENTION[fmt]}"
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_attempt_ended_before_started(tmp_path: Path, fmt: str) -> None:
    rows = [
        attempt("a1", started_at="2026-10-01T10:00:00Z", ended_at="2026-10-01T12:00:00+02:00"),
        attempt("a2", started_at="2026-10-01T10:00:00Z", ended_at="2026-10-01T11:00:00+02:00"),
    ]
    path = write(tmp_path, "attempts", fmt, rows)

    message = load_error(tmp_path)

    assert message == (
        f"{path}: row 2, column ended_at: ended_at 2026-10-01T09:00:00+00:00 is before "
        "started_at 2026-10-01T10:00:00+00:00; fix the times (an interval cannot end before it "
        f"starts) {CONVENTION[fmt]}"
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_resource_ended_before_started(tmp_path: Path, fmt: str) -> None:
    write(tmp_path, "attempts", fmt, [attempt()])
    rows = [
        {
            "attempt_id": "a1",
            "resource_id": "vol-1",
            "started_at": "2026-10-02T00:00:00Z",
            "ended_at": "2026-10-01T00:00:00Z",
        }
    ]
    path = write(tmp_path, "attempt_resources", fmt, rows)

    message = load_error(tmp_path)

    assert message.startswith(
        f"{path}: row 1, column ended_at: ended_at 2026-10-01T00:00:00+00:00 is before "
        "started_at 2026-10-02T00:00:00+00:00; fix the times"
    )


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", ["attempts", "attempt_resources"])
def test_negative_gpu_count(tmp_path: Path, fmt: str, name: str) -> None:
    if name == "attempts":
        row = attempt("a1", gpu_count="-8")
    else:
        write(tmp_path, "attempts", fmt, [attempt()])
        row = {"attempt_id": "a1", "resource_id": "i-1", "gpu_count": "-8"}
    path = write(tmp_path, name, fmt, [row])

    message = load_error(tmp_path)

    assert message == (
        f"{path}: row 1, column gpu_count: -8 is negative; write 0 or more {CONVENTION[fmt]}"
    )


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    ("column", "value", "what", "example"),
    [
        ("gpu_count", "8.5", "is not a whole number", "8"),
        ("node_count", "two", "is not a whole number", "8"),
        ("metric_value", "n/a", "is not a number", "0.93"),
    ],
)
def test_bad_numbers(
    tmp_path: Path, fmt: str, column: str, value: str, what: str, example: str
) -> None:
    path = write(tmp_path, "attempts", fmt, [attempt("a1", **{column: value})])

    message = load_error(tmp_path)

    assert message == (
        f"{path}: row 1, column {column}: {value!r} {what}; write a value such as {example} "
        f"{CONVENTION[fmt]}"
    )


def test_bad_boolean(tmp_path: Path) -> None:
    write(tmp_path, "attempts", "csv", [attempt()])
    path = write(
        tmp_path, "experiments", "csv", [{"experiment_id": "e1", "higher_is_better": "maybe"}]
    )

    message = load_error(tmp_path)

    assert message.startswith(
        f"{path}: row 1, column higher_is_better: 'maybe' is not true or false; write a value "
        "such as true"
    )


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("child", ["attempt_resources", "attempt_events"])
def test_unknown_attempt_id_in_child_dataset(tmp_path: Path, fmt: str, child: str) -> None:
    write(tmp_path, "attempts", fmt, [attempt("a1")])
    if child == "attempt_resources":
        rows = [{"attempt_id": a, "resource_id": "i-1"} for a in ("a1", "a9", "a9")]
    else:
        rows = [
            {"attempt_id": a, "event_at": "2026-10-01T10:00:00Z", "event_type": "resumed"}
            for a in ("a1", "a9", "a9")
        ]
    path = write(tmp_path, child, fmt, rows)

    message = load_error(tmp_path)

    assert message == (
        f"{path}: rows 2 and 3, column attempt_id: attempt 'a9' is not in attempts.{fmt}; add "
        f"the attempt to attempts.{fmt} or remove the row(s) {CONVENTION[fmt]}"
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_duplicate_experiment_id(tmp_path: Path, fmt: str) -> None:
    write(tmp_path, "attempts", fmt, [attempt()])
    rows = [{"experiment_id": "e1"}, {"experiment_id": "e2"}, {"experiment_id": "e1"}]
    path = write(tmp_path, "experiments", fmt, rows)

    message = load_error(tmp_path)

    assert message == (
        f"{path}: rows 1 and 3, column experiment_id: 'e1' appears more than once; keep one row "
        f"per experiment {CONVENTION[fmt]}"
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_tags_not_a_json_object(tmp_path: Path, fmt: str) -> None:
    path = write(tmp_path, "attempts", fmt, [attempt("a1", tags="team=vision")])

    message = load_error(tmp_path)

    assert message == (
        f"{path}: row 1, column tags: 'team=vision' is not a JSON object; write tags as a JSON "
        f'object such as {{"team": "vision"}}, or leave the cell empty {CONVENTION[fmt]}'
    )


def test_tag_column_and_tags_json_disagree(tmp_path: Path) -> None:
    rows = [attempt("a1", tags='{"team": "nlp"}', team="vision")]
    path = write(tmp_path, "attempts", "csv", rows)

    message = load_error(tmp_path)

    assert message == (
        f"{path}: row 1, column team: 'vision' in column team but 'nlp' under key team in the "
        f"tags column; make them agree or drop one {CONVENTION['csv']}"
    )


def test_tag_column_and_tags_json_agree(tmp_path: Path) -> None:
    write(tmp_path, "attempts", "csv", [attempt("a1", tags='{"team": "nlp"}', team="nlp")])

    assert load_telemetry(tmp_path)["attempts"].column("tags").to_pylist() == [[("team", "nlp")]]


def test_several_problems_are_listed_together(tmp_path: Path) -> None:
    rows = [
        attempt("a1", status="ok"),
        attempt("a2", gpu_count="-1"),
        attempt("a3", started_at="2026-10-01 10:00"),
    ]
    path = write(tmp_path, "attempts", "csv", rows)

    message = load_error(tmp_path)

    assert message.splitlines() == [
        f"{path}: 3 problems {CONVENTION['csv']}:",
        "  row 1, column status: 'ok' is not a valid status; use one of succeeded, failed, "
        "interrupted, cancelled, timeout, running, unknown",
        "  row 2, column gpu_count: -1 is negative; write 0 or more",
        "  row 3, column started_at: '2026-10-01 10:00' has no time zone; write UTC with a "
        "trailing Z (2026-10-01T10:00:00Z) or an explicit offset (2026-10-01T12:00:00+02:00)",
    ]


def test_many_bad_rows_are_counted_not_listed(tmp_path: Path) -> None:
    rows = [attempt(f"a{i}", status="done") for i in range(1, 9)]
    path = write(tmp_path, "attempts", "csv", rows)

    message = load_error(tmp_path)

    lines = message.splitlines()
    assert lines[0] == f"{path}: 5 problems {CONVENTION['csv']}:"
    assert lines[-1] == (
        "  row 5, column status: 'done' is not a valid status; use one of succeeded, failed, "
        "interrupted, cancelled, timeout, running, unknown (3 more row(s) have the same problem)"
    )


def test_many_duplicates_name_the_first_rows(tmp_path: Path) -> None:
    path = write(tmp_path, "attempts", "csv", [attempt("a1") for _ in range(7)])

    message = load_error(tmp_path)

    assert message.startswith(
        f"{path}: rows 1, 2, 3, 4 and 5, column attempt_id: 'a1' appears more than once;"
    )
    assert message.endswith(f"(2 more row(s) have the same problem) {CONVENTION['csv']}")


def test_jsonl_tags_with_nested_values_of_different_shapes(tmp_path: Path) -> None:
    rows = [
        attempt("a1", tags={"cfg": {"lr": 0.1}}),
        attempt("a2", tags={"cfg": [1, 2]}, extra={"k": "v"}),
        attempt("a3", tags={}),
    ]
    write(tmp_path, "attempts", "jsonl", rows)

    tags = load_telemetry(tmp_path)["attempts"].column("tags").to_pylist()

    assert [dict(row) for row in tags[:2]] == [
        {"cfg": '{"lr": 0.1}'},
        {"cfg": "[1, 2]", "extra": '{"k": "v"}'},
    ]
    assert tags[2] == []


def test_parquet_struct_tags(tmp_path: Path) -> None:
    table = pa.table(
        {
            "attempt_id": ["a1", "a2"],
            "experiment_id": ["e1", "e1"],
            "status": ["failed", "failed"],
            "tags": [{"team": "vision", "run": None}, {"team": None, "run": "r7"}],
        }
    )
    pq.write_table(table, tmp_path / "attempts.parquet")

    tags = load_telemetry(tmp_path)["attempts"].column("tags").to_pylist()

    assert tags == [[("team", "vision")], [("run", "r7")]]


def test_header_only_attempts_file_is_an_empty_table(tmp_path: Path) -> None:
    (tmp_path / "attempts.csv").write_text("attempt_id,experiment_id,status\n")

    tables = load_telemetry(tmp_path)

    assert tables["attempts"].num_rows == 0
    assert tables["attempts"].schema == arrow_schema("attempts")


def test_unreadable_csv(tmp_path: Path) -> None:
    path = tmp_path / "attempts.csv"
    path.write_text("attempt_id,experiment_id,status\na1,e1,failed,extra\n")

    message = load_error(tmp_path)

    assert message.startswith(f"{path}: cannot read the file as CSV (")
    assert message.endswith("); write CSV with one header line of column names")
