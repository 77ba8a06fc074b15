"""Checks of CUR data: a Parquet file from its footer, then a delivery's currency and grain."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.common.duck import connect, literal
from pipeline.common.errors import InputError
from pipeline.ingest.precision import note_rounding
from pipeline.ingest.provider import IngestContext
from schemas import aws_cur2

PARQUET_HINT = (
    "CUR 2.0 exports must use Format=PARQUET (Compression=PARQUET), whose files end in "
    ".parquet, or Format=TEXT_OR_CSV with Compression=GZIP, whose files end in .csv.gz"
)
log = logging.getLogger("runcost")
_CONTRACT = {name for name, _kind in aws_cur2.ALL_COLUMNS}
REWRITTEN_HINT = "use the files exactly as AWS delivered them, not a copy rewritten by a tool"


def check_magic(handle: BinaryIO, size: int, where: str) -> None:
    head = handle.read(4)
    tail = b""
    if size >= 8:
        handle.seek(-4, 2)
        tail = handle.read(4)
    handle.seek(0)
    if head == b"PAR1" and tail == b"PAR1":
        return
    if head[:2] == b"\x1f\x8b":
        reason = "it is gzip-compressed, as a TEXT_OR_CSV export is"
    elif size < 8:
        reason = f"it is only {size} bytes long"
    elif head == b"PAR1":
        reason = "it is cut short: the Parquet footer is missing"
    else:
        reason = "it does not start with the Parquet magic bytes PAR1"
    raise InputError(f"{where}: not a Parquet file ({reason}); {PARQUET_HINT}")


def check_columns(schema: pa.Schema, where: str, context: IngestContext) -> None:
    names = set(schema.names)
    missing = [
        name
        for name in aws_cur2.REQUIRED
        if name not in names and (context.resource_time or name != "line_item_resource_id")
    ]
    if missing:
        also = f" (also missing: {', '.join(missing[1:])})" if len(missing) > 1 else ""
        raise InputError(
            f"{where}: column {missing[0]} is missing; {aws_cur2.REQUIRED[missing[0]]}{also}"
        )
    for name, kind in aws_cur2.ALL_COLUMNS:
        if name not in names:
            continue
        actual = schema.field(name).type
        if kind.startswith("map_") and not _is_map(actual, kind):
            expected = aws_cur2.ARROW_TYPES[kind]
            raise InputError(
                f"{where}: column {name} has type {actual}, but CUR 2.0 Parquet stores it as "
                f"{expected}; {REWRITTEN_HINT}"
            )
        if kind == "timestamp" and not pa.types.is_timestamp(actual):
            raise InputError(
                f"{where}: column {name} has type {actual}, but CUR 2.0 Parquet stores it as a "
                f"timestamp; {REWRITTEN_HINT}"
            )


def _is_map(actual: pa.DataType, kind: str) -> bool:
    if not pa.types.is_map(actual):
        return False
    key, value = actual.key_type, actual.item_type
    if not (pa.types.is_string(key) or pa.types.is_large_string(key)):
        return False
    if kind == "map_double":
        return pa.types.is_floating(value) or pa.types.is_decimal(value)
    return pa.types.is_string(value) or pa.types.is_large_string(value)


def check_period(path: Path, metadata: pq.FileMetaData, where: str, period: str) -> None:
    """Every line's bill_billing_period_start_date must fall in the delivered period: read from
    the footer statistics, or from the column itself in a file written without them. Staging
    takes a line's billing period from its delivery (raw.aws_cur2.delivery_period), so this
    check is what makes the two agree."""
    column = "bill_billing_period_start_date"
    paths = [metadata.schema.column(i).path for i in range(metadata.num_columns)]
    stats = [
        metadata.row_group(group).column(paths.index(column)).statistics
        for group in range(metadata.num_row_groups)
    ]
    if all(item is not None and item.has_min_max for item in stats):
        bounds = [value for item in stats for value in (item.min, item.max)]
    else:
        found = pc.min_max(pq.read_table(path, columns=[column]).column(column)).as_py()
        bounds = [value for value in found.values() if value is not None]
    months = {_month(value) for value in bounds}
    if len(months) > 1:
        raise InputError(
            f"{where}: rows of several billing periods ({', '.join(sorted(months))}) in "
            f"{column}; a delivery holds exactly one billing period"
        )
    if months and months != {period}:
        raise InputError(
            f"{where}: its rows are for billing period {months.pop()} ({column}) but the file "
            f"is delivered under BILLING_PERIOD={period}; re-copy the export as AWS delivered it"
        )


def _month(value: object) -> str:
    if isinstance(value, datetime):
        return (value.astimezone(UTC) if value.tzinfo else value).strftime("%Y-%m")
    return str(value)[:7]


def note_extra_columns(names: list[str], where: str) -> None:
    """Columns runcost does not know stay in raw/ and are not read; say which they are."""
    extras = [name for name in names if name not in _CONTRACT]
    if extras:
        log.warning(
            "%s: %d column(s) runcost does not read (kept in raw/, ignored downstream): %s",
            where,
            len(extras),
            ", ".join(extras),
        )


# the CUR 2.0 money columns staging reads as DECIMAL(38, 10)
MONEY_COLUMNS = frozenset(
    {
        "line_item_unblended_cost",
        "line_item_net_unblended_cost",
        "pricing_public_on_demand_cost",
        "savings_plan_savings_plan_effective_cost",
        "savings_plan_net_savings_plan_effective_cost",
        "savings_plan_total_commitment_to_date",
        "savings_plan_used_commitment",
        "savings_plan_recurring_commitment_for_billing_period",
        "reservation_effective_cost",
        "reservation_net_effective_cost",
        "reservation_unused_amortized_upfront_fee_for_billing_period",
        "reservation_net_unused_amortized_upfront_fee_for_billing_period",
        "reservation_unused_recurring_fee",
        "reservation_net_unused_recurring_fee",
        "split_line_item_split_cost",
        "split_line_item_unused_cost",
        "split_line_item_net_split_cost",
        "split_line_item_net_unused_cost",
        "split_line_item_public_on_demand_split_cost",
        "split_line_item_public_on_demand_unused_cost",
    }
)


def check_delivery(
    files: list[Path], where: str, period: str, context: IngestContext, may_round: bool = True
) -> None:
    """Refuse a delivery billed in several currencies; warn when its lines are daily; note its
    money of more than 10 decimal places unless ``may_round`` says none can have them."""
    if not files:
        return
    listed = "[" + ", ".join(literal(path) for path in files) + "]"
    con = connect()
    try:
        names = {
            row[0]
            for row in con.execute(
                f"select name from parquet_schema({listed}) where name is not null"
            ).fetchall()
        }
        source = f"read_parquet({listed}, union_by_name = true)"
        if may_round:
            note_rounding(con, source, sorted(names & MONEY_COLUMNS), where)
        if "line_item_currency_code" in names:
            currencies = [
                row[0]
                for row in con.execute(
                    f"select distinct coalesce(line_item_currency_code, '') from {source} "
                    "order by 1"
                ).fetchall()
            ]
            if len(currencies) > 1:
                raise InputError(
                    f"{where}: billing period {period} has lines in several currencies "
                    f"({', '.join(repr(c) for c in currencies)} in line_item_currency_code); "
                    "runcost does not convert between currencies (conversions are not "
                    "supported), so each billing period of an export must be in one currency: "
                    "use one export per payer account and currency"
                )
        if (
            context.resource_time
            and {"line_item_usage_start_date", "line_item_usage_end_date"} <= names
        ):
            # the window in microseconds: an INTERVAL from subtracting the timestamps costs
            # about 20x the CPU of this scan (2.2 against 0.1 CPU s on a 10M-line delivery)
            hourly, daily = con.execute(
                "select count(*) filter (where w <= 3600000000), "
                "count(*) filter (where w = 86400000000) from (select "
                "epoch_us(line_item_usage_end_date) - epoch_us(line_item_usage_start_date) as w "
                f"from {source})"
            ).fetchone()
            if hourly == 0 and daily > 0:
                log.warning(
                    "%s: its lines cover whole days (a DAILY export): resource and time "
                    "attribution cannot place a day's cost on the attempts that ran in it, so "
                    "only tags can attribute it; set TIME_GRANULARITY=HOURLY in the export",
                    where,
                )
    finally:
        con.close()
