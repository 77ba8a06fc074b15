"""How a query's values read in a terminal table: money to the cent, other numbers to 6 places."""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from pipeline.common.money import MONEY_SCALE
from pipeline.report.results import display_text

CENT = Decimal("0.01")
# places shown of a number that is not money (a share, hours, a unit price); --exact shows all
PLACES = 6
_DECIMAL = re.compile(r"DECIMAL\((\d+),\s*(\d+)\)")
_NUMBERS = ("DOUBLE", "FLOAT", "REAL")


def is_money(kind: str) -> bool:
    """Whether a DuckDB column type is the money type (every amount is DECIMAL(38, 10))."""
    match = _DECIMAL.fullmatch(kind.strip().upper())
    return bool(match) and int(match.group(2)) == MONEY_SCALE


def is_rounded(kind: str) -> bool:
    """Whether a column of this type prints rounded in a table (money, other decimals, floats)."""
    upper = kind.strip().upper()
    return upper.startswith("DECIMAL") or upper in _NUMBERS


def cell_text(value: Any, kind: str, exact: bool = False) -> str:
    """``value`` of a column of DuckDB type ``kind`` as a table shows it.

    Money rounds half-even to the cent, other decimals and floats to 6 places without trailing
    zeros (a nonzero value that would show as 0 keeps 3 significant digits), with thousands
    separators; ``exact`` shows every digit, as CSV, JSON and Parquet always do.
    """
    if exact or value is None or not is_rounded(kind):
        return display_text(value)
    if isinstance(value, Decimal) and value.is_finite():
        if is_money(kind):
            cents = value.quantize(CENT, ROUND_HALF_EVEN)
            return f"{cents.copy_abs() if cents.is_zero() else cents:,f}"  # no -0.00
        return _places(value)
    if isinstance(value, float) and math.isfinite(value):
        return _places(Decimal(repr(value)))
    return display_text(value)


def _places(value: Decimal) -> str:
    rounded = value.quantize(Decimal(1).scaleb(-PLACES), ROUND_HALF_EVEN)
    if rounded.is_zero() and not value.is_zero():
        return f"{value:.3g}"
    text = f"{rounded.copy_abs() if rounded.is_zero() else rounded:,f}"
    return text.rstrip("0").rstrip(".") if "." in text else text
