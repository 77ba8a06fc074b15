"""Write a query result as CSV, JSON or Parquet, in batches, with decimals kept exact."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, TextIO
from uuid import UUID

import duckdb
import pyarrow.parquet as pq

BATCH_ROWS = 10_000


def column_names(cursor: duckdb.DuckDBPyConnection) -> list[str]:
    """The result's column names, in order."""
    return [item[0] for item in cursor.description or []]


def write_csv(cursor: duckdb.DuckDBPyConnection, stream: TextIO) -> int:
    """Header and rows as CSV; decimals as written (no rounding), NULL as an empty field."""
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(column_names(cursor))
    count = 0
    for rows in _batches(cursor):
        writer.writerows([[_text(value) for value in row] for row in rows])
        count += len(rows)
    return count


def column_types(cursor: duckdb.DuckDBPyConnection) -> list[str]:
    """The result's DuckDB column types, as DuckDB spells them (DECIMAL(38,10), JSON, ...)."""
    return [str(item[1]) for item in cursor.description or []]


def write_json(cursor: duckdb.DuckDBPyConnection, stream: TextIO) -> int:
    """A JSON array of objects; decimals are JSON numbers written digit for digit."""
    keys = [json.dumps(name) for name in column_names(cursor)]
    # a JSON column (normalized.focus.Tags) is embedded as the value it holds, not as a string
    raw = [kind == "JSON" for kind in column_types(cursor)]
    count = 0
    stream.write("[")
    for rows in _batches(cursor):
        for row in rows:
            fields = ", ".join(
                f"{key}: {value if is_raw and value is not None else _json(value)}"
                for key, value, is_raw in zip(keys, row, raw, strict=True)
            )
            stream.write(("\n" if count == 0 else ",\n") + "{" + fields + "}")
            count += 1
    stream.write("\n]\n" if count else "]\n")
    return count


def write_parquet(con: duckdb.DuckDBPyConnection, query: str, path: Path) -> int:
    """A zstd Parquet file with DuckDB's types (DECIMAL stays DECIMAL); written, then renamed."""
    reader = con.sql(query).to_arrow_reader(BATCH_ROWS)
    temporary = path.with_name(f".{path.name}.partial")
    count = 0
    try:
        with pq.ParquetWriter(temporary, reader.schema, compression="zstd") as writer:
            for batch in reader:
                writer.write_batch(batch)
                count += batch.num_rows
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return count


def display_text(value: Any) -> str:
    """A value for a person to read: exact decimals with thousands separators, ISO times."""
    if value is None:
        return ""
    if isinstance(value, Decimal):
        places = max(2, -min(0, value.normalize().as_tuple().exponent))
        return f"{value:,.{places}f}"
    return _text(value)


def _batches(cursor: duckdb.DuckDBPyConnection) -> Iterator[list[tuple]]:
    while rows := cursor.fetchmany(BATCH_ROWS):
        yield rows


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, dict | list | tuple):
        return json.dumps(_plain(value))
    return str(value)


def _json(value: Any) -> str:
    if isinstance(value, Decimal) and value.is_finite():
        return format(value, "f")
    return json.dumps(_plain(value))


def _plain(value: Any) -> Any:
    # JSON has no decimal, time or map types: nested decimals become strings, maps objects
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, Decimal | UUID | timedelta | bytes):
        return str(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, float) and value != value:  # NaN is not JSON
        return None
    return value
