"""Merging telemetry batches in order: sources after the files, a delivery over the published
snapshot. Columnar: the rows a merge keeps are found from the key columns alone and taken from
the batches' Arrow tables, so a nightly run over millions of published attempts never turns its
rows into Python objects (docs/performance.md, session 37)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

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


def merge(batches: Iterable[tuple[str, Mapping[str, pa.Table]]]) -> dict[str, pa.Table]:
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
    stacked = {name: _stacked(batches, name) for name in TABLES}
    attempts, keys = stacked["attempts"]
    identities = _identities(attempts, keys)
    kept = _per_key(identities, "attempt_id")
    if kept.get_column("mixed").any():
        # only the attempt ids reported with two identities are searched for the first conflict
        _refuse_conflicts(
            identities.join(kept.filter("mixed"), on="attempt_id", how="semi"), labels
        )
    merged = {"attempts": _kept_rows(attempts, _in_first_order(kept))}
    for name in CHILDREN:
        table, child_keys = stacked[name]
        _refuse_unknown(name, child_keys, kept)
        merged[name] = _kept_rows(table, _last_batch_per_key(child_keys))
    experiments, experiment_keys = stacked["experiments"]
    merged["experiments"] = _kept_rows(
        experiments, _in_first_order(_per_key(experiment_keys, "experiment_id"))
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


def _stacked(
    batches: list[tuple[str, Mapping[str, pa.Table]]], name: str
) -> tuple[pa.Table, pl.DataFrame]:
    """Every batch's table of one name, one after another, and its key columns: ``pos`` (row
    in the stacked table), ``batch`` (its batch's number) and the table's key."""
    tables = [canonical(tables.get(name), name) for _, tables in batches]
    if not tables:
        tables = [empty_table(name)]
    stacked = pa.concat_tables(tables)
    key = "experiment_id" if name == "experiments" else "attempt_id"
    batch = pl.concat(
        pl.repeat(number, table.num_rows, dtype=pl.Int64, eager=True)
        for number, table in enumerate(tables)
    )
    keys = pl.DataFrame({key: pl.from_arrow(stacked.column(key)), "batch": batch})
    return stacked, keys.with_row_index("pos")


def _identities(attempts: pa.Table, keys: pl.DataFrame) -> pl.DataFrame:
    """The key columns of the attempts with each row's (source, native record) identity."""
    tags = attempts.column("tags")
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
    if "source" in keys.columns:
        mixed = (pl.col("source").min() != pl.col("source").max()) | (
            pl.col("native").min() != pl.col("native").max()
        )
        found.append(mixed.fill_null(False).alias("mixed"))
    return keys.group_by(key).agg(found)


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


def _kept_rows(table: pa.Table, rows: pl.Series) -> pa.Table:
    """The rows of ``table`` at ``rows``, in that order. Runs of consecutive rows are sliced, not
    copied: a delivery that repeats what was published (or adds to its end) keeps whole runs of
    one batch, and a copy of them would be a third set of the telemetry in memory."""
    if rows.len() == 0:
        return table.slice(0, 0)
    # where each run starts (the first row, and every row that does not follow the one before)
    starts = (rows.diff() != 1).fill_null(True).arg_true()
    if starts.len() > MAX_SLICES:
        return table.take(rows.to_arrow())
    first = starts.to_list()
    ends = [*first[1:], rows.len()]
    return pa.concat_tables(
        table.slice(rows[start], end - start) for start, end in zip(first, ends, strict=True)
    )


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
