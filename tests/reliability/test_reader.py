"""Readers of runcost.duckdb see one whole snapshot, whatever a publish does meanwhile."""

from __future__ import annotations

import threading
from pathlib import Path

import duckdb
from worlds import change_telemetry, make_world, run_in_process

from pipeline.config.loader import load_config
from pipeline.warehouse.snapshots import DATABASE_NAME, open_database

TOTALS = (
    "select attempt_id, effective_cost from marts.attempt_costs "
    "where allocation_model = 'fully_loaded' order by attempt_id"
)
BILL = "select sum(billed_cost) from normalized.cost_lines"
SNAPSHOT = "select run_id from runcost_snapshot"


def observe(con: duckdb.DuckDBPyConnection) -> tuple:
    return (con.execute(SNAPSHOT).fetchone()[0], con.execute(TOTALS).fetchall())


def test_a_reader_keeps_its_snapshot_across_publishes(tmp_path: Path, template: Path) -> None:
    config = make_world(tmp_path / "world", template)
    database = load_config(config).warehouse / DATABASE_NAME
    assert run_in_process(config) == "published"
    reader = open_database(database)
    before = observe(reader)
    bill = reader.execute(BILL).fetchone()[0]

    change_telemetry(config)
    assert run_in_process(config) == "published"
    change_telemetry(config, changed=False)
    assert run_in_process(config) == "published"

    assert observe(reader) == before, "the open reader still sees its own snapshot, whole"
    assert reader.execute(BILL).fetchone()[0] == bill
    reader.close()
    fresh = open_database(database)
    after = observe(fresh)
    fresh.close()
    assert after[0] != before[0] and after[1] == before[1], "same inputs, a newer snapshot"


def test_readers_during_publishes_see_old_or_new_whole(tmp_path: Path, template: Path) -> None:
    config = make_world(tmp_path / "world", template)
    database = load_config(config).warehouse / DATABASE_NAME
    assert run_in_process(config) == "published"
    seen: list[tuple] = []
    failures: list[BaseException] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            try:
                con = open_database(database)
                seen.append(observe(con))
                con.close()
            except BaseException as error:
                failures.append(error)
                return

    thread = threading.Thread(target=read)
    thread.start()
    try:
        for changed in (True, False, True):
            change_telemetry(config, changed=changed)
            assert run_in_process(config) == "published"
    finally:
        stop.set()
        thread.join(timeout=60)
    assert not failures, failures
    by_snapshot: dict[str, set] = {}
    for run_id, totals in seen:
        by_snapshot.setdefault(run_id, set()).add(tuple(totals))
    assert len(seen) >= 3
    assert all(len(totals) == 1 for totals in by_snapshot.values()), "a snapshot never mixes"
    assert len({totals for group in by_snapshot.values() for totals in group}) <= 2
