"""The money type, named once: every amount is DECIMAL(38, 10) from ingest to publish."""

from __future__ import annotations

import pyarrow as pa

MONEY_PRECISION = 38
MONEY_SCALE = 10
# the type as SQL spells it, for queries Python writes (models use the money() macro)
MONEY_SQL = f"decimal({MONEY_PRECISION}, {MONEY_SCALE})"
# the type as Arrow and Parquet carry it
MONEY_ARROW = pa.decimal128(MONEY_PRECISION, MONEY_SCALE)
