"""Register the run's inputs in DuckDB as the raw.* sources that staging models read."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.common.duck import literal
from pipeline.ingest.registry import PROVIDERS
from pipeline.warehouse.parquet import COMPRESSION
from pipeline.warehouse.raw_store import Delivery
from pipeline.warehouse.views import layout_path

TELEMETRY_TABLES = ("attempts", "attempt_resources", "attempt_events", "experiments", "gpu_usage")
ROW_GROUP_ROWS = 122_880  # DuckDB's own row group size


def register_sources(
    con: duckdb.DuckDBPyConnection,
    deliveries: Iterable[Delivery],
    telemetry: dict[str, pa.Table],
    published: Path | None = None,
) -> dict[str, Path]:
    """Create each provider's raw.* relations (views over its current deliveries) and the raw
    telemetry relations; the telemetry Parquet written, by published table name.

    With ``published`` (a folder in the snapshot's layout), each telemetry table is written
    there once as the Parquet the snapshot publishes (telemetry/<name>.parquet) and raw.<name>
    is a view of it; without, raw.<name> is a table of ``con``.
    """
    con.execute("create schema if not exists raw")
    deliveries = list(deliveries)
    for provider in PROVIDERS:
        provider.register(con, [item for item in deliveries if item.provider == provider.name])
    written: dict[str, Path] = {}
    for name in TELEMETRY_TABLES:
        table = telemetry.get(name)
        if table is None:  # gpu_usage, when no prometheus source measured the attempts
            from pipeline.telemetry.canonical import empty_table

            table = empty_table(name)
        if published is not None:
            path = published / layout_path(f"telemetry.{name}", partitioned=False)
            write_telemetry(table, path)
            con.execute(f"create or replace view raw.{name} as {parquet_view(path)}")
            written[f"telemetry.{name}"] = path
            continue
        con.register("telemetry_input", table)
        con.execute(f"create or replace table raw.{name} as select * from telemetry_input")
        con.unregister("telemetry_input")
    return written


def write_telemetry(table: pa.Table, path: Path) -> None:
    """A canonical telemetry table as published Parquet (zstd, as the snapshot's tables are).

    pyarrow writes 600,000 attempts in a quarter of the CPU a table of the build database takes,
    and the snapshot takes the file as it is. Row groups of DuckDB's size keep the build's scans
    of it parallel.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        pq.write_table(table, path, compression=COMPRESSION, row_group_size=ROW_GROUP_ROWS)
    except OSError as error:  # pyarrow names no file; the message of a full disk does
        raise OSError(error.errno, error.strerror or str(error), str(path)) from error


def parquet_view(path: Path) -> str:
    """The select a view of one Parquet file runs."""
    return f"select * from read_parquet({literal(str(path.absolute()))})"
