"""Money with more than 10 decimal places: counted and logged on every ingest path (AWS, GCP,
FOCUS), since cost lines round it to DECIMAL(38, 10) (raw/ keeps the delivered values whole)."""

from __future__ import annotations

import logging
from decimal import Decimal

import duckdb

log = logging.getLogger("runcost")


def rounding(
    con: duckdb.DuckDBPyConnection, source: str, values: list[str]
) -> tuple[int, Decimal | None]:
    """(how many, the largest |value - value rounded to 10 places|) over SQL expressions
    ``values`` of ``source`` (a table or a subquery); each value is read through its text, so a
    DOUBLE counts by its shortest form (0.1 is 0.1) and text keeps every digit."""
    if not values:
        return 0, None
    exact = " union all ".join(
        f"select try_cast(cast({value} as varchar) as decimal(38, 20)) as exact from {source}"
        for value in values
    )
    count, largest = con.execute(
        "select count(*) filter (where difference <> 0), max(difference) from (select "
        f"abs(exact - cast(exact as decimal(38, 10))) as difference from ({exact}))"
    ).fetchone()
    return int(count), (largest if count else None)


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
