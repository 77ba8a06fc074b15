"""Publish: hive-partitioned Parquet, views equal to the tables, content hashes, prune, recover."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import duckdb
import pytest
from switch_failures import failing_switch

from pipeline.run.as_of import write_snapshot_database
from pipeline.run.recovery import recover_dead_runs
from pipeline.warehouse import publish as publish_module
from pipeline.warehouse.publish import (
    content_hash,
    content_hashes,
    publish,
    table_contents,
    view_contents,
)
from pipeline.warehouse.snapshots import (
    DATABASE_NAME,
    current_snapshot,
    database_snapshot,
    open_database,
    prune,
    recover,
    snapshot_record,
    unchanged_snapshot,
)


@pytest.fixture
def build() -> duckdb.DuckDBPyConnection:
    """A small build: cost lines over two periods, an empty partitioned table, a HUGEINT column."""
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    for schema in ("staging", "normalized", "marts", "attribution"):
        con.execute(f"create schema {schema}")
    con.execute(
        "create table normalized.cost_lines as select range as line_id, "
        "case when range < 3 then '2026-09' else '2026-10' end as billing_period, "
        "(range * 1.25)::decimal(38, 10) as billed_cost, "
        "map(['team'], ['ml']) as tags, timestamptz '2026-10-01 00:00:00+00' as charge_start "
        "from range(7)"
    )
    con.execute(
        "create table marts.reconciliation as select '2026-10' as billing_period, "
        "true as invoiced where false"
    )
    con.execute(
        "create table attribution.resource_time_overlaps as "
        "select 1 as line_id, 10000000000000000000000000000000000001::hugeint as overlap_us"
    )
    for name in publish_module.TELEMETRY_VIEWS:
        con.execute(f"create view staging.{name} as select 1 as id where false")
    return con


def test_partitioned_layout_and_views_equal_the_tables(tmp_path: Path, build) -> None:
    snapshot = publish(build, tmp_path, "20261101T000000Z-aaaaaa")
    folder = snapshot.folder
    assert sorted(
        str(path.relative_to(folder / "normalized"))
        for path in (folder / "normalized").rglob("*.parquet")
    ) == [
        "cost_lines/billing_period=2026-09/part_0.parquet",
        "cost_lines/billing_period=2026-10/part_0.parquet",
    ]
    assert (folder / "marts" / "reconciliation.parquet").is_file(), "empty: one plain file"
    record = snapshot_record(folder)
    assert record["tables"]["normalized.cost_lines"]["partition_by"] == "billing_period"
    assert record["tables"]["marts.reconciliation"]["partition_by"] is None
    assert record["tables"]["normalized.cost_lines"]["rows"] == 7

    views = open_database(tmp_path / DATABASE_NAME)
    for name, item in record["tables"].items():
        columns, rows, digest = content_hash(views, name)
        assert [list(column) for column in columns] == item["columns"], name
        assert (rows, digest) == (item["rows"], item["content_hash"]), name
    assert views.execute(
        "select sum(billed_cost) from normalized.cost_lines where billing_period = '2026-09'"
    ).fetchone()[0] == pytest.approx(3.75)
    assert (
        views.execute("select overlap_us from attribution.resource_time_overlaps").fetchone()[0]
        == 10**37 + 1
    ), "HUGEINT survives Parquet, as DECIMAL(38, 0)"
    assert views.execute("select run_id from runcost_snapshot").fetchone()[0] == snapshot.run_id
    views.close()
    assert current_snapshot(tmp_path) == {"run_id": snapshot.run_id, "snapshot": str(folder)}


def test_content_hash_ignores_order_but_not_duplicates() -> None:
    con = duckdb.connect()
    con.execute("create table a as select * from (values (1, 'x'), (2, 'y')) v(n, s)")
    con.execute("create table b as select * from (values (2, 'y'), (1, 'x')) v(n, s)")
    con.execute(
        "create table c as select * from (values (1, 'x'), (1, 'x'), (2, 'y'), (2, 'y')) v(n, s)"
    )
    con.execute("create table d as select * from (values (1, 'x'), (2, 'z')) v(n, s)")
    hashes = {name: content_hash(con, name)[2] for name in "abcd"}
    assert hashes["a"] == hashes["b"]
    assert len({hashes["a"], hashes["c"], hashes["d"]}) == 3


def test_unchanged_snapshot_needs_equal_content_and_an_intact_database(
    tmp_path: Path, build
) -> None:
    contents = table_contents(build)
    hashes = {table.name: table.content_hash for table in contents}
    assert unchanged_snapshot(tmp_path, hashes) is None, "nothing published yet"
    publish(build, tmp_path, "20261101T000000Z-aaaaaa", contents)
    assert unchanged_snapshot(tmp_path, hashes) == "20261101T000000Z-aaaaaa"
    assert unchanged_snapshot(tmp_path, {**hashes, "normalized.cost_lines": "x"}) is None
    (tmp_path / DATABASE_NAME).unlink()  # a reader could not open it: publish again
    assert unchanged_snapshot(tmp_path, hashes) is None


VIEW_SQL = (
    "select billing_period, sum(billed_cost) as billed_cost "
    "from normalized.cost_lines group by billing_period"
)


def test_a_published_view_runs_over_the_published_tables(tmp_path: Path, build) -> None:
    build.execute(f"create view marts.period_totals as {VIEW_SQL}")
    views = view_contents(build, [("marts.period_totals", VIEW_SQL)])
    contents = table_contents(build)
    snapshot = publish(build, tmp_path, "20261101T000000Z-aaaaaa", contents, views=views)
    assert not (snapshot.folder / "marts" / "period_totals.parquet").exists(), "never written"
    record = snapshot_record(snapshot.folder)
    assert record["views"]["marts.period_totals"]["sql"] == VIEW_SQL
    assert record["views"]["marts.period_totals"]["columns"] == [
        ["billing_period", "VARCHAR"],
        ["billed_cost", "DECIMAL(38,10)"],
    ]
    expected = build.execute(f"{VIEW_SQL} order by 1").fetchall()
    published = open_database(tmp_path / DATABASE_NAME)
    assert published.execute("select * from marts.period_totals order by 1").fetchall() == expected
    published.close()
    # a snapshot opened later (runcost diff, --as-of) gets the view back from snapshot.json
    write_snapshot_database(snapshot.folder, tmp_path / "as_of.duckdb")
    again = open_database(tmp_path / "as_of.duckdb")
    assert again.execute("select * from marts.period_totals order by 1").fetchall() == expected
    again.close()
    # the view's definition is content: changing it makes the snapshot stale
    hashes = content_hashes(contents, views)
    assert unchanged_snapshot(tmp_path, hashes) == snapshot.run_id
    changed = view_contents(build, [("marts.period_totals", VIEW_SQL + " having count(*) > 0")])
    assert (
        unchanged_snapshot(tmp_path, {**hashes, "marts.period_totals": changed[0].content_hash})
        is None
    )


def test_prune_keeps_the_current_and_the_newest(tmp_path: Path) -> None:
    snapshots = tmp_path / "snapshots"
    for name in ("r1", "r2", "r3", "r4", "r5"):
        (snapshots / name).mkdir(parents=True)
    prune(snapshots, keep=3, current="r2")
    assert sorted(path.name for path in snapshots.iterdir()) == ["r2", "r4", "r5"]


def test_recover_removes_leftovers_and_realigns_current(tmp_path: Path, build) -> None:
    publish(build, tmp_path, "20261101T000000Z-aaaaaa")
    second = publish(build, tmp_path, "20261102T000000Z-bbbbbb")
    # as if the second run died between the two renames: CURRENT still names the first
    (tmp_path / "CURRENT").write_text(
        json.dumps({"run_id": "20261101T000000Z-aaaaaa", "snapshot": "x"}), encoding="utf-8"
    )
    (tmp_path / "snapshots" / ".20261103T000000Z-cccccc.partial" / "marts").mkdir(parents=True)
    (tmp_path / f".{DATABASE_NAME}.20261103T000000Z-cccccc.tmp").write_text("", encoding="utf-8")
    (tmp_path / ".CURRENT.20261103T000000Z-cccccc.tmp").write_text("", encoding="utf-8")
    removed = recover(tmp_path)
    assert sorted(path.name for path in removed) == [
        ".20261103T000000Z-cccccc.partial",
        ".CURRENT.20261103T000000Z-cccccc.tmp",
        f".{DATABASE_NAME}.20261103T000000Z-cccccc.tmp",
    ]
    assert current_snapshot(tmp_path) == {"run_id": second.run_id, "snapshot": str(second.folder)}


def test_a_failed_write_leaves_nothing_behind(tmp_path: Path, build, monkeypatch) -> None:
    first = publish(build, tmp_path, "20261101T000000Z-aaaaaa")

    def broken(*args: object) -> None:
        raise duckdb.IOException("Could not write file: Permission denied")

    monkeypatch.setattr(publish_module, "_copy_table", broken)
    with pytest.raises(publish_module.PublishError) as caught:
        publish(build, tmp_path, "20261102T000000Z-bbbbbb")
    staging = tmp_path / "snapshots" / ".20261102T000000Z-bbbbbb.partial"
    assert str(caught.value) == (
        f"could not write the snapshot to {staging}: Could not write file: "
        "Permission denied; the current snapshot 20261101T000000Z-aaaaaa stays current"
    )
    assert sorted(path.name for path in (tmp_path / "snapshots").iterdir()) == [first.run_id]
    assert current_snapshot(tmp_path)["run_id"] == first.run_id


@pytest.mark.parametrize(
    ("periods", "files"),
    [
        (["2026-09", "2026-10"], 2),  # one filtered copy per period
        ([f"2026-0{month}" for month in range(1, 7)], 6),  # many periods: PARTITION_BY
        (["2026 10", "2026-11"], 2),  # a value that is no plain folder name: PARTITION_BY
    ],
)
def test_both_partitioned_writes_publish_the_same_layout_and_rows(
    tmp_path: Path, periods: list[str], files: int
) -> None:
    con = duckdb.connect()
    con.execute("create schema normalized")
    con.execute(
        "create table normalized.cost_lines as select range as line_id, "
        "(?)[1 + range % len(?)] as billing_period, (range * 0.5)::decimal(38, 10) as billed_cost "
        "from range(50)",
        [periods, periods],
    )
    for name in publish_module.TELEMETRY_VIEWS:
        con.execute(f"create schema if not exists staging; create view staging.{name} as select 1")
    snapshot = publish(con, tmp_path, "20261101T000000Z-aaaaaa")
    written = sorted((snapshot.folder / "normalized" / "cost_lines").rglob("*.parquet"))
    assert len(written) == files
    assert all(path.name == "part_0.parquet" for path in written)
    published = open_database(tmp_path / DATABASE_NAME)
    query = "select * from normalized.cost_lines order by line_id"
    assert published.execute(query).fetchall() == con.execute(query).fetchall()
    published.close()


FIRST, SECOND = "20261101T000000Z-aaaaaa", "20261102T000000Z-bbbbbb"


def named(warehouse: Path, run_id: str) -> dict[str, str | None]:
    """Which snapshot runcost.duckdb, CURRENT and latest name, and whether ``run_id``'s record
    says its snapshot is current."""
    served = database_snapshot(warehouse)
    record = json.loads((warehouse / "runs" / run_id / "manifest.json").read_text())
    return {
        "runcost.duckdb": served[0] if served else None,
        "CURRENT": json.loads((warehouse / "CURRENT").read_text())["run_id"],
        "latest": os.readlink(warehouse / "latest").removeprefix("snapshots/"),
        "record": run_id if record["status"] == "published" else None,
    }


def agree(warehouse: Path, run_id: str, current: str) -> None:
    """The switch's invariant: all name ``current``; the run's record says published iff it is
    the run's own snapshot."""
    assert named(warehouse, run_id) == {
        "runcost.duckdb": current,
        "CURRENT": current,
        "latest": current,
        "record": run_id if current == run_id else None,
    }


def publish_run(build, warehouse: Path, run_id: str) -> None:
    """publish() as a run calls it: the run's record says running and switches to published."""
    run_dir = warehouse / "runs" / run_id
    run_dir.mkdir(parents=True)
    (run_dir / "manifest.json").write_text(json.dumps({"run_id": run_id, "status": "running"}))
    published = json.dumps({"run_id": run_id, "status": "published"})
    publish(build, warehouse, run_id, records=[(run_dir / "manifest.json", published)])


SWITCHED = [DATABASE_NAME, "CURRENT", "latest", "manifest.json"]


@pytest.mark.parametrize("failing", [1, 2, 3, 4], ids=SWITCHED)
def test_a_failed_rename_in_the_switch_is_undone(
    tmp_path: Path, build, monkeypatch: pytest.MonkeyPatch, failing: int
) -> None:
    publish_run(build, tmp_path, FIRST)
    tried = failing_switch(monkeypatch, lambda call: call == failing)
    with pytest.raises(publish_module.PublishError) as caught:
        publish_run(build, tmp_path, SECOND)
    assert tried[:failing] == SWITCHED[:failing], "runcost.duckdb first: the commit point"
    source, target = (tmp_path / f".{SWITCHED[failing - 1]}.{SECOND}.tmp", SWITCHED[failing - 1])
    if target == "manifest.json":
        source = tmp_path / "runs" / SECOND / f".manifest.json.{SECOND}.tmp"
        target = str(tmp_path / "runs" / SECOND / "manifest.json")
    else:
        target = str(tmp_path / target)
    assert str(caught.value) == (
        f"could not make snapshot {SECOND} current: [Errno 13] Permission denied: '{source}' -> "
        f"'{target}'; the switch was undone and the current snapshot {FIRST} stays current. "
        f"Check the permissions of {tmp_path} and the disk holding it, then run again"
    )
    agree(tmp_path, SECOND, FIRST)
    assert sorted(path.name for path in (tmp_path / "snapshots").iterdir()) == [FIRST]
    assert not [path.name for path in tmp_path.rglob(".*")], "temporary files left"

    monkeypatch.undo()
    shutil.rmtree(tmp_path / "runs" / SECOND)
    publish_run(build, tmp_path, SECOND)  # the next try switches whole
    agree(tmp_path, SECOND, SECOND)


@pytest.mark.parametrize("failing", [2, 3, 4], ids=SWITCHED[1:])
def test_a_switch_that_cannot_be_undone_is_repaired_by_the_next_run(
    tmp_path: Path, build, monkeypatch: pytest.MonkeyPatch, failing: int
) -> None:
    publish_run(build, tmp_path, FIRST)
    failing_switch(monkeypatch, lambda call: call >= failing)
    with pytest.raises(publish_module.PublishError) as caught:
        publish_run(build, tmp_path, SECOND)
    assert "; nor undo the switch: [Errno 13] Permission denied: " in str(caught.value)
    assert str(caught.value).endswith(
        f". {DATABASE_NAME}, CURRENT and latest may name different snapshots until the next "
        f"run, which repairs them: check the permissions of {tmp_path} and the disk holding "
        "it, then run again"
    )
    monkeypatch.undo()
    # the run records its failure; the next run, holding the lock, repairs before it starts
    run_dir = tmp_path / "runs" / SECOND
    (run_dir / "manifest.json").write_text(json.dumps({"run_id": SECOND, "status": "failed"}))
    recover_dead_runs(tmp_path)
    agree(tmp_path, SECOND, SECOND)
    assert json.loads((run_dir / "manifest.json").read_text())["recovered"] is True
    assert not [path.name for path in tmp_path.rglob(".*")]
