"""The warehouse's state from its files: current snapshot, a run now, the last run, periods."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb

from pipeline.common.duck import connect, literal
from pipeline.warehouse.integrity import DamagedFile, DamagedRecord, damaged_files
from pipeline.warehouse.lock import Holder, running_holder
from pipeline.warehouse.queries.runs import LastRun, last_run
from pipeline.warehouse.snapshots import (
    DATABASE_NAME,
    current_snapshot,
    database_snapshot,
    reader_settings,
    snapshot_record,
)

_PERIODS = """
select
    billing_period,
    provider,
    billing_account_id,
    billing_currency,
    bool_and(invoiced),
    sum(bill_total),
    sum(cost_lines),
    {status}
from marts.reconciliation
where cost_basis = 'billed_cost' and allocation_model = 'marginal'
group by all
order by all
"""


@dataclass(frozen=True)
class CurrentSnapshot:
    """The snapshot CURRENT names, with what its snapshot.json records."""

    run_id: str
    snapshot: str
    published_at: str | None
    content_hash: str | None
    tables: int


@dataclass(frozen=True)
class PeriodStatus:
    """One billing period of one account and currency: final or not, and its billed total."""

    billing_period: str
    provider: str
    billing_account_id: str
    billing_currency: str
    final: bool
    period_status: str
    billed_cost: Decimal
    cost_lines: int


@dataclass(frozen=True)
class WarehouseStatus:
    """What `runcost status` reports, read from the warehouse's files alone."""

    warehouse: Path
    current: CurrentSnapshot | None
    database_run_id: str | None
    running: Holder | None
    last_run: LastRun | None
    periods: list[PeriodStatus]
    # files of the current snapshot that are missing or damaged (the next run rebuilds them)
    damaged_files: list[DamagedFile] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """Plain values for JSON: paths and decimals as strings."""
        found: dict[str, Any] = {
            "warehouse": str(self.warehouse),
            "current": asdict(self.current) if self.current else None,
        }
        if self.current is not None:
            found["database_run_id"] = self.database_run_id
        found["running"] = asdict(self.running) if self.running else None
        found["last_run"] = self.last_run.to_json() if self.last_run else None
        found["periods"] = [
            asdict(period) | {"billed_cost": str(period.billed_cost)} for period in self.periods
        ]
        if self.current is not None:
            found["damaged_files"] = [asdict(item) for item in self.damaged_files]
        return found


def warehouse_status(warehouse: Path) -> WarehouseStatus:
    """The warehouse's state: snapshot, the run holding the lock, the last run, periods."""
    pointer = current_snapshot(warehouse)
    current, served, damaged = None, None, []
    if pointer is not None:
        damaged = damaged_files(Path(pointer["snapshot"]))
        try:
            record = snapshot_record(Path(pointer["snapshot"])) or {}
        except DamagedRecord:  # listed in damaged
            record = {}
        current = CurrentSnapshot(
            run_id=pointer["run_id"],
            snapshot=pointer["snapshot"],
            published_at=record.get("published_at"),
            content_hash=record.get("content_hash"),
            tables=len(record.get("tables", {})),
        )
        database = database_snapshot(warehouse)
        served = database[0] if database else None
    runs = sorted(warehouse.glob("runs/*/manifest.json"))
    return WarehouseStatus(
        warehouse=warehouse,
        current=current,
        database_run_id=served,
        running=running_holder(warehouse) if warehouse.is_dir() else None,
        last_run=last_run(runs[-1]) if runs else None,
        periods=period_statuses(warehouse / DATABASE_NAME) if current is not None else [],
        damaged_files=damaged,
    )


def period_statuses(database: Path) -> list[PeriodStatus]:
    """Each billing period's status and billed total in a published database ([] if none)."""
    if not database.is_file():
        return []
    # attach: see snapshots.database_snapshot for why not connect(path)
    con = connect(settings=reader_settings(database))
    try:
        con.execute(f"attach {literal(database)} as served (read_only)")
        con.execute("use served")
        try:
            rows = con.execute(_PERIODS.format(status="min(period_status)")).fetchall()
        except duckdb.Error:  # a snapshot published before billing period statuses
            rows = con.execute(_PERIODS.format(status="null")).fetchall()
    except duckdb.Error:
        return []
    finally:
        con.close()
    return [
        PeriodStatus(
            billing_period=period,
            provider=provider,
            billing_account_id=account,
            billing_currency=currency,
            final=bool(invoiced),
            period_status=status or ("final" if invoiced else "open"),
            billed_cost=total,
            cost_lines=int(lines),
        )
        for period, provider, account, currency, invoiced, total, lines, status in rows
    ]
