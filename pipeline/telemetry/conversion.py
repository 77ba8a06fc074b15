"""Raw telemetry values -> canonical types: the conversion of each column and its checks."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import polars as pl

UTC = pl.Datetime("us", "UTC")
# ISO 8601 with no zone: refused rather than guessed (DESIGN.md: timestamps are UTC, tz-aware).
_NAIVE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[Tt ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?)?$"
# chrono formats: %.f takes an optional fraction, %#z takes Z, +02, +0200 and +02:00.
_ISO_FORMATS = ("%Y-%m-%dT%H:%M:%S%.f%#z", "%Y-%m-%dT%H:%M%#z")
_TIMESTAMP_FIX = (
    "write UTC with a trailing Z (2026-10-01T10:00:00Z) or an explicit offset "
    "(2026-10-01T12:00:00+02:00)"
)
_TRUE = ("true", "t", "yes", "y", "1")
_FALSE = ("false", "f", "no", "n", "0")


def show(value: object) -> str:
    """A value as an error message quotes it: strings in quotes with escapes, times in ISO 8601."""
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    return str(value)


def as_text(column: str, dtype: pl.DataType) -> pl.Expr | None:
    """A column as String (nested structs as JSON text); None for types with no text form."""
    col = pl.col(column)
    if dtype == pl.String:
        return col
    if isinstance(dtype, pl.Struct):
        return col.struct.json_encode()
    if dtype.is_nested() or dtype == pl.Binary:
        return None
    if isinstance(dtype, pl.Datetime | pl.Date):
        return col.dt.to_string("iso")
    return col.cast(pl.String)


def is_present(column: str, dtype: pl.DataType) -> pl.Expr:
    """Whether a raw cell holds a value: not NULL, and for text not blank."""
    col = pl.col(column)
    if dtype == pl.String:
        return col.str.strip_chars().str.len_bytes().fill_null(0) > 0
    return col.is_not_null()


# A check on a raw column: rows where `mask` holds get `describe(raw value)` as their problem.
# `mask` may use the column's converted value (converted(column)), so it is not computed twice.
Check = tuple[pl.Expr, Callable[[object], str]]
# A metric may be NaN (a diverged loss); every other number must be finite.
MAY_BE_NAN = frozenset({"metric_value"})


def converted(column: str) -> pl.Expr:
    """The converted value of a raw column, as the checks of coerce() see it."""
    return pl.col(f"__runcost_converted_{column}")


def convert(column: str, dtype: pl.DataType, target: pl.DataType) -> tuple[pl.Expr, list[Check]]:
    """The expression turning a raw column into its canonical type, and its value checks."""
    col = pl.col(column)
    value_read = converted(column)
    if target in (pl.Int64, pl.Float64) and dtype.is_integer():
        # Stored as whole numbers: the value as it is (its text form reads the same), and a
        # UInt64 beyond Int64 is not a whole number runcost can hold, as its text was not.
        return col.cast(target, strict=False), [
            (col.is_not_null() & value_read.is_null(), _fix("is not a whole number", "8"))
        ]
    if target == pl.Float64 and dtype.is_float():
        if column in MAY_BE_NAN:
            return col.cast(target), []
        odd = (col.is_nan() | col.is_infinite()).fill_null(False)
        finite = _fix("is not a finite number (NaN and Infinity are not counts or sizes)", "4")
        return pl.when(~odd).then(col.cast(target)), [(odd, finite)]
    text = as_text(column, dtype)
    if text is None:
        kind = "text" if target == pl.String else str(target).lower()
        return pl.lit(None, target), [
            (col.is_not_null(), lambda v: f"{dtype} values cannot be read as {kind}; write {kind}")
        ]
    present = is_present(column, dtype)
    if target == pl.String:
        if column.endswith("_id"):  # ids are trimmed alike: " att-1" is att-1, like resource ids
            text = text.str.strip_chars()
        return pl.when(text != "").then(text), []
    # Numbers go through their text form so 8, "8", 8.0 and "8.0" read alike and 8.5 is refused.
    number = text.str.strip_chars()
    if target == pl.Int64:
        decimal = number.cast(pl.Float64, strict=False)
        whole = pl.when(decimal == decimal.round(0)).then(decimal.cast(pl.Int64, strict=False))
        value = pl.coalesce(number.cast(pl.Int64, strict=False), whole)
        return value, [(present & value_read.is_null(), _fix("is not a whole number", "8"))]
    if target == pl.Float64:
        value = number.cast(pl.Float64, strict=False)
        if column in MAY_BE_NAN:
            return value, [(present & value_read.is_null(), _fix("is not a number", "0.93"))]
        # a NaN vcpu_count would fail far away, in allocation: refused here, and read as NULL
        odd = (value.is_nan() | value.is_infinite()).fill_null(False)
        finite = _fix("is not a finite number (NaN and Infinity are not counts or sizes)", "4")
        return pl.when(~odd).then(value), [
            (present & value_read.is_null() & ~odd, _fix("is not a number", "0.93")),
            (odd, finite),
        ]
    if target == pl.Boolean:
        if dtype == pl.Boolean:
            value = col
        else:
            words = text.str.strip_chars().str.to_lowercase()
            value = pl.when(words.is_in(_TRUE)).then(True).when(words.is_in(_FALSE)).then(False)
        return value, [(present & value_read.is_null(), _fix("is not true or false", "true"))]
    if target == UTC:
        return _timestamp(column, dtype, text, present, value_read)
    raise AssertionError(f"no conversion to {target}")


def _fix(what: str, example: str) -> Callable[[object], str]:
    return lambda value: f"{show(value)} {what}; write a value such as {example}"


def _timestamp(
    column: str, dtype: pl.DataType, text: pl.Expr, present: pl.Expr, value_read: pl.Expr
) -> tuple[pl.Expr, list[Check]]:
    col = pl.col(column)
    no_zone = f"has no time zone; {_TIMESTAMP_FIX}"
    if isinstance(dtype, pl.Datetime) and dtype.time_zone is not None:
        return col.dt.convert_time_zone("UTC").dt.cast_time_unit("us"), []
    if isinstance(dtype, pl.Datetime | pl.Date):
        kind = "timestamp" if isinstance(dtype, pl.Datetime) else "date"
        fix = (
            "store the column as timestamp with time zone UTC (pa.timestamp('us', tz='UTC')), "
            f"or as text: {_TIMESTAMP_FIX}"
        )
        describe = f"is a {kind} without time zone; {fix}"
        return pl.lit(None, UTC), [(col.is_not_null(), lambda v: f"{show(v)} {describe}")]
    stripped = text.str.strip_chars()
    # Plain string operations, not a regex rewrite: several times faster on millions of rows.
    # "2026-10-01 10:00:00 +02:00" and "2026-10-01t10:00z" become ISO 8601 proper.
    iso = pl.concat_str(
        stripped.str.slice(0, 10),
        stripped.str.slice(10, 1).str.replace(" ", "T", literal=True),
        stripped.str.slice(11).str.replace_all(" ", "", literal=True),
    ).str.to_uppercase()
    value = pl.coalesce(
        iso.str.to_datetime(fmt, strict=False, time_zone="UTC", time_unit="us")
        for fmt in _ISO_FORMATS
    )
    naive = stripped.str.contains(_NAIVE).fill_null(False)
    return value, [
        (present & naive, lambda v: f"{show(v)} {no_zone}"),
        (
            present & ~naive & value_read.is_null(),
            lambda v: (
                f"{show(v)} is not a timestamp; write ISO 8601 with a time zone, "
                "such as 2026-10-01T10:00:00Z"
            ),
        ),
    ]
