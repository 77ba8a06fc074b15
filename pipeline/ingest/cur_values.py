"""Values of CUR data checked at ingest, before raw/ changes: money, timestamps, currencies, ids.

Every bad value is refused naming the file, the row (the CSV line of a converted file), the
column, the value and the fix, so nothing the build would choke on or miscount reaches raw/.
Duplicates: a row repeating another row's identity_line_item_id and identity_time_interval within
one data file, and a data file whose content repeats another of the delivery. AWS makes the line
item id unique only within a partition, so nothing is compared across files or deliveries.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline.common.duck import connect, identifier, literal
from pipeline.common.errors import InputError
from pipeline.warehouse.raw_store import sha256_file
from schemas import aws_cur2

# No single line moves 10^15 in any currency or unit; beyond it DECIMAL(38, 10) sums overflow.
MAX_AMOUNT = 1e15
EARLIEST, LATEST = "2000-01-01", "2100-01-01"
_KINDS = dict(aws_cur2.ALL_COLUMNS)
_WINDOWS = (
    ("line_item_usage_start_date", "line_item_usage_end_date"),
    ("bill_billing_period_start_date", "bill_billing_period_end_date"),
)
_IDS = ("identity_line_item_id", "bill_payer_account_id", "line_item_usage_account_id")
CURRENCY = "line_item_currency_code"
LINE_ID, INTERVAL = "identity_line_item_id", "identity_time_interval"
AFRESH = (
    "nothing of this delivery was stored in raw/ and the current snapshot is unchanged, so the "
    "corrected copy is read afresh on the next run"
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


def check_distinct_files(files: list[DataFile]) -> None:
    """Refuse a delivery holding the same data file twice (a stray copy doubles the bill)."""
    seen: dict[str, str] = {}
    for file in files:
        digest = sha256_file(file.path)
        if digest in seen:
            raise InputError(
                f"{file.where}: has exactly the content of {seen[digest]} (sha256 "
                f"{digest[:16]}...); a delivery never holds one data file twice, so one is a "
                "stray copy that would count every line twice: remove it from the export (or "
                f"re-deliver the period) and run again; {AFRESH}"
            )
        seen[digest] = file.where


def check_values(files: list[DataFile]) -> None:
    """Refuse the first bad value or duplicated line of each file, in file order."""
    con = connect()
    # Parquet footer statistics leave NaN out: never let them fold a NaN test to false
    con.execute("set disabled_optimizers = 'statistics_propagation'")
    try:
        for file in files:
            reader = f"read_parquet({literal(file.path)}, file_row_number = true)"
            types = {
                str(row[0]): str(row[1])
                for row in con.execute(f"describe select * from {reader}").fetchall()
            }
            tests = _tests(types)
            if tests:
                _first_bad(con, reader, file, tests)
            if LINE_ID in types and INTERVAL in types:
                _duplicates(con, reader, file)
    finally:
        con.close()


def _tests(types: dict[str, str]) -> list[tuple[str, str, str]]:
    """(column, condition that marks a bad row, what a good value is) for every check."""
    tests = []
    for name, kind in types.items():
        if _KINDS.get(name) == "double":
            number = kind in ("DOUBLE", "FLOAT")
            value = identifier(name) if number else f"try_cast({identifier(name)} as double)"
            # text such as '$1.00' in a column of text; isnan/isinf on the number itself (a cast
            # of every value to text cost 10x the scan)
            text = "" if number else f"({identifier(name)} is not null and {value} is null) or "
            tests.append(
                (
                    name,
                    f"{text}isnan({value}) or isinf({value}) or abs({value}) >= {MAX_AMOUNT:.0f}",
                    f"a finite number below {MAX_AMOUNT:.0e} in magnitude (not NaN, Infinity "
                    "or text such as '$1.00')",
                )
            )
        elif _KINDS.get(name) == "timestamp" and kind.startswith("TIMESTAMP"):
            tests.append(
                (
                    name,
                    f"{identifier(name)} < '{EARLIEST}' or {identifier(name)} >= '{LATEST}'",
                    f"a time between {EARLIEST} and {LATEST}",
                )
            )
    for start, end in _WINDOWS:
        if start in types and end in types:
            tests.append(
                (
                    end,
                    f"{identifier(end)} < {identifier(start)}",
                    f"a time at or after {start} (a line cannot end before it starts)",
                )
            )
    if CURRENCY in types:
        tests.append(
            (
                CURRENCY,
                f"not regexp_full_match(coalesce({identifier(CURRENCY)}::varchar, ''), "
                "'[A-Z]{3}')",
                "a three-letter ISO 4217 code such as USD (never empty)",
            )
        )
    for name in _IDS:
        if name in types:
            tests.append(
                (
                    name,
                    f"coalesce(trim({identifier(name)}::varchar), '') = ''",
                    "an identifier (never empty)",
                )
            )
    return tests


def _first_bad(con, reader: str, file: DataFile, tests: list[tuple[str, str, str]]) -> None:
    # one scan with every test or-ed says whether any row is bad (a tenth of the CPU of one
    # filtered aggregate per test); only a bad file pays for the query naming the first
    anything = " or ".join(f"({test})" for _, test, _ in tests)
    if con.execute(f"select count(*) from {reader} where {anything}").fetchone()[0] == 0:
        return
    firsts = ", ".join(f"min(file_row_number) filter (where {test})" for _, test, _ in tests)
    counts = ", ".join(f"count(*) filter (where {test})" for _, test, _ in tests)
    found = con.execute(f"select {firsts}, {counts} from {reader}").fetchone()
    bad = [
        (row, index, found[len(tests) + index])
        for index, row in enumerate(found[: len(tests)])
        if row is not None
    ]
    if not bad:
        return
    row, index, count = min(bad)
    column, _test, wanted = tests[index]
    value = con.execute(
        f"select {identifier(column)}::varchar from {reader} where file_row_number = ?", [row]
    ).fetchone()[0]
    more = f" ({count} rows of the file break it)" if count > 1 else ""
    raise InputError(
        f"{file.where}: {file.row(row)}, column {column}: {value!r} is refused; it must be "
        f"{wanted}{more}. Fix the export (re-deliver the file as AWS wrote it, or correct the "
        f"copy) and run again; {AFRESH}"
    )


def _duplicates(con, reader: str, file: DataFile) -> None:
    found = con.execute(
        f"select {LINE_ID}, {INTERVAL}, min(file_row_number), max(file_row_number), "
        "count(*) over () from "
        f"{reader} where coalesce({LINE_ID}, '') <> '' group by all having count(*) > 1 "
        "order by 3 limit 1"
    ).fetchone()
    if found is None:
        return
    line_id, interval, first, last, keys = found
    more = f"; {keys} line items are repeated in this file" if keys > 1 else ""
    raise InputError(
        f"{file.where}: {file.row(last)} repeats {file.row(first)} (identity_line_item_id "
        f"{line_id!r}, identity_time_interval {interval!r}){more}; AWS writes each line item "
        "once per hour in a file, so the copy is damaged or was appended to and would count "
        "the line twice: re-deliver the file as AWS wrote it and run again (runcost never "
        f"drops duplicates itself); {AFRESH}"
    )
