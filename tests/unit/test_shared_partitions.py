"""Snapshots share unchanged billing periods: equal partitions are hard links, never rewritten;
the views, pruning and a filesystem without links all keep working."""

from __future__ import annotations

import errno
import os
import shutil
from dataclasses import replace
from pathlib import Path

import duckdb
import pytest

from pipeline.warehouse import publish as publish_module
from pipeline.warehouse import sharing
from pipeline.warehouse.publish import content_hash, publish, table_contents
from pipeline.warehouse.snapshots import DATABASE_NAME, open_database, prune, snapshot_record

PERIODS = ("2026-08", "2026-09", "2026-10", "2026-11", "2026-12", "2027-01")


def _build(changed: str | None = None, periods: tuple[str, ...] = PERIODS[:3]):
    """Cost lines over ``periods``; the period ``changed`` has one line's cost changed."""
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    for schema in ("staging", "normalized", "marts"):
        con.execute(f"create schema {schema}")
    listed = ", ".join(f"'{period}'" for period in periods)
    con.execute(
        "create table normalized.cost_lines as select line_id, period as billing_period, "
        "(line_id * 1.25 + case when period = ? and line_id = 0 then 1 else 0 end)"
        "::decimal(38, 10) as billed_cost "
        f"from range(4) as r(line_id) cross join unnest([{listed}]) as p(period)",
        [changed or ""],
    )
    con.execute("create table marts.totals as select sum(billed_cost) as total from "
                "normalized.cost_lines")  # fmt: skip
    for name in publish_module.TELEMETRY_VIEWS:
        con.execute(f"create view staging.{name} as select 1 as id where false")
    return con


def _files(folder: Path, period: str) -> list[Path]:
    return sorted((folder / "normalized" / "cost_lines" / f"billing_period={period}").iterdir())


def _same_file(a: Path, b: Path) -> bool:
    return os.stat(a).st_ino == os.stat(b).st_ino


def _publish(con, warehouse: Path, run_id: str, share_from: Path | None):
    return publish(con, warehouse, run_id, table_contents(con), share_from=share_from)


def test_unchanged_periods_are_links_and_the_changed_one_is_written(tmp_path: Path) -> None:
    first = _publish(_build(), tmp_path, "20261101T000000000000Z-aaaaaa", None)
    second = _publish(_build(changed="2026-10"), tmp_path, "20261102T000000000000Z-bbbbbb",
                      first.folder)  # fmt: skip
    assert second.shared == {"normalized.cost_lines": ["2026-08", "2026-09"]}
    for period in ("2026-08", "2026-09"):
        assert all(
            _same_file(a, b)
            for a, b in zip(
                _files(first.folder, period), _files(second.folder, period), strict=True
            )
        )
    assert not _same_file(_files(first.folder, "2026-10")[0], _files(second.folder, "2026-10")[0])

    # the published views read the linked and the written periods alike, exactly
    views = open_database(tmp_path / DATABASE_NAME)
    assert views.execute(
        "select billing_period, sum(billed_cost) from normalized.cost_lines group by 1 order by 1"
    ).fetchall() == [
        ("2026-08", pytest.approx(7.5)),
        ("2026-09", pytest.approx(7.5)),
        ("2026-10", pytest.approx(8.5)),
    ]
    record = snapshot_record(second.folder)
    entry = record["tables"]["normalized.cost_lines"]
    _columns, rows, digest = content_hash(views, "normalized.cost_lines")
    assert (rows, digest) == (entry["rows"], entry["content_hash"])
    assert sorted(entry["files"]) == sorted(
        path.relative_to(second.folder).as_posix()
        for period in ("2026-08", "2026-09", "2026-10")
        for path in _files(second.folder, period)
    )
    views.close()

    # pruning the first snapshot leaves the second's linked files whole
    prune(tmp_path / "snapshots", keep=1, current=second.run_id, retention_days=0)
    assert not first.folder.exists()
    views = open_database(tmp_path / DATABASE_NAME)
    assert views.execute("select count(*) from normalized.cost_lines").fetchone()[0] == 12
    views.close()


def test_the_partition_sums_add_up_to_the_table_hash(tmp_path: Path) -> None:
    con = _build(periods=PERIODS)
    [lines] = [item for item in table_contents(con) if item.name == "normalized.cost_lines"]
    assert [value for value, _rows, _total in lines.partitions] == list(PERIODS)
    assert sum(rows for _value, rows, _total in lines.partitions) == lines.rows == 24
    _columns, rows, digest = content_hash(con, "normalized.cost_lines")
    assert (rows, digest) == (lines.rows, lines.content_hash)  # one pass gives both


def test_more_periods_than_filtered_copies_write_only_the_changed_ones(tmp_path: Path) -> None:
    first = _publish(_build(periods=PERIODS), tmp_path, "20261101T000000000000Z-aaaaaa", None)
    second = _publish(
        _build(changed="2026-12", periods=PERIODS),
        tmp_path,
        "20261102T000000000000Z-bbbbbb",
        first.folder,
    )
    assert second.shared["normalized.cost_lines"] == [p for p in PERIODS if p != "2026-12"]
    assert [path.name for path in _files(second.folder, "2026-12")] != []
    views = open_database(tmp_path / DATABASE_NAME)
    assert views.execute("select count(*), count(distinct billing_period) from "
                         "normalized.cost_lines").fetchone() == (24, 6)  # fmt: skip
    views.close()


def test_without_a_snapshot_to_share_or_with_other_columns_everything_is_written(
    tmp_path: Path,
) -> None:
    first = _publish(_build(), tmp_path, "20261101T000000000000Z-aaaaaa", None)
    assert first.shared == {}
    second = _publish(_build(), tmp_path, "20261102T000000000000Z-bbbbbb", None)
    assert second.shared == {}
    con = _build()
    con.execute("alter table normalized.cost_lines add column note varchar")
    third = _publish(con, tmp_path, "20261103T000000000000Z-cccccc", second.folder)
    assert third.shared == {}


def test_a_filesystem_without_hard_links_gets_copies(tmp_path: Path, monkeypatch) -> None:
    first = _publish(_build(), tmp_path, "20261101T000000000000Z-aaaaaa", None)

    def no_links(source: Path, target: Path) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(sharing.os, "link", no_links)
    second = _publish(_build(), tmp_path, "20261102T000000000000Z-bbbbbb", first.folder)
    assert second.shared == {}
    assert not any(path.name.startswith(".") for path in second.folder.rglob("*"))
    views = open_database(tmp_path / DATABASE_NAME)
    assert views.execute("select count(*) from normalized.cost_lines").fetchone()[0] == 12
    views.close()


def test_files_written_by_the_build_are_replaced_by_links(tmp_path: Path) -> None:
    first = _publish(_build(), tmp_path, "20261101T000000000000Z-aaaaaa", None)
    con = _build()
    # as an engine writes a `parquet` model: the files exist before publish moves them in
    written = tmp_path / "built" / "cost_lines"
    shutil.copytree(first.folder / "normalized" / "cost_lines", written)
    for path in written.rglob("*.parquet"):
        path.write_bytes(path.read_bytes())  # new inodes, same bytes
    contents = [
        item if item.name != "normalized.cost_lines" else _with_files(item, written)
        for item in table_contents(con)
    ]
    second = publish(con, tmp_path, "20261102T000000000000Z-bbbbbb", contents,
                     share_from=first.folder)  # fmt: skip
    assert second.shared["normalized.cost_lines"] == ["2026-08", "2026-09", "2026-10"]
    for period in ("2026-08", "2026-09", "2026-10"):
        assert _same_file(_files(first.folder, period)[0], _files(second.folder, period)[0])


def _with_files(item, files: Path):
    return replace(item, files=files)
