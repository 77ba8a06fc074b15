"""Snapshots share the billing periods that did not change: hard links to the files of the
snapshot that wrote them, which outlive that snapshot's pruning and a copy of the warehouse."""

from __future__ import annotations

import os
import shutil
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from history_world import MONTHS, World, differences, first_night, night, published

from pipeline.run.nightly import RunResult
from pipeline.warehouse.queries.status import warehouse_status
from pipeline.warehouse.snapshots import (
    KEEP_SNAPSHOTS,
    current_snapshot,
    open_database,
    snapshot_record,
)

FACTS = Path("normalized") / "cost_line_facts"


def redeliver_newest(world: World, more: Decimal) -> RunResult:
    """The open month delivered again, its tax ``more`` USD higher; the night that follows."""
    newest = MONTHS[-1]
    world.surcharge[newest] = world.surcharge.get(newest, Decimal(0)) + more
    world.deliveries[newest] += 1
    world.deliver(newest)
    result = night(world, world.root.parent / "warehouse")
    assert result.status == "published"
    return result


def closed_months(database: Path) -> dict[str, list[str]]:
    """Every published table's rows of the closed months, sorted by their exact repr."""
    pointer = current_snapshot(database.parent)
    assert pointer is not None
    record = snapshot_record(Path(pointer["snapshot"]))
    assert record is not None
    con = open_database(database)
    try:
        return {
            name: sorted(
                map(
                    repr,
                    con.execute(
                        f"select * from {name} where billing_period in ?", [list(MONTHS[:-1])]
                    ).fetchall(),
                )
            )
            for name, entry in record["tables"].items()
            if "billing_period" in [column[0] for column in entry["columns"]]
        }
    finally:
        con.close()


def files(snapshot: Path, month: str) -> list[Path]:
    found = sorted((snapshot / FACTS / f"billing_period={month}").glob("*.parquet"))
    assert found, (snapshot, month)
    return found


@pytest.mark.parametrize("provider", ["aws", "gcp", "focus"])
def test_carried_periods_are_links_that_outlive_the_snapshot_that_wrote_them(
    tmp_path: Path, provider: str
) -> None:
    world, warehouse = first_night(tmp_path, provider, "snapshot_retention_days = 0")
    pointer = current_snapshot(warehouse)
    assert pointer is not None
    first = Path(pointer["snapshot"])

    second = redeliver_newest(world, Decimal("0.37"))
    record = second.snapshot
    for month in MONTHS[:-1]:  # the closed months: the first snapshot's files, linked
        for mine, theirs in zip(files(record, month), files(first, month), strict=True):
            assert os.path.samefile(mine, theirs)
    assert not any(
        os.path.samefile(mine, theirs)
        for mine, theirs in zip(files(record, MONTHS[-1]), files(first, MONTHS[-1]), strict=False)
    )

    # two more nights: the first snapshot is pruned (the current one and the newest others kept)
    for _ in range(KEEP_SNAPSHOTS - 1):
        latest = redeliver_newest(world, Decimal("0.01"))
    assert not first.exists()
    assert record.is_dir()
    status = warehouse_status(warehouse)
    assert status.damaged_files == []
    # the second snapshot reads whole without the folder its closed months were written in
    con = duckdb.connect()
    try:
        for month in MONTHS:
            rows = con.execute(
                "select count(*) from read_parquet(?)",
                [[str(path) for path in files(record, month)]],
            ).fetchone()
            assert rows is not None and rows[0] > 0
    finally:
        con.close()
    # the closed months read the same from the latest snapshot as from the second
    assert closed_months(latest.database) == closed_months(second.database)

    # a copy of the warehouse (links become files of their own) reads the same rows
    now = published(latest.database)
    moved = tmp_path / "moved"
    shutil.copytree(warehouse, moved, symlinks=True)
    shutil.rmtree(warehouse)
    assert differences(published(moved / latest.database.name), now) == {}
