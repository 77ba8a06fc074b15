"""Merging telemetry batches in order: sources after the files, a delivery over the published
snapshot. Columnar: the rows a merge keeps are found from the key columns alone and taken from
the batches' Arrow tables, so a nightly run over millions of published attempts never turns its
rows into Python objects. A batch's table may be deferred (the published snapshot's): only its
key columns are read unless the merge keeps its rows."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol, runtime_checkable

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.common.errors import InputError
from pipeline.telemetry.canonical import DATASETS, arrow_schema, empty_table

TABLES = tuple(DATASETS)
CHILDREN = ("attempt_resources", "attempt_events")
# above this many runs of consecutive rows, the kept rows are copied, not sliced (_kept_rows)
MAX_SLICES = 64
# an attempt row without these tags is its own canonical record
DEFAULT_SOURCE = "canonical"


@runtime_checkable
class Deferred(Protocol):
    """A canonical table read as the merge needs it: its row count, one canonical column (the
    keys and the tags), and the whole table only when some of its rows are kept."""

    num_rows: int

    def column(self, name: str) -> pa.ChunkedArray: ...

    def read(self) -> pa.Table: ...


Part = pa.Table | Deferred


def merge(batches: Iterable[tuple[str, Mapping[str, Part]]]) -> dict[str, pa.Table]:
    """Merge (label, tables) batches in order into the four canonical tables.

    Identity rules: an attempt id reported again by the same source for the same native record
    updates the attempt (the last batch wins; its resources and events replace the earlier ones
    when it has any, else the earlier ones stay); the same attempt id from a different source or
    native record is an InputError (two different attempts never merge). Experiments: last wins.
    Rows come out in the order their key first appeared, an attempt's children in their batch's
    order.
    """
    batches = list(batches)
    labels = [label for label, _ in batches]
    parts = {name: _parts(batches, name) for name in TABLES}
    keys = {name: _keys(parts[name], name) for name in TABLES}
    identities = _identities(parts["attempts"], keys["attempts"])
    kept = _per_key(identities, "attempt_id")
    if kept.get_column("mixed").any():
        # only the attempt ids reported with two identities are searched for the first conflict
        _refuse_conflicts(
            identities.join(kept.filter("mixed"), on="attempt_id", how="semi"), labels
        )
    merged = {"attempts": _kept_rows(parts["attempts"], _in_first_order(kept), "attempts")}
    for name in CHILDREN:
        _refuse_unknown(name, keys[name], kept)
        merged[name] = _kept_rows(parts[name], _last_batch_per_key(keys[name]), name)
    experiments = _per_key(keys["experiments"], "experiment_id")
    merged["experiments"] = _kept_rows(
        parts["experiments"], _in_first_order(experiments), "experiments"
    )
    return merged


def canonical(table: pa.Table | None, name: str) -> pa.Table:
    """A table in the canonical schema: its canonical columns cast, the absent ones NULL (an
    adapter's experiments, a snapshot published before a column existed), no NULL tags."""
    schema = arrow_schema(name)
    if table is None:
        return empty_table(name)
    if table.schema == schema:
        return table
    columns = []
    for field in schema:
        if field.name in table.column_names:
            column = table.column(field.name).cast(field.type)
        else:
            column = pa.nulls(table.num_rows, field.type)
        if field.name == "tags" and column.null_count:
            column = pa.array([value or [] for value in column.to_pylist()], field.type)
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=schema)


def _parts(batches: list[tuple[str, Mapping[str, Part]]], name: str) -> list[Part]:
    """Every batch's table of one name, canonical unless deferred (at least one table)."""
    found = [tables.get(name) for _, tables in batches]
    parts = [part if isinstance(part, Deferred) else canonical(part, name) for part in found]
    return parts or [empty_table(name)]


def _keys(parts: list[Part], name: str) -> pl.DataFrame:
    """The key columns of the parts one after another: ``pos`` (row of the parts stacked),
    ``batch`` (its batch's number) and the table's key."""
    key = "experiment_id" if name == "experiments" else "attempt_id"
    batch = pl.concat(
        pl.repeat(number, part.num_rows, dtype=pl.Int64, eager=True)
        for number, part in enumerate(parts)
    )
    keys = pl.DataFrame({key: pl.from_arrow(_stacked(parts, key)), "batch": batch})
    return keys.with_row_index("pos")


def _stacked(parts: list[Part], column: str) -> pa.ChunkedArray:
    """One column of the parts, one after another."""
    columns = [part.column(column) for part in parts]
    return pa.chunked_array([chunk for found in columns for chunk in found.chunks], columns[0].type)


def _identities(attempts: list[Part], keys: pl.DataFrame) -> pl.DataFrame:
    """The key columns of the attempts with each row's (source, native record) identity."""
    tags = _stacked(attempts, "tags")
    looked_up = keys.with_columns(
        source=pl.from_arrow(pc.map_lookup(tags, pa.scalar("source"), "last")),
        native=pl.from_arrow(pc.map_lookup(tags, pa.scalar("source_native_id"), "last")),
    )
    return looked_up.with_columns(
        pl.col("source").fill_null(DEFAULT_SOURCE),
        pl.col("native").fill_null(pl.col("attempt_id")),
    )


def _refuse_conflicts(identities: pl.DataFrame, labels: list[str]) -> None:
    """The first row, in batch order, that reuses an attempt id of another source or record."""
    earlier = identities.with_columns(
        pl.col("source", "native", "batch").shift().over("attempt_id").name.prefix("was_"),
        pl.int_range(pl.len()).over("attempt_id").alias("seen"),
    )
    conflicts = earlier.filter(
        (pl.col("seen") > 0)
        & ((pl.col("source") != pl.col("was_source")) | (pl.col("native") != pl.col("was_native")))
    )
    if conflicts.height == 0:
        return
    row = conflicts.sort("pos").row(0, named=True)
    raise InputError(
        f"{labels[row['batch']]}: attempt id {row['attempt_id']!r} ({row['source']} record "
        f"{row['native']!r}) is already used by {labels[row['was_batch']]} ({row['was_source']} "
        f"record {row['was_native']!r}); two different attempts never merge: give one of them "
        "another attempt id tag (or drop the attempt id tag option so runcost prefixes the "
        "source's own id)"
    )


def _per_key(keys: pl.DataFrame, key: str) -> pl.DataFrame:
    """One row per key: where it first appeared, its last row and, for attempts (with their
    identities), whether its rows name more than one source or native record."""
    found = [pl.col("pos").min().alias("first"), pl.col("pos").max().alias("last")]
    if "source" not in keys.columns:
        return keys.group_by(key).agg(found)
    # an attempt in at most two rows (a delivery over the published snapshot) is mixed when its
    # first and last identities differ: taking them costs a third of comparing text for a min
    # and a max (0.25 against 0.7 CPU s for 1.2M rows); only
    # the keys in more rows are compared over all of them
    identity = pl.col("source", "native")
    per_key = keys.group_by(key).agg(
        *found,
        pl.len().alias("rows"),
        identity.first().name.prefix("first_"),
        identity.last().name.prefix("last_"),
    )
    mixed = (pl.col("first_source") != pl.col("last_source")) | (
        pl.col("first_native") != pl.col("last_native")
    )
    many = per_key.filter(pl.col("rows") > 2).select(key)
    if many.height:
        spread = (
            keys.join(many, on=key, how="semi")
            .group_by(key)
            .agg(
                (
                    (pl.col("source").min() != pl.col("source").max())
                    | (pl.col("native").min() != pl.col("native").max())
                ).alias("spread")
            )
        )
        per_key = per_key.join(spread, on=key, how="left")
        mixed = mixed | pl.col("spread").fill_null(False)
    return per_key.select(key, "first", "last", mixed.alias("mixed"))


def _in_first_order(kept: pl.DataFrame) -> pl.Series:
    """The rows to keep, the last of each key, in the order the keys first appeared."""
    return kept.sort("first").get_column("last")


def _last_batch_per_key(keys: pl.DataFrame) -> pl.Series:
    """An attempt's children from the last batch that has any: in the order the attempts first
    had children, each attempt's in its batch's order."""
    kept = keys.with_columns(
        first=pl.col("pos").min().over("attempt_id"),
        last_batch=pl.col("batch").max().over("attempt_id"),
    ).filter(pl.col("batch") == pl.col("last_batch"))
    return kept.sort("first", "pos").get_column("pos")


def _kept_rows(parts: list[Part], rows: pl.Series, name: str) -> pa.Table:
    """The rows at ``rows`` (positions in the parts stacked), in that order; a deferred part is
    read only when some of its rows are kept. Runs of consecutive rows of one part are sliced,
    not copied: a delivery that repeats what was published (or adds to its end) keeps whole runs
    of one batch, and a copy of them would be a third set of the telemetry in memory."""
    if rows.len() == 0:
        return empty_table(name)
    offsets = [0]
    for part in parts:
        offsets.append(offsets[-1] + part.num_rows)
    batch = pl.Series(offsets[1:]).search_sorted(rows, side="right")
    loaded = {number: _read(parts[number]) for number in batch.unique().to_list()}
    # where each run starts: the first row, every row that does not follow the one before, and
    # every row of another part than the row before
    starts = ((rows.diff() != 1) | (batch.diff() != 0)).fill_null(True).arg_true()
    if starts.len() > MAX_SLICES:
        used = sorted(loaded)
        stacked = pa.concat_tables(loaded[number] for number in used)
        # each kept row's position in the used parts stacked
        shift = [0] * len(parts)
        position = 0
        for number in used:
            shift[number] = offsets[number] - position
            position += parts[number].num_rows
        return stacked.take((rows - pl.Series(shift).gather(batch)).to_arrow())
    first = starts.to_list()
    ends = [*first[1:], rows.len()]
    return pa.concat_tables(
        loaded[batch[start]].slice(rows[start] - offsets[batch[start]], end - start)
        for start, end in zip(first, ends, strict=True)
    )


def _read(part: Part) -> pa.Table:
    return part.read() if isinstance(part, Deferred) else part


def _refuse_unknown(name: str, child_keys: pl.DataFrame, attempts: pl.DataFrame) -> None:
    """Children must name an attempt some batch reports (``attempts``: one row per id)."""
    unknown = (
        child_keys.select("attempt_id")
        .join(attempts.select("attempt_id"), on="attempt_id", how="anti")
        .get_column("attempt_id")
        .unique()
        .to_list()
    )
    if unknown:
        unknown = sorted(unknown)
        shown = ", ".join(map(repr, unknown[:5]))
        raise InputError(
            f"telemetry: {name} name attempt(s) no source reports ({shown}"
            f"{f' and {len(unknown) - 5} more' if len(unknown) > 5 else ''}); add the "
            "attempts or remove the rows"
        )
