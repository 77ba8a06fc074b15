"""Money with more than 10 decimal places: counted and logged on every ingest path (AWS, GCP,
FOCUS), since cost lines round it to DECIMAL(38, 10) (raw/ keeps the delivered values whole)."""

from __future__ import annotations

import logging
import re
from decimal import Decimal

import duckdb

from pipeline.common.money import MONEY_SQL

log = logging.getLogger("runcost")
_DECIMAL = re.compile(r"DECIMAL\(\d+, ?(\d+)\)")


def rounding(
    con: duckdb.DuckDBPyConnection, source: str, values: list[str]
) -> tuple[int, Decimal | None]:
    """(how many, the largest |value - value rounded to 10 places|) over SQL expressions
    ``values`` of ``source`` (a table or a subquery); each value is read through its text, so a
    DOUBLE counts by its shortest form (0.1 is 0.1) and text keeps every digit."""
    if not values:
        return 0, None
    listed = ", ".join(f"{value} as value_{index}" for index, value in enumerate(values))
    kinds = [row[1] for row in con.execute(f"describe select {listed} from {source}").fetchall()]
    exact = " union all ".join(
        f"select try_cast(cast({value} as varchar) as decimal(38, 20)) as exact "
        f"from {source}{_more_than_ten_places(value, kind)}"
        for value, kind in zip(values, kinds, strict=True)
    )
    count, largest = con.execute(
        "select count(*) filter (where difference <> 0), max(difference) from (select "
        f"abs(exact - cast(exact as {MONEY_SQL})) as difference from ({exact}))"
    ).fetchone()
    return int(count), (largest if count else None)


def _more_than_ten_places(value: str, kind: str) -> str:
    """A filter that drops the values that cannot carry more than 10 decimal places, cheaply
    (may_round); only the rest are written as text. A text column is read whole."""
    found = may_round(value, kind)
    return f" where {found}" if found else ""


def may_round(value: str, kind: str) -> str | None:
    """SQL true for a value that may carry more than 10 decimal places (NULL does not); None
    for a column of a kind only its text can tell (text). A DOUBLE that reads back from
    DECIMAL(18, 10) as itself has a form with 10 places, so its shortest form has no more: 0.2
    CPU s per column per 1M values less than writing it as text. The 64-bit DECIMAL(18, 10)
    costs a third less than DECIMAL(38, 10) (2.3-2.7 against 3.2-3.7 CPU s for the 20 money
    columns of the 10M benchmark); a value of 1e8 or more does not fit it and is flagged, which
    only costs time. A DECIMAL carries more than 10 places only beyond its 10th: a FOCUS file's
    DECIMAL(38, 18) money is compared with itself rounded, not written as text."""
    if kind == "DOUBLE":
        return (
            f"({value} is not null and not coalesce("
            f"cast(try_cast({value} as decimal(18, 10)) as double) = {value}, false))"
        )
    decimal = _DECIMAL.fullmatch(kind)
    if decimal is None:
        return None
    if int(decimal.group(1)) <= 10:
        return "false"
    return f"({value} is not null and {value} <> round({value}, 10))"


def note_rounding(
    con: duckdb.DuckDBPyConnection, source: str, values: list[str], where: str
) -> None:
    """Log the count and the largest difference when any value carries more than 10 decimals."""
    count, largest = rounding(con, source, values)
    if count:
        log.info(
            "%s: %d money values carry more than 10 decimal places (largest rounding "
            "difference %s); raw/ keeps them whole, cost lines round them to DECIMAL(38, 10)",
            where,
            count,
            format(largest.normalize(), "f") if largest is not None else "?",
        )
