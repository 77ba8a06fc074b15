"""A relation written as Parquet in the snapshot's layout: one file, or a hive folder per period.

Publish writes every built table this way, and the DuckDB engine writes the models that are
published straight from their query (`-- materialized: parquet`) this way during the build.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import duckdb

from pipeline.common.duck import literal
from pipeline.warehouse.snapshots import sql_path

# up to this many billing periods, a copy per period with a filter (see write_parquet)
MAX_FILTERED_PARTITIONS = 4
SAFE_PARTITION = re.compile(r"[0-9A-Za-z_-]+")
LOSSY_TYPES = {"HUGEINT": "DECIMAL(38, 0)", "UHUGEINT": "DECIMAL(38, 0)"}
COMPRESSION = "zstd"  # every Parquet file of a snapshot
# Parquet format 2 encodings (DELTA_BINARY_PACKED integers and times, DELTA_LENGTH_BYTE_ARRAY
# text beside the dictionaries, BYTE_STREAM_SPLIT floats): a 10M-line run took 2.6 CPU s less
# (writing and reading back the published tables) and its snapshot 211 MB against 245;
# DuckDB 1.1.3, pyarrow and Spark 4.3 read them
OPTIONS = f"format parquet, compression {COMPRESSION}, parquet_version 'V2'"
# the error a copy given its candidate values raises at a row of another value (write_parquet)
OUTSIDE_CANDIDATES = "runcost: a row outside the candidate partition values"


class OutsideCandidates(Exception):
    """A row of the relation has a partition value outside the candidates it was written with."""


def partition_values(con: duckdb.DuckDBPyConnection, source: str, column: str) -> list:
    """Every value of ``column`` in ``source`` as text (None for NULL), sorted; [] when empty."""
    rows = con.execute(f'select distinct "{column}"::varchar from {source}').fetchall()
    return sorted_values(row[0] for row in rows)


def sorted_values(values: Iterable[str | None]) -> list:
    """Partition values in order, NULL (None) last."""
    return sorted(values, key=lambda value: (value is None, value or ""))


def write_parquet(
    con: duckdb.DuckDBPyConnection,
    source: str,
    columns: tuple[tuple[str, str], ...],
    target: Path,
    partition_by: str | None,
    values: list | None = None,
    file_name: str | None = None,
    candidates: bool = False,
) -> int:
    """Write ``source`` (a relation, or a query in brackets) to ``target``; the rows written.

    ``partition_by``: a hive folder at ``target`` with a folder per value of that column,
    ``values`` those values when known already (a value without rows leaves no file); otherwise
    one file at ``target``. ``file_name``: the name of the files in each folder (a pass of a
    model built in passes adds its own files to the folders of the passes before it).
    ``candidates``: ``values`` are what the rows should hold, not known to be all they hold:
    a row of another value stops the copy with OutsideCandidates (some files may be written).
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    query = parquet_query(source, columns)
    if not partition_by:
        return _count(con.execute(f"copy ({query}) to '{sql_path(target)}' ({OPTIONS})"))
    # hive layout, one folder per billing period: a dashboard reads only the periods it asks for
    values = partition_values(con, source, partition_by) if values is None else values
    try:
        return _write_partitions(con, query, target, partition_by, values, file_name, candidates)
    except duckdb.Error as error:
        if candidates and OUTSIDE_CANDIDATES in str(error):
            raise OutsideCandidates(str(error)) from error
        raise


def _write_partitions(
    con: duckdb.DuckDBPyConnection,
    query: str,
    target: Path,
    partition_by: str,
    values: list,
    file_name: str | None,
    candidates: bool,
) -> int:
    column = f'"{partition_by}"'
    if len(values) > MAX_FILTERED_PARTITIONS or not all(
        value is not None and SAFE_PARTITION.fullmatch(value) for value in values
    ):
        # PARTITION_BY buffers rows per partition; flushing at one row group (not 512k rows)
        # halved peak memory at 5 M rows over 6 periods (1.1 GB -> 0.5 GB)
        con.execute("set partitioned_write_flush_threshold = 122880")
        options = (
            f"{OPTIONS}, partition_by ({partition_by}), "
            f"filename_pattern '{file_name or 'part'}_{{i}}'"
        )
        if file_name:  # the folder holds the files of the passes before
            options += ", overwrite_or_ignore true"
        if candidates:
            query = f"select * from ({query}) where {_guarded(column, values)}"
        return _count(con.execute(f"copy ({query}) to '{sql_path(target)}' ({options})"))
    # a few plain folder-name values (a night has one or two open periods): one filtered copy
    # per period writes the same layout as PARTITION_BY for a third less CPU (its per-partition
    # buffering is the cost: 5.7 -> 3.8 CPU s for 2.8 M allocation slices)
    rows = 0
    for value in values:
        folder = target / f"{partition_by}={value}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{file_name or 'part_0'}.parquet"
        this = f"{column} = ?"
        written = _count(
            con.execute(
                f"copy (select * exclude ({column}) from ({query}) where "
                f"{_guarded(column, values, this) if candidates else this}) "
                f"to '{sql_path(path)}' ({OPTIONS})",
                [value],
            )
        )
        if not written:  # a candidate period without rows in this pass
            path.unlink()
            if not any(folder.iterdir()):
                folder.rmdir()
        rows += written
    return rows


def _guarded(column: str, values: list, kept: str | None = None) -> str:
    """SQL true for the rows ``kept`` names (every row of ``values`` when None), false for the
    other rows of a value of ``values``, an error (OUTSIDE_CANDIDATES) for any other row. One
    CASE, not a conjunction DuckDB might reorder: no row is filtered out before it is looked at,
    and no query computes the values before the write (it cost 1.5 CPU s for the 10M
    benchmark's attributed slices, whose join table is built whatever the filter keeps)."""
    texts = [value for value in values if value is not None]
    known = [f"{column}::varchar in ({', '.join(literal(value) for value in texts)})"]
    known = (known if texts else []) + ([f"{column} is null"] if None in values else [])
    among = " or ".join(known) or "false"
    chosen = f"when {kept} then true when {among} then false" if kept else f"when {among} then true"
    return f"case {chosen} else error('{OUTSIDE_CANDIDATES}') end"


def parquet_query(source: str, columns: tuple[tuple[str, str], ...]) -> str:
    """``source`` with the types Parquet cannot hold cast to ones it can."""
    # Parquet has no 128-bit integer (DuckDB would write HUGEINT as DOUBLE and lose digits):
    # store it as DECIMAL(38, 0); the view casts it back
    if not any(kind in LOSSY_TYPES for _, kind in columns):
        return f"select * from {source}"
    listed = ", ".join(
        f'"{name}"::{LOSSY_TYPES[kind]} as "{name}"' if kind in LOSSY_TYPES else f'"{name}"'
        for name, kind in columns
    )
    return f"select {listed} from {source}"


def _count(cursor: duckdb.DuckDBPyConnection) -> int:
    row = cursor.fetchone()
    return int(row[0]) if row else 0
