"""What the run manifest records beyond timings: inputs with checksums, hashes, periods, totals."""

from __future__ import annotations

import hashlib
import json
import logging
from datetime import datetime
from pathlib import Path

import duckdb

from pipeline.config.loader import Config
from pipeline.dag.models import Model
from pipeline.warehouse.publish import TableContent
from pipeline.warehouse.raw_store import DELIVERY_FILE, Delivery, sha256_file
from pipeline.warehouse.snapshots import snapshot_record

log = logging.getLogger("runcost")

# Tables computed against the previous snapshot: they differ from it even when nothing else does,
# so they take no part in deciding that a run changed nothing.
HISTORY_TABLES = frozenset({"marts.cost_changes", "marts.estimate_errors"})


def delivery_record(delivery: Delivery) -> dict[str, object]:
    """A current delivery as the manifest lists it, with each file's sha256 from delivery.json."""
    record: dict[str, object] = {
        "provider": delivery.provider,
        "export": delivery.export,
        "billing_period": delivery.billing_period,
        "delivery_id": delivery.delivery_id,
        "new": delivery.new,
        "folder": str(delivery.folder),
    }
    stored = read_json(delivery.folder / DELIVERY_FILE)
    record["delivered_at"] = stored.get("delivered_at")
    record["files"] = [
        {"name": item.get("name"), "size": item.get("size"), "sha256": item.get("sha256")}
        for item in stored.get("files", [])
        if isinstance(item, dict)
    ]
    return record


def config_hash(config: Config) -> str:
    """sha256 over the whole configuration as read (any change to runcost.toml changes it)."""
    text = json.dumps(config.raw, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def code_hash(models: list[Model]) -> str:
    """sha256 over every model's SQL: two runs with equal hashes ran the same models."""
    digest = hashlib.sha256()
    for model in sorted(models, key=lambda item: item.qualified):
        digest.update(f"{model.qualified}\n{model.sql}\n".encode())
    return digest.hexdigest()[:16]


def file_checksum(path: Path | None) -> dict[str, str] | None:
    """{path, sha256} of an input file such as the invoice file, or None without one."""
    if path is None or not path.is_file():
        return None
    return {"path": str(path), "sha256": sha256_file(path)}


def totals(con: duckdb.DuckDBPyConnection) -> list[dict[str, str]]:
    """Per (provider, billing_period, billing_currency): the four bases summed and the lines.

    Read from the bill of marts.reconciliation (the lines summed once per period and profile,
    then per account, in each basis), not from the lines again: 0.8 CPU s at 10M lines. Its rows
    repeat per allocation model; each account's bill is counted once.
    """
    sums = ", ".join(
        f"sum(bill_total) filter (where cost_basis = '{basis}')"
        for basis in ("billed_cost", "effective_cost", "list_cost", "net_cost")
    )
    rows = con.execute(
        f"select provider, billing_period, billing_currency, {sums}, "
        "sum(cost_lines) filter (where cost_basis = 'billed_cost') from (select distinct "
        "provider, billing_account_id, billing_period, billing_currency, cost_basis, cost_lines, "
        "bill_total from marts.reconciliation) group by all order by all"
    ).fetchall()
    keys = ("provider", "billing_period", "billing_currency", "billed_cost", "effective_cost")
    keys += ("list_cost", "net_cost", "cost_lines")
    return [{key: str(value) for key, value in zip(keys, row, strict=True)} for row in rows]


def period_statuses(con: duckdb.DuckDBPyConnection) -> list[dict[str, str]]:
    """Each billing period's status as this run saw it."""
    rows = con.execute(
        "select provider, billing_account_id, billing_period, period_status, "
        "array_to_string(source_deliveries, ',') from normalized.billing_periods order by all"
    ).fetchall()
    keys = ("provider", "billing_account_id", "billing_period", "period_status", "deliveries")
    return [{key: str(value) for key, value in zip(keys, row, strict=True)} for row in rows]


def estimate_summary(con: duckdb.DuckDBPyConnection) -> dict[str, object]:
    """How much of this run's cost is estimated, and how far replaced estimates were off."""
    hours, estimated, attempts = con.execute(
        "select coalesce(sum(estimated_hours), 0), coalesce(sum(estimated_cost), 0), "
        "count(distinct attempt_id) from marts.cost_estimates"
    ).fetchone()
    windows, error = con.execute(
        "select count(*), coalesce(sum(estimate_error), 0) from marts.estimate_errors"
    ).fetchone()
    return {
        "estimated_attempts": attempts,
        "estimated_hours": round(float(hours), 6),
        "estimated_cost": str(estimated),
        "replaced_windows": windows,
        "estimate_error": str(error),
    }


def served_history(
    folder: Path, hashes: dict[str, str], contents: list[TableContent]
) -> tuple[dict[str, str], list[TableContent]]:
    """An unchanged run serves the snapshot as it is: its history tables, not this run's."""
    record = snapshot_record(folder) or {}
    served = record.get("tables", {})
    hashes = dict(hashes)
    kept = []
    for table in contents:
        entry = served.get(table.name)
        if table.name in HISTORY_TABLES and entry is not None:
            hashes[table.name] = entry["content_hash"]
            table = TableContent(
                table.name, table.source, table.columns, entry["rows"], entry["content_hash"]
            )
        kept.append(table)
    return hashes, kept


def note_clock_skew(con: duckdb.DuckDBPyConnection, now: datetime) -> None:
    """Warn when telemetry runs ahead of the run clock: those hours are not estimated."""
    ahead, latest = con.execute(
        "select count(*), max(coalesce(resources.ended_at, attempts.ended_at)) "
        "from staging.attempt_resources as resources "
        "inner join staging.attempts as attempts on resources.attempt_id = attempts.attempt_id "
        "where coalesce(resources.ended_at, attempts.ended_at) > ?",
        [now],
    ).fetchone()
    if ahead:
        log.warning(
            "telemetry runs ahead of the clock: %d resource interval(s) end after now (%s), the "
            "latest at %s; estimates stop at now. Check the telemetry host's clock",
            ahead,
            now.isoformat(timespec="seconds"),
            latest.isoformat(timespec="seconds"),
            extra={"stage": "build"},
        )


def read_json(path: Path) -> dict:
    """A JSON object from a file; {} when it is missing, unreadable or not an object."""
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return body if isinstance(body, dict) else {}
