"""Canonical telemetry tables: types from schemas/, coercion of raw file columns, Arrow output."""

from __future__ import annotations

import datetime as dt
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import polars as pl
import pyarrow as pa

from schemas import attempt_events, attempt_resources, attempts, experiments

# 1-based record number of each row in its file; kept beside the data so errors can name rows.
ROW = "__runcost_row"

DATASETS = {
    "attempts": attempts.Attempts,
    "attempt_resources": attempt_resources.AttemptResources,
    "attempt_events": attempt_events.AttemptEvents,
    "experiments": experiments.Experiments,
}
REQUIRED = {
    "attempts": attempts.REQUIRED,
    "attempt_resources": attempt_resources.REQUIRED,
    "attempt_events": attempt_events.REQUIRED,
    "experiments": experiments.REQUIRED,
}

_UTC = pl.Datetime("us", "UTC")
_TAGS = attempts.TAGS
_ARROW_TAGS = pa.map_(pa.string(), pa.string())
_ARROW_TYPES: dict[pl.DataType, pa.DataType] = {
    pl.String(): pa.string(),
    pl.Int64(): pa.int64(),
    pl.Float64(): pa.float64(),
    pl.Boolean(): pa.bool_(),
    _UTC: pa.timestamp("us", tz="UTC"),
    _TAGS: _ARROW_TAGS,
}

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
# At most this many rows are named per problem; the rest are counted.
ROWS_SHOWN = 5


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a file: where (rows, column) and what to do about it."""

    rows: tuple[int, ...]
    column: str | None
    text: str
    more: int = 0

    def render(self) -> str:
        """``row 3, column status: <text>`` (and how many more rows have the same problem)."""
        where = []
        if self.rows:
            numbers = [str(row) for row in self.rows]
            listed = numbers[0] if len(numbers) == 1 else ", ".join(numbers[:-1])
            if len(numbers) > 1:
                listed += f" and {numbers[-1]}"
            where.append(f"row{'s' if len(numbers) > 1 else ''} {listed}")
        if self.column is not None:
            where.append(f"column {self.column}")
        more = f" ({self.more} more row(s) have the same problem)" if self.more else ""
        return f"{', '.join(where)}: {self.text}{more}" if where else self.text + more


def show(value: object) -> str:
    """A value as an error message quotes it: strings in quotes with escapes, times in ISO 8601."""
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    return str(value)


@cache
def polars_schema(name: str) -> dict[str, pl.DataType]:
    """Canonical column -> polars type, in canonical order, from the dataset's pandera model."""
    columns = DATASETS[name].to_schema().columns
    return {column: spec.dtype.type for column, spec in columns.items()}


def arrow_schema(name: str) -> pa.Schema:
    """The canonical Arrow schema of a telemetry dataset (tags as map<string, string>)."""
    return pa.schema([(c, _ARROW_TYPES[t]) for c, t in polars_schema(name).items()])


def empty_table(name: str) -> pa.Table:
    """A table with no rows and the canonical schema (for an optional dataset with no file)."""
    return arrow_schema(name).empty_table()


def to_arrow(frame: pl.DataFrame, name: str) -> pa.Table:
    """The canonical columns of a coerced frame as an Arrow table with the canonical schema."""
    schema = arrow_schema(name)
    arrays = []
    for field in schema:
        array = frame.get_column(field.name).to_arrow()
        if field.type == _ARROW_TAGS:
            pairs = pa.list_(pa.struct([("key", pa.string()), ("value", pa.string())]))
            array = array.cast(pairs)
            arrays.append(
                pa.MapArray.from_arrays(
                    array.offsets, array.values.field("key"), array.values.field("value")
                )
            )
        else:
            arrays.append(array.cast(field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


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


def _present(column: str, dtype: pl.DataType) -> pl.Expr:
    col = pl.col(column)
    if dtype == pl.String:
        return col.str.strip_chars().str.len_bytes().fill_null(0) > 0
    return col.is_not_null()


# A check on a raw column: rows where `mask` holds get `describe(raw value)` as their problem.
# `mask` may use CONVERTED, the converted value, so the conversion is not computed twice.
Check = tuple[pl.Expr, Callable[[object], str]]
# A metric may be NaN (a diverged loss); every other number must be finite.
MAY_BE_NAN = frozenset({"metric_value"})
CONVERTED = pl.col("__runcost_converted")


def convert(column: str, dtype: pl.DataType, target: pl.DataType) -> tuple[pl.Expr, list[Check]]:
    """The expression turning a raw column into its canonical type, and its value checks."""
    col = pl.col(column)
    text = as_text(column, dtype)
    if text is None:
        kind = "text" if target == pl.String else str(target).lower()
        return pl.lit(None, target), [
            (col.is_not_null(), lambda v: f"{dtype} values cannot be read as {kind}; write {kind}")
        ]
    present = _present(column, dtype)
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
        return value, [(present & CONVERTED.is_null(), _fix("is not a whole number", "8"))]
    if target == pl.Float64:
        value = number.cast(pl.Float64, strict=False)
        if column in MAY_BE_NAN:
            return value, [(present & CONVERTED.is_null(), _fix("is not a number", "0.93"))]
        # a NaN vcpu_count would fail far away, in allocation: refused here, and read as NULL
        odd = (value.is_nan() | value.is_infinite()).fill_null(False)
        finite = _fix("is not a finite number (NaN and Infinity are not counts or sizes)", "4")
        return pl.when(~odd).then(value), [
            (present & CONVERTED.is_null() & ~odd, _fix("is not a number", "0.93")),
            (odd, finite),
        ]
    if target == pl.Boolean:
        if dtype == pl.Boolean:
            value = col
        else:
            words = text.str.strip_chars().str.to_lowercase()
            value = pl.when(words.is_in(_TRUE)).then(True).when(words.is_in(_FALSE)).then(False)
        return value, [(present & CONVERTED.is_null(), _fix("is not true or false", "true"))]
    if target == _UTC:
        return _timestamp(column, dtype, text, present)
    raise AssertionError(f"no conversion to {target}")


def _fix(what: str, example: str) -> Callable[[object], str]:
    return lambda value: f"{show(value)} {what}; write a value such as {example}"


def _timestamp(
    column: str, dtype: pl.DataType, text: pl.Expr, present: pl.Expr
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
        return pl.lit(None, _UTC), [(col.is_not_null(), lambda v: f"{show(v)} {describe}")]
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
            present & ~naive & CONVERTED.is_null(),
            lambda v: (
                f"{show(v)} is not a timestamp; write ISO 8601 with a time zone, "
                "such as 2026-10-01T10:00:00Z"
            ),
        ),
    ]


def rows_where(
    raw: pl.DataFrame, bad: pl.Series, column: str, describe: Callable[[object], str]
) -> list[Problem]:
    """One problem per row where `bad` holds (the first ROWS_SHOWN; the rest are counted)."""
    found = raw.select(ROW, pl.col(column).alias("value")).filter(bad)
    problems = [
        Problem((row,), column, describe(value))
        for row, value in found.head(ROWS_SHOWN).iter_rows()
    ]
    if found.height > ROWS_SHOWN:
        last = problems[-1]
        problems[-1] = Problem(last.rows, last.column, last.text, found.height - ROWS_SHOWN)
    return problems


@dataclass
class Coerced:
    """A file's rows in canonical columns and types, and what could not be read."""

    frame: pl.DataFrame  # ROW, then every canonical column in canonical order
    problems: list[Problem]
    unreadable: dict[str, pl.Series]  # column -> rows whose value could not be read (now NULL)


def coerce(raw: pl.DataFrame, name: str) -> Coerced:
    """Raw file columns -> every canonical column in canonical type and order, plus ROW.

    Absent columns are NULL; empty text is NULL. For attempts, columns that are not canonical
    become tags, merged with a `tags` column holding a JSON object.
    """
    problems: list[Problem] = []
    unreadable: dict[str, pl.Series] = {}
    exprs = [pl.col(ROW)]
    for column, target in polars_schema(name).items():
        if column == "tags":
            continue
        if column not in raw.columns:
            exprs.append(pl.lit(None, target).alias(column))
            continue
        value, checks = convert(column, raw.schema[column], target)
        converted = raw.select(value).to_series().alias(column)
        exprs.append(converted)
        work = raw.with_columns(converted.alias(CONVERTED.meta.output_name()))
        for mask, describe in checks:
            bad = work.select(mask.fill_null(False)).to_series()
            if bad.any():
                problems.extend(rows_where(raw, bad, column, describe))
                unreadable[column] = bad | unreadable.get(column, False)
    frame = raw.select(exprs)
    if "tags" in polars_schema(name):
        tags, tag_problems = build_tags(raw, name)
        problems.extend(tag_problems)
        frame = frame.with_columns(tags)
    return Coerced(frame.select(ROW, *polars_schema(name)), problems, unreadable)


def build_tags(raw: pl.DataFrame, name: str) -> tuple[pl.Series, list[Problem]]:
    """attempts.tags: the `tags` column's JSON object merged with the non-canonical columns.

    Keys are sorted; NULL and empty values are left out; a row without tags gets an empty list.
    """
    problems: list[Problem] = []
    wide = raw.select(ROW)
    if "tags" in raw.columns:
        wide, problems = _tags_column(raw)
    for column in raw.columns:
        if column in polars_schema(name) or column == ROW:
            continue
        text = as_text(column, raw.schema[column])
        if text is None:
            problems.append(
                Problem((), column, f"{raw.schema[column]} values cannot be tags; write text")
            )
            continue
        value = raw.select(text.alias(column)).to_series()
        if column in wide.columns:
            pair = wide.select(ROW, tagged=pl.col(column), value=value)
            differ = (pl.col("value") != pl.col("tagged")).fill_null(False)
            conflicts = pair.filter(differ).head(ROWS_SHOWN)
            problems.extend(
                Problem(
                    (row,),
                    column,
                    f"{show(given)} in column {column} but {show(tagged)} under key {column} "
                    "in the tags column; make them agree or drop one",
                )
                for row, tagged, given in conflicts.iter_rows()
            )
            value = pl.coalesce(value, wide.get_column(column))
        wide = wide.with_columns(value.alias(column))
    keys = sorted(column for column in wide.columns if column != ROW)
    if not keys:
        return pl.Series("tags", [[]] * raw.height, dtype=_TAGS), problems
    # unpivot lays the keys out one after another and a group keeps its rows' order, so each
    # row's list comes out sorted by key.
    merged = (
        wide.unpivot(on=keys, index=ROW, variable_name="key", value_name="value")
        .filter(pl.col("value").str.len_bytes() > 0)
        .group_by(ROW, maintain_order=True)
        .agg(pl.struct("key", "value").alias("tags"))
    )
    tags = raw.select(ROW).join(merged, on=ROW, how="left", maintain_order="left")
    return tags.select(pl.col("tags").fill_null(pl.lit([], _TAGS))).to_series(), problems


def _tags_column(raw: pl.DataFrame) -> tuple[pl.DataFrame, list[Problem]]:
    """The `tags` column as ROW plus one String column per key: a Parquet map or struct, or JSON."""
    dtype = raw.schema["tags"]
    if isinstance(dtype, pl.Map):
        pairs = pl.List(pl.Struct({"key": dtype.key, "value": dtype.value}))
        raw = raw.with_columns(pl.col("tags").cast(pairs))
        dtype = pairs
    if (
        isinstance(dtype, pl.List)
        and isinstance(dtype.inner, pl.Struct)
        and [field.name for field in dtype.inner.fields] == ["key", "value"]
    ):
        long = raw.select(ROW, "tags").explode("tags").unnest("tags").drop_nulls("key")
        long = long.select(ROW, pl.col("key", "value").cast(pl.String))
        if long.height == 0:
            return raw.select(ROW), []
        wide = long.pivot(on="key", index=ROW, values="value", aggregate_function="last")
        return raw.select(ROW).join(wide, on=ROW, how="left", maintain_order="left"), []
    if isinstance(dtype, pl.Struct):
        return _as_text_columns(raw.select(ROW, pl.col("tags").struct.unnest())), []
    text = as_text("tags", dtype)
    if text is None:
        problem = Problem((), "tags", f"{dtype} cannot hold tags; write map<string, string>")
        return raw.select(ROW), [problem]
    present = _present("tags", dtype)
    compact = text.str.json_path_match("$")
    is_object = (
        text.str.strip_chars_start().str.starts_with("{") & compact.is_not_null()
    ).fill_null(False)
    problems = rows_where(
        raw,
        raw.select(present & ~is_object).to_series(),
        "tags",
        lambda v: (
            f"{show(v)} is not a JSON object; write tags as a JSON object such as "
            '{"team": "vision"}, or leave the cell empty'
        ),
    )
    if raw.height == 0:
        return raw.select(ROW), problems
    lines = raw.select(pl.when(present & is_object).then(compact).otherwise(pl.lit("{}")))
    wide = _json_objects(lines.to_series()).with_columns(raw.get_column(ROW))
    return _as_text_columns(wide), problems


def _json_objects(objects: pl.Series) -> pl.DataFrame:
    """Compact JSON objects -> one String column per key (nested values stay JSON text)."""
    data = objects.str.join("\n").item().encode()
    try:
        keys = pl.read_ndjson(io.BytesIO(data), infer_schema_length=None).columns
    except (pl.exceptions.ComputeError, pl.exceptions.SchemaError):
        # Nested values of different shapes under one key defeat polars' inference.
        keys = list({key: None for text in objects.unique() for key in json.loads(text)})
    if not keys:
        return pl.DataFrame(height=objects.len())
    return pl.read_ndjson(io.BytesIO(data), schema=dict.fromkeys(keys, pl.String))


def _as_text_columns(wide: pl.DataFrame) -> pl.DataFrame:
    texts = [pl.col(ROW)]
    for key in wide.columns:
        if key != ROW:
            text = as_text(key, wide.schema[key])
            texts.append((pl.lit(None, pl.String) if text is None else text).alias(key))
    return wide.select(texts)
