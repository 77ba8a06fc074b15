"""damaged_files: a snapshot's record, files, sizes, footers and row counts, checked cheaply."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from pipeline.run.as_of import write_snapshot_database
from pipeline.warehouse import publish as publish_module
from pipeline.warehouse.integrity import DamagedFile, DamagedRecord, damaged_files
from pipeline.warehouse.publish import publish
from pipeline.warehouse.snapshots import unchanged_snapshot

RUN_ID = "20261101T000000Z-aaaaaa"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A snapshot of a partitioned table (two periods) and a plain one."""
    con = duckdb.connect()
    con.execute("create schema normalized; create schema marts; create schema staging")
    con.execute(
        "create table normalized.cost_lines as select range as line_id, "
        "case when range < 3 then '2026-09' else '2026-10' end as billing_period from range(7)"
    )
    con.execute("create table marts.totals as select 1 as n")
    for name in publish_module.TELEMETRY_VIEWS:
        con.execute(f"create view staging.{name} as select 1 as id where false")
    snapshot = publish(con, tmp_path, RUN_ID)
    con.close()
    return snapshot.folder


def test_a_whole_snapshot_records_its_files_and_has_no_damage(folder: Path) -> None:
    record = json.loads((folder / "snapshot.json").read_text())
    files = record["tables"]["normalized.cost_lines"]["files"]
    assert sorted(files) == [
        "normalized/cost_lines/billing_period=2026-09/part_0.parquet",
        "normalized/cost_lines/billing_period=2026-10/part_0.parquet",
    ]
    assert all(size == (folder / path).stat().st_size for path, size in files.items())
    assert list(record["tables"]["marts.totals"]["files"]) == ["marts/totals.parquet"]
    assert damaged_files(folder) == []


def test_each_kind_of_damage_is_named(folder: Path) -> None:
    plain = folder / "marts" / "totals.parquet"
    size = plain.stat().st_size
    plain.write_bytes(plain.read_bytes()[:-8])
    september = folder / "normalized/cost_lines/billing_period=2026-09/part_0.parquet"
    september.unlink()
    assert damaged_files(folder) == [
        DamagedFile(
            str(plain),
            "marts.totals",
            f"holds {size - 8} bytes where snapshot.json records {size} (truncated or overwritten)",
        ),
        DamagedFile(str(september), "normalized.cost_lines", "is missing"),
    ]
    assert unchanged_snapshot(folder.parent.parent, {}) is None, "published again, whole"


def test_a_file_of_its_size_whose_footer_does_not_read(folder: Path) -> None:
    plain = folder / "marts" / "totals.parquet"
    plain.write_bytes(b"\0" * plain.stat().st_size)
    (found,) = damaged_files(folder)
    assert (found.path, found.table) == (str(plain), "marts.totals")
    assert found.problem.startswith("is not a readable Parquet file: ")


def test_a_snapshot_recording_no_sizes_is_checked_by_footers_and_rows(folder: Path) -> None:
    record_path = folder / "snapshot.json"
    record = json.loads(record_path.read_text())
    for entry in record["tables"].values():
        del entry["files"]  # as runcost wrote it before it recorded file sizes
    record_path.write_text(json.dumps(record))
    assert damaged_files(folder) == []
    (folder / "normalized/cost_lines/billing_period=2026-09/part_0.parquet").unlink()
    (folder / "marts" / "totals.parquet").unlink()
    assert damaged_files(folder) == [
        DamagedFile(str(folder / "marts" / "totals.parquet"), "marts.totals", "is missing"),
        DamagedFile(
            str(folder / "normalized" / "cost_lines"),
            "normalized.cost_lines",
            "holds 4 rows where snapshot.json records 7 (a file is missing or was replaced)",
        ),
    ]


def test_a_damaged_record_is_named_with_the_fix(folder: Path, tmp_path: Path) -> None:
    record_path = folder / "snapshot.json"
    record_path.write_text('{"run_id": "x", "tab', encoding="utf-8")
    problem = (
        "is not whole JSON (truncated?): Unterminated string starting at: line 1 column 17 "
        "(char 16)"
    )
    assert damaged_files(folder) == [DamagedFile(str(record_path), None, problem)]
    # runcost sql --as-of and runcost diff read the record: one line naming it and the fix
    with pytest.raises(DamagedRecord) as caught:
        write_snapshot_database(folder, tmp_path / "as_of.duckdb")
    assert str(caught.value) == (
        f"{record_path}: {problem}; the snapshot's record is damaged. Run `runcost run`, "
        "which publishes a whole snapshot again from raw/ and the telemetry"
    )
    record_path.unlink()
    assert damaged_files(folder) == [DamagedFile(str(record_path), None, "is missing")]
