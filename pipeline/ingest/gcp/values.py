"""Values of GCP billing export rows checked at ingest (gcp.files and gcp.tables), before raw/
changes, with value_rules' rules: money (every DECIMAL leaf, credits included), usage and export
times, the usage window, the invoice month, the currency and the billing account id.

Row identity: the export has no row id and is append-only; Cloud Billing writes one row per
SKU, hour and resource (project and labels in the standard export) per load, stamped with the
load's export_time. So a row is identified by all of its columns: two rows of one file (or of one
partition read from BigQuery) equal in every column, export_time included, are one row copied,
and are refused. Rows equal but for export_time are a later load restating usage, and are kept.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.common.duck import connect, identifier, literal
from pipeline.common.errors import InputError
from pipeline.ingest import value_rules
from pipeline.ingest.value_rules import AFRESH, Rule
from schemas import gcp_billing

_TIMES = ("usage_start_time", "usage_end_time", "export_time")
_LIST_AMOUNTS = {"credits": "amount"}
# usage measures, not money: RAM in byte-seconds passes 10^15
QUANTITIES = frozenset(
    {
        "usage.amount",
        "usage.amount_in_pricing_units",
        "price.tier_start_amount",
        "price.pricing_unit_quantity",
    }
)


def rules(schema: pa.Schema) -> list[Rule]:
    """Every check of an export table with this schema (the columns it has)."""
    found: list[Rule] = []
    names = set(schema.names)
    for leaf in sorted(gcp_billing.DECIMAL_LEAVES):
        column, _, field = leaf.partition(".")
        if column not in names:
            continue
        kind = schema.field(column).type
        if not field:
            found.append(value_rules.money(column))
        elif _has_field(kind, field):
            check = value_rules.quantity if leaf in QUANTITIES else value_rules.money
            found.append(check(leaf, f"{identifier(column)}.{identifier(field)}"))
        elif _LIST_AMOUNTS.get(column) == field and _has_list_field(kind, field):
            found.append(value_rules.money_list(column, identifier(column), field))
    found += [value_rules.timestamp(name) for name in _TIMES if name in names]
    if {"usage_start_time", "usage_end_time"} <= names:
        found.append(value_rules.window("usage_start_time", "usage_end_time"))
    if "invoice" in names and _has_field(schema.field("invoice").type, "month"):
        invoice_month = f"{identifier('invoice')}.{identifier('month')}"
        found.append(value_rules.month("invoice.month", invoice_month))
    if "currency" in names:
        found.append(value_rules.currency("currency"))
    if "billing_account_id" in names:
        found.append(value_rules.required_id("billing_account_id"))
    return found


def _has_field(kind: pa.DataType, field: str) -> bool:
    return pa.types.is_struct(kind) and kind.get_field_index(field) >= 0


def _has_list_field(kind: pa.DataType, field: str) -> bool:
    return pa.types.is_list(kind) and _has_field(kind.value_type, field)


TABLE_FIX = (
    "Fix the table (correct the row in BigQuery, or point gcp.tables at the Cloud Billing export "
    "table itself rather than a copy)"
)
TABLE_AFRESH = (
    "nothing of this partition was stored in raw/ and the current snapshot is unchanged, so "
    "the partition is read afresh on the next run"
)


def check_partition(path: Path, where: str) -> None:
    """check_rows over a partition read from BigQuery into ``path`` (Parquet). Its rows have no
    order of their own, so a row is named by its place in the read and what finds it again."""
    con = connect()
    try:
        source = f"read_parquet({literal(path)}, file_row_number = true)"
        schema = pq.read_schema(path)
        shown = [name for name in ("export_time", "usage_start_time") if name in schema.names]
        shown += [f"{name}.id" for name in ("sku",) if name in schema.names]

        def row(number: int) -> str:
            values = con.execute(
                f"select {', '.join(_path(name) + '::varchar' for name in shown) or 'null'} "
                f"from {source} where file_row_number = ?",
                [number],
            ).fetchone()
            found = ", ".join(
                f"{name} {value!r}" for name, value in zip(shown, values, strict=False)
            )
            return f"row {number + 1} as read ({found})" if found else f"row {number + 1}"

        _check(con, source, "file_row_number", schema, where, row, TABLE_FIX, TABLE_AFRESH)
    finally:
        con.close()


def _path(name: str) -> str:
    return ".".join(identifier(part) for part in name.split("."))


def check_rows(
    con: duckdb.DuckDBPyConnection,
    source: str,
    schema: pa.Schema,
    where: str,
    row: Callable[[int], str],
    fix: str,
) -> None:
    """Refuse the first bad value, then the first row copied, of ``source``: a
    read_parquet(..., file_row_number = true) of one file's rows with the columns of ``schema``
    (any other is NULL); ``row`` names a row (0-based) as the file counts it."""
    _check(con, source, "file_row_number", schema, where, row, fix, AFRESH)


def _check(
    con: duckdb.DuckDBPyConnection,
    source: str,
    number: str,
    schema: pa.Schema,
    where: str,
    row: Callable[[int], str],
    fix: str,
    afresh: str,
) -> None:
    bad = value_rules.first_bad(con, source, number, rules(schema))
    if bad is not None:
        raise value_rules.refusal(where, row(bad.row), bad, fix, afresh)
    columns = [identifier(name) for name in schema.names if name != "__runcost_row"]
    repeat = value_rules.repeated_rows(con, source, number, columns) if columns else None
    if repeat is None:
        return
    stamp = ""
    if "export_time" in schema.names and repeat.key[schema.names.index("export_time")]:
        stamp = repeat.key[schema.names.index("export_time")].astimezone(UTC).isoformat()
        stamp = f", export_time {stamp}"
    more = f"; {repeat.keys} rows are repeated so" if repeat.keys > 1 else ""
    raise InputError(
        f"{where}: {row(repeat.last)} repeats {row(repeat.first)}: every column is equal"
        f"{stamp}{more}. The billing export has no row id and writes each row once per load "
        "(export_time), so a row equal in every column is a copy that would be counted twice: "
        f"{fix[0].lower()}{fix[1:]} and run again (runcost never drops duplicates itself); "
        f"{afresh}"
    )


def is_final(files: list[Path], now: datetime, settle_days: int) -> bool:
    """A stored partition is final as its invoice months are (normalized.billing_periods): every
    invoice month has ended and no row was exported in the last ``settle_days`` days."""
    if not files:
        return False
    listed = "[" + ", ".join(literal(path) for path in files) + "]"
    con = connect()
    try:
        latest_month, latest_export = con.execute(
            f"select max(invoice.month), max(export_time) from read_parquet({listed}, "
            "union_by_name = true)"
        ).fetchone()
    except duckdb.Error:
        return False
    finally:
        con.close()
    if latest_month is None or latest_export is None:
        return False
    month = f"{now:%Y%m}"
    settled = latest_export.astimezone(UTC) <= now - timedelta(days=settle_days)
    return str(latest_month) < month and settled
