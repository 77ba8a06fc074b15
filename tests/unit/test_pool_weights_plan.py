"""allocation.pool_driver_weights reads the month's lines only for cost_weighted pools."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from pipeline.dag.models import discover

LINES = 200_000
ATTEMPTS = 20_000


def _world(con: duckdb.DuckDBPyConnection, driver: str, folder: Path) -> None:
    """LINES hourly lines and their slices in Parquet, as a run reads them, ATTEMPTS attempts and
    one pool over 24 windows: enough attempts that DuckDB built the old join's hash table on the
    lines, as it did at 10M."""
    for schema in ("normalized", "attribution", "allocation", "staging"):
        con.execute(f"create schema {schema}")
    parquet = {
        "normalized.cost_line_facts": (
            "select i as line_id, "
            "timestamptz '2026-10-01' + to_hours(i % 24) as charge_period_start, "
            "timestamptz '2026-10-01' + to_hours(i % 24 + 1) as charge_period_end, "
            "timestamptz '2026-10-01' as billing_period_start, "
            f"timestamptz '2026-11-01' as billing_period_end from range({LINES}) as t(i)"
        ),
        "attribution.line_attributions": (
            f"select i as line_id, 'a' || (i % {ATTEMPTS}) as attempt_id, "
            "1.5::decimal(38, 10) as billed_cost, 1.5::decimal(38, 10) as effective_cost, "
            "2.0::decimal(38, 10) as list_cost, 1.4::decimal(38, 10) as net_cost "
            f"from range({LINES}) as t(i) where i % 7 <> 0"
        ),
    }
    for view, rows in parquet.items():
        path = folder / f"{view}.parquet"
        con.execute(f"copy ({rows}) to '{path}' (format parquet)")
        con.execute(f"create view {view} as select * from read_parquet('{path}')")
    con.execute(
        "create table staging.attempts as select 'a' || i as attempt_id, 'e' as experiment_id, "
        "timestamptz '2026-10-01' + to_hours(i % 20) as started_at, "
        "timestamptz '2026-10-01' + to_hours(i % 20 + 4) as ended_at, 8 as gpu_count, "
        "null::timestamptz as submitted_at from range($1) as t(i)",
        [ATTEMPTS],
    )
    con.execute(
        "create table staging.attempt_resources as select attempt_id, started_at, ended_at, "
        "4.0 as vcpu_count, 16.0 as memory_gib from staging.attempts"
    )
    con.execute(
        "create table allocation.pool_eligible_attempts as "
        "select attempt_id, 1 as pool_order from staging.attempts"
    )
    con.execute(
        "create table allocation.pooled_lines as select 1 as pool_order, 'eks' as pool_name, "
        "$1 as driver, 'effective_cost' as basis, "
        "timestamptz '2026-10-01' + to_hours(h) as window_start, "
        "timestamptz '2026-10-01' + to_hours(h + 1) as window_end from range(24) as t(h)",
        [driver],
    )


def _lines_read(driver: str, tmp_path: Path) -> tuple[int, int]:
    """(rows the model read from the lines, its rows) in the world with one pool of ``driver``."""
    (model,) = [m for m in discover() if m.qualified == "allocation.pool_driver_weights"]
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    _world(con, driver, tmp_path)
    profile = tmp_path / "profile.json"
    con.execute("set enable_profiling = 'json'")
    con.execute(f"set profiling_output = '{profile}'")
    con.execute(f"create table weights as {model.sql}")
    con.execute("pragma disable_profiling")
    scanned = 0
    stack = json.loads(profile.read_text())["operator"]
    while stack:
        node = stack.pop()
        if "cost_line_facts.parquet" in json.dumps(node.get("extra_info", {})):
            scanned += int(node.get("intermediate_rows", 0))
        stack.extend(node.get("children", []))
    return scanned, con.execute("select count(*) from weights").fetchone()[0]


def test_without_a_cost_weighted_pool_the_lines_are_not_read_into_a_join(tmp_path: Path) -> None:
    # joined to the slices directly, DuckDB built a hash table of every line of the month
    scanned, rows = _lines_read("gpu_seconds", tmp_path)
    assert rows > 0
    assert scanned < LINES / 10


def test_a_cost_weighted_pool_reads_the_lines_it_weighs(tmp_path: Path) -> None:
    # the count above sees the lines' scan: here every slice's line is read
    scanned, rows = _lines_read("cost_weighted", tmp_path)
    assert rows > 0
    assert scanned > LINES / 2
