"""Raw telemetry values -> canonical types: the conversion of each column and its checks."""

from __future__ import annotations

import datetime as dt
import re
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
# No cloud bill is older: an interval that starts before it is a clock that was never set.
EARLIEST = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
# How far past the clock a time may lie (clocks drift; a time zone mistake is under a day).
FUTURE_TOLERANCE = dt.timedelta(days=1)
# C0 controls and DEL: never in an id; in a tag only tab, line feed and carriage return.
ID_CONTROLS = r"[\x00-\x1f\x7f]"
TAG_CONTROLS = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]"
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
# A NaN metric compares above every threshold in SQL: a diverged run would pass as accepted.
_NAN_METRIC = (
    "is not a number a result can be judged by (NaN compares above every threshold); leave "
    "metric_value empty for a run with no valid metric, such as a diverged one"
)


def control_character(value: object, pattern: str = ID_CONTROLS) -> str:
    """The first control character of a value as U+XXXX (for messages)."""
    found = re.search(pattern, str(value))
    return f"U+{ord(found.group()):04X}" if found else "none"


def nfc(series: pl.Series) -> pl.Series:
    """Text in Unicode NFC, so a decomposed 'café' equals a composed one.

    Only values with a non-ASCII character are normalised (ASCII is NFC already): normalising
    3M ASCII ids took 1.8 s, finding the non-ASCII ones 0.08 s.
    """
    odd = (series.str.len_bytes() != series.str.len_chars()).fill_null(False)
    if not odd.any():
        return series
    return series.scatter(odd.arg_true(), series.filter(odd).str.normalize("NFC"))


def converted(column: str) -> pl.Expr:
    """The converted value of a raw column, as the checks of coerce() see it."""
    return pl.col(f"__runcost_converted_{column}")


def convert(
    column: str, dtype: pl.DataType, target: pl.DataType, now: dt.datetime | None = None
) -> tuple[pl.Expr, list[Check]]:
    """The expression turning a raw column into its canonical type, and its value checks.

    ``now``: the clock times may not run past by more than FUTURE_TOLERANCE (default: now).
    """
    col = pl.col(column)
    value_read = converted(column)
    if target in (pl.Int64, pl.Float64) and dtype.is_integer():
        # Stored as whole numbers: the value as it is (its text form reads the same), and a
        # UInt64 beyond Int64 is not a whole number runcost can hold, as its text was not.
        return col.cast(target, strict=False), [
            (col.is_not_null() & value_read.is_null(), _fix("is not a whole number", "8"))
        ]
    if target == pl.Float64 and dtype.is_float():
        odd = (col.is_nan() | col.is_infinite()).fill_null(False)
        return pl.when(~odd).then(col.cast(target)), [(odd, not_finite(column))]
    text = as_text(column, dtype)
    if text is None:
        kind = "text" if target == pl.String else str(target).lower()
        return pl.lit(None, target), [
            (col.is_not_null(), lambda v: f"{dtype} values cannot be read as {kind}; write {kind}")
        ]
    present = is_present(column, dtype)
    if target == pl.String:
        if not column.endswith("_id"):
            return pl.when(text != "").then(text), []
        # ids are trimmed alike: " att-1" is att-1, like resource ids; a control character
        # inside one (a NUL from a C string) makes a look-alike that matches nothing
        text = text.str.strip_chars()
        controls = text.str.contains(ID_CONTROLS)
        return pl.when(text != "").then(text), [
            (
                controls,
                lambda v: (
                    f"{show(v)} holds the control character {control_character(v)}; an id "
                    "with one never matches the same id on the bill: write the id without it"
                ),
            )
        ]
    # Numbers go through their text form so 8, "8", 8.0 and "8.0" read alike and 8.5 is refused.
    number = text.str.strip_chars()
    if target == pl.Int64:
        decimal = number.cast(pl.Float64, strict=False)
        whole = pl.when(decimal == decimal.round(0)).then(decimal.cast(pl.Int64, strict=False))
        value = pl.coalesce(number.cast(pl.Int64, strict=False), whole)
        return value, [(present & value_read.is_null(), _fix("is not a whole number", "8"))]
    if target == pl.Float64:
        value = number.cast(pl.Float64, strict=False)
        # a NaN vcpu_count would fail far away, in allocation: refused here, and read as NULL
        odd = (value.is_nan() | value.is_infinite()).fill_null(False)
        return pl.when(~odd).then(value), [
            (present & value_read.is_null() & ~odd, _fix("is not a number", "0.93")),
            (odd, not_finite(column)),
        ]
    if target == pl.Boolean:
        if dtype == pl.Boolean:
            value = col
        else:
            words = text.str.strip_chars().str.to_lowercase()
            value = pl.when(words.is_in(_TRUE)).then(True).when(words.is_in(_FALSE)).then(False)
        return value, [(present & value_read.is_null(), _fix("is not true or false", "true"))]
    if target == UTC:
        value, checks = _timestamp(column, dtype, text, present, value_read)
        return value, checks + implausible_times(now or dt.datetime.now(dt.UTC), value_read)
    raise AssertionError(f"no conversion to {target}")


def not_finite(column: str) -> Callable[[object], str]:
    """What a NaN or infinite value of a column is told (a metric: it passes every threshold)."""
    if column == "metric_value":
        return lambda value: f"{show(value)} {_NAN_METRIC}"
    return _fix("is not a finite number (NaN and Infinity are not counts or sizes)", "4")


def implausible_times(now: dt.datetime, value_read: pl.Expr) -> list[Check]:
    """Times before any cloud bill, or past the clock: a wrong clock, and a wrong share (the
    telemetry files' values and the sources' tables alike: pipeline.telemetry.plausible)."""
    latest = now + FUTURE_TOLERANCE
    return [
        (
            value_read < EARLIEST,
            lambda v: (
                f"{show(v)} is before {EARLIEST.date().isoformat()}, older than any cloud bill "
                "(a clock that was never set); fix the time"
            ),
        ),
        (
            value_read > latest,
            lambda v: (
                f"{show(v)} is in the future: after the run's clock "
                f"{now.isoformat(timespec='seconds')} by more than a day; fix the time "
                "(check the clock of the host that wrote it)"
            ),
        ),
    ]


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
