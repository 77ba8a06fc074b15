"""The money type, named once: every amount is DECIMAL(38, 10) from ingest to publish."""

from __future__ import annotations

import pyarrow as pa

MONEY_PRECISION = 38
MONEY_SCALE = 10
# the type as SQL spells it, for queries Python writes (models use the money() macro)
MONEY_SQL = f"decimal({MONEY_PRECISION}, {MONEY_SCALE})"
# the type as Arrow and Parquet carry it
MONEY_ARROW = pa.decimal128(MONEY_PRECISION, MONEY_SCALE)

# A DOUBLE amount as the decimal its shortest text spells (exact_decimal in the models): the
# rule for CUR money and a Google Cloud FLOAT64 leaf, written once.
EXACT_DECIMAL_SQL = (
    "case when cast(try_cast({value} as decimal(18, 10)) as double) = {value} "
    "and abs({value}) < 524288 "
    f"then cast(try_cast({{value}} as decimal(18, 10)) as {MONEY_SQL}) "
    "when abs({value}) < 100000000 "
    f"then cast(cast(cast({{value}} as varchar) as decimal(18, 10)) as {MONEY_SQL}) "
    f"else cast(cast({{value}} as varchar) as {MONEY_SQL}) end"
)


def exact_decimal(value: str) -> str:
    """EXACT_DECIMAL_SQL of the expression ``value``, as the exact_decimal macro expands it."""
    return EXACT_DECIMAL_SQL.format(value=f"({value.strip()})")
