"""A runcost.duckdb names its snapshot folder; readers may read only there, inside its warehouse."""

from __future__ import annotations

import logging
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from pipeline.cli.app import main
from pipeline.run.recovery import recover_dead_runs
from pipeline.warehouse import publish as publish_module
from pipeline.warehouse.access import open_snapshot
from pipeline.warehouse.publish import publish
from pipeline.warehouse.snapshots import (
    DATABASE_NAME,
    OutsideSnapshot,
    database_snapshot,
    snapshots_folder,
)

RUN_ID = "20261101T000000Z-aaaaaa"


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    """A warehouse with one published snapshot of one small table."""
    con = duckdb.connect()
    con.execute("create schema marts; create schema staging")
    con.execute("create table marts.totals as select 1 as n")
    for name in publish_module.TELEMETRY_VIEWS:
        con.execute(f"create view staging.{name} as select 1 as id where false")
    publish(con, tmp_path / "warehouse", RUN_ID)
    con.close()
    return tmp_path / "warehouse"


def record_folder(database: Path, folder: str) -> None:
    """Edit the snapshot folder a runcost.duckdb records, as a crafted file would hold it."""
    con = duckdb.connect(str(database))
    con.execute("update main.runcost_snapshot set snapshot_folder = ?", [folder])
    con.close()


@pytest.mark.parametrize("folder", ["../../../..", "snapshots/../..", "/", "snapshots"])
def test_a_recorded_folder_outside_the_snapshots_is_refused(warehouse: Path, folder: str) -> None:
    database = warehouse / DATABASE_NAME
    record_folder(database, folder)
    message = (
        f"{database}: its recorded snapshot folder {folder} is outside "
        f"{warehouse.resolve() / 'snapshots'}; a runcost.duckdb reads only its warehouse's "
        "snapshots. Run `runcost run`, which rewrites it from the snapshot CURRENT names"
    )
    with pytest.raises(OutsideSnapshot) as caught:
        open_snapshot(database)
    assert str(caught.value) == message
    result = CliRunner().invoke(main, ["sql", "--database", str(database), "select 1"])
    assert result.exit_code == 1
    assert result.output.replace("\n", "") == f"error: {message}"
    # nor does the run's repair trust it: it serves nothing, and is rewritten from CURRENT
    assert database_snapshot(warehouse) is None


def test_the_run_rewrites_a_database_naming_a_folder_outside(
    warehouse: Path, caplog: pytest.LogCaptureFixture
) -> None:
    database = warehouse / DATABASE_NAME
    record_folder(database, "../../../..")
    with caplog.at_level(logging.WARNING, logger="runcost"):
        recover_dead_runs(warehouse)
    assert database_snapshot(warehouse) == (RUN_ID, str(warehouse / "snapshots" / RUN_ID))
    assert f"{database} was missing, empty or unreadable" in caplog.text
    con = open_snapshot(database)
    assert con.execute("select n from marts.totals").fetchall() == [(1,)]
    con.close()


def test_the_own_snapshots_and_another_warehouses_for_a_database_outside_one(
    warehouse: Path, tmp_path: Path
) -> None:
    database = warehouse / DATABASE_NAME
    snapshots = (warehouse / "snapshots").resolve()
    assert snapshots_folder(database, f"snapshots/{RUN_ID}") == snapshots
    # runcost sql --as-of writes a database outside the warehouse, naming the folder as it is
    scratch = tmp_path / "scratch" / DATABASE_NAME
    scratch.parent.mkdir()
    assert snapshots_folder(scratch, str(snapshots / RUN_ID)) == snapshots
    (warehouse / "CURRENT").unlink()  # not a warehouse's snapshots folder any more
    with pytest.raises(OutsideSnapshot):
        snapshots_folder(scratch, str(snapshots / RUN_ID))
