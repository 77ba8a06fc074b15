"""A re-delivery that would wipe or gut a billing period stops the run, unless allowed once."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path

import pyarrow.parquet as pq

from pipeline.common.duck import connect, identifier, literal
from pipeline.common.errors import InputError
from pipeline.warehouse.raw_store import RawStore

log = logging.getLogger("runcost")

# A final period (every line invoiced) may lose at most this fraction of its lines in a
# re-delivery; a restatement corrects amounts and adds lines, it does not drop a tenth of them.
FINAL_SHRINK_LIMIT = 0.10
ALLOW_FLAG = "--allow-shrink"


def check_shrink(
    store: RawStore,
    export: str,
    period: str,
    delivery_id: str,
    files: list[Path],
    where: str,
    allowed: Iterable[str] = (),
    final: Callable[[list[Path]], bool] | None = None,
    provider: str = "AWS",
    unit: str = "billing period",
) -> None:
    """Refuse a new delivery that empties a period, or shrinks a final one by more than 10%.

    ``allowed`` holds the periods (YYYY-MM, a GCP day, or EXPORT/PERIOD) the operator allowed
    this once; ``final(stored files)`` says whether the current delivery is final (by default
    AWS's rule: every line carries bill_invoice_id); ``unit`` is what the provider's period
    is called in the message.
    """
    previous = store.current_id(export, period)
    if previous is None or previous == delivery_id:
        return
    stored = store.load(export, period, previous).files
    old_rows, new_rows = _rows(stored), _rows(files)
    if old_rows == 0 or new_rows >= old_rows:
        return
    final = (final or invoiced)(stored)
    if new_rows > 0 and not (final and new_rows < old_rows * (1 - FINAL_SHRINK_LIMIT)):
        return
    what = (
        "holds no lines"
        if new_rows == 0
        else f"holds {new_rows} lines ({1 - new_rows / old_rows:.0%} fewer)"
    )
    kind = "final " if final else ""
    if period in set(allowed) or f"{export}/{period}" in set(allowed):
        log.warning(
            "%s: delivery %s %s, but the current %sdelivery %s of %s %s holds %d; allowed once "
            "by %s %s",
            where,
            delivery_id,
            what,
            kind,
            previous,
            export,
            period,
            old_rows,
            ALLOW_FLAG,
            period,
        )
        return
    limit = f"{FINAL_SHRINK_LIMIT:.0%}"
    raise InputError(
        f"{where}: the new delivery {delivery_id} of {export} {unit} {period} {what}, "
        f"but the current {kind}delivery {previous} holds {old_rows}; a re-delivery that empties "
        f"a period, or shrinks a final one by more than {limit}, is stopped so a broken export "
        "cannot wipe the bill. Nothing was stored and the current snapshot stays current. If "
        f"{provider} really restated it so, run once with `runcost run {ALLOW_FLAG} {period}`; "
        "otherwise fix the export (or wait for its next delivery) and run again"
    )


def _rows(files: Iterable[Path]) -> int:
    return sum(pq.read_metadata(path).num_rows for path in files)


def invoiced(files: list[Path], column: str = "bill_invoice_id") -> bool:
    """Every line carries an invoice id (``column``): the provider has invoiced the period."""
    if not files:
        return False
    listed = "[" + ", ".join(literal(path) for path in files) + "]"
    con = connect()
    try:
        names = {
            row[0] for row in con.execute(f"select name from parquet_schema({listed})").fetchall()
        }
        if column not in names:
            return False
        open_lines = con.execute(
            f"select count(*) from read_parquet({listed}, union_by_name = true) "
            f"where coalesce({identifier(column)}::varchar, '') = ''"
        ).fetchone()[0]
    finally:
        con.close()
    return open_lines == 0
