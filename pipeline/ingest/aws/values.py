"""Values of CUR data checked at ingest, before raw/ changes: money, timestamps, currencies, ids.

The rules are value_rules.py's, shared with GCP and FOCUS; this module says which CUR columns
they apply to. Every bad value is refused naming the file, the row (the CSV line of a converted
file), the column, the value and the fix, so nothing the build would choke on or miscount
reaches raw/. Duplicates: a row repeating another row's identity_line_item_id and
identity_time_interval within one data file, and a data file whose content repeats another of
the delivery. AWS makes the line item id unique only within a partition, so nothing is compared
across files or deliveries.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from pipeline.common.duck import connect, identifier, literal
from pipeline.common.errors import InputError
from pipeline.ingest import precision, value_rules
from pipeline.ingest.aws.validate import MONEY_COLUMNS
from pipeline.ingest.unreadable import reading
from pipeline.ingest.value_rules import AFRESH, Rule
from schemas import aws_cur2

_KINDS = dict(aws_cur2.ALL_COLUMNS)
_WINDOWS = (
    ("line_item_usage_start_date", "line_item_usage_end_date"),
    ("bill_billing_period_start_date", "bill_billing_period_end_date"),
)
_IDS = ("identity_line_item_id", "bill_payer_account_id", "line_item_usage_account_id")
CURRENCY = "line_item_currency_code"
# usage measures, not money: byte-seconds and request counts may pass 10^15
QUANTITIES = frozenset(
    {
        "line_item_usage_amount",
        "line_item_normalized_usage_amount",
        "line_item_normalization_factor",
        "reservation_unused_normalized_unit_quantity",
        "reservation_unused_quantity",
        "split_line_item_actual_usage",
        "split_line_item_reserved_usage",
        "split_line_item_split_usage",
        "split_line_item_split_usage_ratio",
    }
)
LINE_ID, INTERVAL = "identity_line_item_id", "identity_time_interval"
FIX = "Fix the export (re-deliver the file as AWS wrote it, or correct the copy)"
# a file AWS wrote whole but that arrived damaged: AWS rewrites a period's files with each
# delivery, so the next one replaces it
WHOLE_COPY = (
    "re-deliver the file as AWS wrote it (copy it again from the export's bucket, or wait for "
    "the export's next delivery of the period, which replaces it)"
)


@dataclass(frozen=True)
class DataFile:
    """A data file to check: its path, its name in messages, and whether it came from a CSV."""

    path: Path
    where: str
    from_csv: bool = False

    def row(self, number: int) -> str:
        # a converted file keeps the CSV's row order; line 1 of the CSV is its header
        return f"line {number + 2}" if self.from_csv else f"row {number + 1}"


def check_distinct_files(files: list[DataFile], digests: list[str] | None = None) -> None:
    """Refuse a delivery holding the same data file twice (a stray copy doubles the bill);
    ``digests``: the files' sha256 sums, when known already."""
    value_rules.check_distinct_files(
        [(file.path, file.where) for file in files],
        "a delivery never holds one data file twice",
        "remove it from the export (or re-deliver the period)",
        digests,
    )


def check_values(files: list[DataFile]) -> bool:
    """Refuse the first bad value or duplicated line of each file, in file order; True when a
    money value may carry more than 10 decimal places (the delivery's note on rounding must
    look: precision.py), False when none can."""
    may_round = False
    con = connect()
    try:
        for file in files:
            with reading(file.where, WHOLE_COPY):
                may_round = _check_file(con, file) or may_round
    finally:
        con.close()
    return may_round


def _check_file(con: duckdb.DuckDBPyConnection, file: DataFile) -> bool:
    reader = f"read_parquet({literal(file.path)}, file_row_number = true)"
    types = {
        str(row[0]): str(row[1])
        for row in con.execute(f"describe select * from {reader}").fetchall()
    }
    money = {name: kind for name, kind in types.items() if name in MONEY_COLUMNS}
    flags = [precision.may_round(identifier(name), kind) for name, kind in money.items()]
    flagged = " or ".join(flag for flag in flags if flag) or None
    bad, marked = value_rules.scan_values(con, reader, "file_row_number", rules(types), flagged)
    if bad is not None:
        raise value_rules.refusal(file.where, file.row(bad.row), bad, FIX)
    if LINE_ID in types and INTERVAL in types:
        _duplicates(con, reader, file)
    # a money column of another kind than DOUBLE is read whole by the note on rounding
    return None in flags or marked > 0


def rules(types: dict[str, str]) -> list[Rule]:
    """Every check of a CUR file with these columns (name -> DuckDB type)."""
    found = []
    for name, kind in types.items():
        if _KINDS.get(name) == "double":
            check = value_rules.quantity if name in QUANTITIES else value_rules.money
            found.append(check(name, double=kind == "DOUBLE"))
        elif _KINDS.get(name) == "timestamp" and kind.startswith("TIMESTAMP"):
            found.append(value_rules.timestamp(name))
    found += [value_rules.window(*pair) for pair in _WINDOWS if set(pair) <= set(types)]
    if CURRENCY in types:
        found.append(value_rules.currency(CURRENCY))
    found += [value_rules.required_id(name) for name in _IDS if name in types]
    return found


def _duplicates(con, reader: str, file: DataFile) -> None:
    keys = [identifier(LINE_ID), identifier(INTERVAL)]
    found = value_rules.repeated_rows(
        con, reader, "file_row_number", keys, f"coalesce({identifier(LINE_ID)}, '') <> ''"
    )
    if found is None:
        return
    line_id, interval = found.key
    more = f"; {found.keys} line items are repeated in this file" if found.keys > 1 else ""
    raise InputError(
        f"{file.where}: {file.row(found.last)} repeats {file.row(found.first)} "
        f"(identity_line_item_id {line_id!r}, identity_time_interval {interval!r}){more}; AWS "
        "writes each line item once per hour in a file, so the copy is damaged or was appended "
        "to and would count the line twice: re-deliver the file as AWS wrote it and run again "
        f"(runcost never drops duplicates itself); {AFRESH}"
    )
