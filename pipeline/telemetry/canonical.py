"""Canonical telemetry tables: types from schemas/, coercion of raw file columns (each column's
conversion in pipeline/telemetry/conversion.py), Arrow output."""

from __future__ import annotations

import datetime as dt
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import polars as pl
import pyarrow as pa

from pipeline.telemetry.conversion import (
    TAG_CONTROLS,
    UTC,
    as_text,
    control_character,
    convert,
    converted,
    is_present,
    nfc,
    show,
)
from schemas import attempt_events, attempt_resources, attempts, experiments, gpu_usage

# 1-based record number of each row in its file; kept beside the data so errors can name rows.
ROW = "__runcost_row"

DATASETS = {
    "attempts": attempts.Attempts,
    "attempt_resources": attempt_resources.AttemptResources,
    "attempt_events": attempt_events.AttemptEvents,
    "experiments": experiments.Experiments,
}
# Tables runcost derives from the canonical ones (never read from telemetry files or merged as
# they are): gpu_usage, the Prometheus source's measurement of the attempts' held GPUs.
DERIVED = {"gpu_usage": gpu_usage.GpuUsage}
REQUIRED = {
    "attempts": attempts.REQUIRED,
    "attempt_resources": attempt_resources.REQUIRED,
    "attempt_events": attempt_events.REQUIRED,
    "experiments": experiments.REQUIRED,
}

_TAGS = attempts.TAGS
_ARROW_TAGS = pa.map_(pa.string(), pa.string())
_ARROW_TYPES: dict[pl.DataType, pa.DataType] = {
    pl.String(): pa.string(),
    pl.Int64(): pa.int64(),
    pl.Float64(): pa.float64(),
    pl.Boolean(): pa.bool_(),
    UTC: pa.timestamp("us", tz="UTC"),
    _TAGS: _ARROW_TAGS,
}

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


@cache
def polars_schema(name: str) -> dict[str, pl.DataType]:
    """Canonical column -> polars type, in canonical order, from the dataset's pandera model."""
    columns = (DATASETS.get(name) or DERIVED[name]).to_schema().columns
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


def coerce(raw: pl.DataFrame, name: str, now: dt.datetime | None = None) -> Coerced:
    """Raw file columns -> every canonical column in canonical type and order, plus ROW.

    Absent columns are NULL; empty text is NULL; ids and tags are in Unicode NFC. For attempts,
    columns that are not canonical become tags, merged with a `tags` column holding a JSON
    object. ``now``: the clock no time may run past (default: now).
    """
    problems: list[Problem] = []
    unreadable: dict[str, pl.Series] = {}
    values, checks = [pl.col(ROW)], []
    for column, target in polars_schema(name).items():
        if column == "tags":
            continue
        if column not in raw.columns:
            values.append(pl.lit(None, target).alias(column))
            continue
        value, column_checks = convert(column, raw.schema[column], target, now)
        values.append(value.alias(column))
        checks += [(column, mask, describe) for mask, describe in column_checks]
    # every column converted in one select, then every check in one more (polars runs the
    # columns of a select in parallel; a select per column and check was 2x the CPU)
    frame = raw.select(values)
    # ids are compared with the bill's tags and resource ids: one spelling of each
    frame = frame.with_columns(
        nfc(frame.get_column(column))
        for column, target in polars_schema(name).items()
        if column.endswith("_id") and target == pl.String and column in raw.columns
    )
    if checks:
        work = raw.with_columns(
            frame.get_column(column).alias(converted(column).meta.output_name())
            for column in dict.fromkeys(column for column, _, _ in checks)
        )
        masks = work.select(
            mask.fill_null(False).alias(str(number)) for number, (_, mask, _) in enumerate(checks)
        )
        found = masks.select(pl.all().any()).row(0)
        for number, (column, _, describe) in enumerate(checks):
            if found[number]:
                bad = masks.get_column(str(number))
                problems.extend(rows_where(raw, bad, column, describe))
                unreadable[column] = bad | unreadable.get(column, False)
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
    long = wide.unpivot(on=keys, index=ROW, variable_name="key", value_name="value").filter(
        pl.col("value").str.len_bytes() > 0
    )
    problems.extend(_tag_controls(long))
    merged = (
        long.with_columns(nfc(long.get_column("key")), nfc(long.get_column("value")))
        .group_by(ROW, maintain_order=True)
        .agg(pl.struct("key", "value").alias("tags"))
    )
    tags = raw.select(ROW).join(merged, on=ROW, how="left", maintain_order="left")
    return tags.select(pl.col("tags").fill_null(pl.lit([], _TAGS))).to_series(), problems


def _tag_controls(long: pl.DataFrame) -> list[Problem]:
    """Tags holding a control character other than tab and line breaks (a NUL from a C string
    makes a look-alike of the attempt id the bill carries)."""
    bad = long.filter(
        pl.col("key").str.contains(TAG_CONTROLS) | pl.col("value").str.contains(TAG_CONTROLS)
    )
    problems = [
        Problem(
            (row,),
            "tags",
            f"tag {show(key)} = {show(value)} holds the control character "
            f"{control_character(key + value, TAG_CONTROLS)}; a tag with one never matches the "
            "same tag on the bill: write it without it",
        )
        for row, key, value in bad.head(ROWS_SHOWN).iter_rows()
    ]
    if bad.height > ROWS_SHOWN:
        last = problems[-1]
        problems[-1] = Problem(last.rows, last.column, last.text, bad.height - ROWS_SHOWN)
    return problems


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
    present = is_present("tags", dtype)
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
