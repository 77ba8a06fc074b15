"""The run's view of time: its clock, its deliveries and the previous snapshot, as raw.* tables."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from pipeline.common.money import MONEY_SQL
from pipeline.warehouse.integrity import DamagedRecord, damaged_files
from pipeline.warehouse.raw_store import DELIVERY_FILE, Delivery
from pipeline.warehouse.snapshots import (
    current_snapshot,
    kept_snapshots,
    snapshot_record,
    sql_path,
)

log = logging.getLogger("runcost")

TS = "timestamptz"
# raw.<name>: (published table it is read from, columns and types). A column the previous
# snapshot lacks (written by an older runcost) is NULL.
PREVIOUS: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "previous_attempt_costs": (
        "marts.attempt_costs",
        (
            ("attempt_id", "varchar"),
            ("experiment_id", "varchar"),
            ("allocation_model", "varchar"),
            ("billed_cost", MONEY_SQL),
            ("unbilled_estimate", MONEY_SQL),
            ("cost_status", "varchar"),
            ("billing_currency", "varchar"),
        ),
    ),
    "previous_experiment_costs": (
        "marts.experiment_costs",
        (
            ("experiment_id", "varchar"),
            ("allocation_model", "varchar"),
            ("billed_cost", MONEY_SQL),
            ("unbilled_estimate", MONEY_SQL),
            ("cost_status", "varchar"),
        ),
    ),
    "previous_cost_estimates": (
        "marts.cost_estimates",
        (
            ("attempt_id", "varchar"),
            ("resource_id", "varchar"),
            ("estimate_start", TS),
            ("estimate_end", TS),
            ("estimated_hours", MONEY_SQL),
            ("price_per_hour", MONEY_SQL),
            ("estimated_cost", MONEY_SQL),
            ("billing_currency", "varchar"),
        ),
    ),
    "previous_estimate_errors": (
        "marts.estimate_errors",
        (
            ("attempt_id", "varchar"),
            ("resource_id", "varchar"),
            ("window_start", TS),
            ("window_end", TS),
            ("estimated_hours", MONEY_SQL),
            ("estimated_cost", MONEY_SQL),
            ("billing_currency", "varchar"),
        ),
    ),
    "previous_billing_periods": (
        "normalized.billing_periods",
        (
            ("provider", "varchar"),
            ("billing_account_id", "varchar"),
            ("billing_period", "varchar"),
            ("period_status", "varchar"),
            ("source_deliveries", "varchar[]"),
            ("last_charge_period_end", TS),
            ("usage_until", TS),
        ),
    ),
    "previous_attempts": (
        "telemetry.attempts",
        (
            ("attempt_id", "varchar"),
            ("experiment_id", "varchar"),
            ("status", "varchar"),
            ("instance_type", "varchar"),
            ("region", "varchar"),
            ("capacity_type", "varchar"),
            ("gpu_count", "bigint"),
            ("started_at", TS),
            ("ended_at", TS),
        ),
    ),
    "previous_attempt_resources": (
        "telemetry.attempt_resources",
        (
            ("attempt_id", "varchar"),
            ("resource_id", "varchar"),
            ("started_at", TS),
            ("ended_at", TS),
            ("gpu_count", "bigint"),
        ),
    ),
}
SNAPSHOT_COLUMNS = (("run_id", "varchar"), ("published_at", TS), ("config_fingerprint", "varchar"))
DELIVERY_COLUMNS = (
    ("provider", "varchar"),
    ("export_name", "varchar"),
    ("billing_period", "varchar"),
    ("delivery_id", "varchar"),
    ("delivered_at", TS),
    ("ingested_at", TS),
    ("new", "boolean"),
)
INVOICE_COLUMNS = (
    ("invoice_id", "varchar"),
    ("amount", MONEY_SQL),
    ("currency", "varchar"),
    ("source_row", "integer"),
)


def create_history_inputs(con: duckdb.DuckDBPyConnection, now: datetime | None = None) -> None:
    """The raw.* tables the period models read, with no history: no previous snapshot."""
    con.execute("create schema if not exists raw")
    set_clock(con, now or datetime.now(UTC))
    _create(con, "billing_deliveries", DELIVERY_COLUMNS)
    _create(con, "invoices", INVOICE_COLUMNS)
    _create(con, "previous_snapshot", SNAPSHOT_COLUMNS)
    for name, (_table, columns) in PREVIOUS.items():
        _create(con, name, columns)


def set_clock(con: duckdb.DuckDBPyConnection, now: datetime) -> None:
    """raw.run_clock: the instant the run treats as now (estimates stop here, periods end)."""
    if now.tzinfo is None:
        raise ValueError("the run clock must be timezone-aware (UTC)")
    con.execute("create or replace table raw.run_clock (now timestamptz)")
    con.execute("insert into raw.run_clock values (?)", [now.astimezone(UTC)])


def register_deliveries(con: duckdb.DuckDBPyConnection, deliveries: Iterable[Delivery]) -> None:
    """raw.billing_deliveries: each current delivery with when it was delivered and ingested."""
    _create(con, "billing_deliveries", DELIVERY_COLUMNS)
    rows = []
    for item in deliveries:
        record = _delivery_json(item.folder)
        rows.append(
            (
                item.provider,
                item.export,
                item.billing_period,
                item.delivery_id,
                _instant(record.get("delivered_at")),
                _instant(record.get("ingested_at")),
                item.new,
            )
        )
    if rows:
        con.executemany("insert into raw.billing_deliveries values (?, ?, ?, ?, ?, ?, ?)", rows)


def load_previous(con: duckdb.DuckDBPyConnection, folder: Path | None) -> str | None:
    """Fill raw.previous_* from a published snapshot folder; return its run id (None: none)."""
    try:
        record = snapshot_record(folder) if folder is not None else None
    except DamagedRecord:  # the run warned at its start; it has no previous snapshot to read
        return None
    if folder is None or record is None:
        return None
    tables = record.get("tables", {})
    # a damaged table of the previous snapshot reads as empty (the run warned at its start)
    damaged = {item.table for item in damaged_files(folder)}
    for name, (published, columns) in PREVIOUS.items():
        entry = tables.get(published)
        _create(con, name, columns)
        if entry is None or not entry.get("rows") or published in damaged:
            continue
        present = {column for column, _kind in entry.get("columns", [])}
        select = ", ".join(
            f'cast("{column}" as {kind})' if column in present else f"cast(null as {kind})"
            for column, kind in columns
        )
        con.execute(f"insert into raw.{name} select {select} from {_reader(folder, entry)}")
    fingerprint = _config_fingerprint(folder, tables)
    _create(con, "previous_snapshot", SNAPSHOT_COLUMNS)
    con.execute(
        "insert into raw.previous_snapshot values (?, ?, ?)",
        [record["run_id"], _instant(record.get("published_at")), fingerprint],
    )
    return str(record["run_id"])


def previous_folder(warehouse: Path) -> Path | None:
    """The snapshot this run compares with: the current one's folder, or, when a file of it is
    missing or damaged, the newest whole snapshot kept from before it (None: there is none)."""
    current = current_snapshot(warehouse)
    if current is None:
        return None
    folder = Path(current["snapshot"])
    if not folder.is_dir():
        return None
    if not damaged_files(folder):
        return folder
    older = [path for path, _at in kept_snapshots(warehouse / "snapshots") if path < folder]
    return next((path for path in reversed(older) if not damaged_files(path)), None)


def _config_fingerprint(folder: Path, tables: dict) -> str | None:
    entry = tables.get("config.periods")
    if entry is None or not entry.get("rows"):
        return None
    con = duckdb.connect()
    try:
        row = con.execute(f"select config_fingerprint from {_reader(folder, entry)}").fetchone()
    except duckdb.Error:
        return None
    finally:
        con.close()
    return None if row is None else row[0]


def _reader(folder: Path, entry: dict) -> str:
    location = folder / entry["path"]
    if entry.get("partition_by"):
        column = entry["partition_by"]
        return (
            f"read_parquet('{sql_path(location)}/*/*.parquet', hive_partitioning = true, "
            f"hive_types = {{'{column}': 'varchar'}})"
        )
    return f"read_parquet('{sql_path(location)}')"


def _create(con: duckdb.DuckDBPyConnection, name: str, columns: Iterable[tuple[str, str]]) -> None:
    body = ", ".join(f'"{column}" {kind}' for column, kind in columns)
    con.execute(f"create or replace table raw.{name} ({body})")


def _delivery_json(folder: Path) -> dict:
    path = folder / DELIVERY_FILE
    if not path.is_file():
        return {}
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return body if isinstance(body, dict) else {}


def _instant(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    moment = datetime.fromisoformat(value)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
