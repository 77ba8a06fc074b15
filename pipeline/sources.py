"""Register the run's inputs in DuckDB as the raw.* sources that staging models read."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.ingest.aws_cur2 import Delivery
from schemas import aws_cur2, focus

TELEMETRY_TABLES = ("attempts", "attempt_resources", "attempt_events", "experiments")


def register_sources(
    con: duckdb.DuckDBPyConnection,
    deliveries: Iterable[Delivery],
    telemetry: dict[str, pa.Table],
) -> None:
    """Create raw.aws_cur2 (a view over the current deliveries) and the raw telemetry tables."""
    con.execute("create schema if not exists raw")
    deliveries = list(deliveries)
    _register_cur(con, [item for item in deliveries if item.provider == "aws"])
    register_focus(con, [item for item in deliveries if item.provider == "focus"])
    for name in TELEMETRY_TABLES:
        table = telemetry[name]
        con.register("telemetry_input", table)
        con.execute(f"create or replace table raw.{name} as select * from telemetry_input")
        con.unregister("telemetry_input")


def _register_cur(con: duckdb.DuckDBPyConnection, deliveries: list[Delivery]) -> None:
    files: list[tuple[str, int, str, str, str, str]] = []
    present: dict[str, pa.DataType] = {}
    for delivery in sorted(deliveries, key=lambda item: (item.export, item.billing_period)):
        for path in sorted(delivery.files):
            files.append(
                (
                    str(path),
                    len(files),
                    delivery.delivery_id,
                    delivery.export,
                    delivery.billing_period,
                    _relative_name(path, delivery.folder),
                )
            )
            for field in pq.read_schema(path):
                present.setdefault(field.name, field.type)

    con.execute(
        "create or replace table raw.aws_cur2_files (filename varchar, file_index bigint, "
        "delivery_id varchar, export_name varchar, billing_period varchar, source_file varchar)"
    )
    if files:
        con.executemany("insert into raw.aws_cur2_files values (?, ?, ?, ?, ?, ?)", files)

    columns = []
    for name, kind in aws_cur2.ALL_COLUMNS:
        wanted = aws_cur2.DUCKDB_TYPES[kind]
        if name not in present:
            columns.append(f"cast(null as {wanted}) as {name}")
        elif kind == "timestamp" and pa.types.is_timestamp(present[name]) and not present[name].tz:
            # CUR timestamps are UTC by definition; a writer that dropped the zone still meant UTC
            columns.append(f"timezone('UTC', cur.{name}) as {name}")
        else:
            columns.append(f"cast(cur.{name} as {wanted}) as {name}")
    select_list = ",\n    ".join(columns)
    file_list = "[" + ", ".join(_quote(item[0]) for item in files) + "]"
    if files:
        reader = (
            f"read_parquet({file_list}, filename = true, file_row_number = true, "
            "union_by_name = true)"
        )
    else:
        reader = "(select null as filename, 0 as file_row_number where false)"
    con.execute(
        "create or replace view raw.aws_cur2 as\n"
        f"select\n    files.file_index,\n    files.delivery_id,\n    files.export_name,\n"
        f"    files.source_file,\n    cur.file_row_number as source_line,\n    {select_list}\n"
        f"from {reader} as cur\n"
        "inner join raw.aws_cur2_files as files on cur.filename = files.filename"
    )


def register_focus(con: duckdb.DuckDBPyConnection, deliveries: list[Delivery]) -> None:
    """raw.focus_billing: the FOCUS deliveries' typed rows (every known column, NULL if absent)."""
    files: list[tuple[str, int, str, str, str]] = []
    present: set[str] = set()
    for delivery in sorted(deliveries, key=lambda item: (item.export, item.billing_period)):
        for path in sorted(delivery.files):
            where = (delivery.delivery_id, delivery.export, delivery.billing_period)
            files.append((str(path), len(files), *where))
            present.update(pq.read_schema(path).names)
    con.execute(
        "create or replace table raw.focus_billing_files (filename varchar, file_index bigint, "
        "delivery_id varchar, export_name varchar, billing_period varchar)"
    )
    if files:
        con.executemany("insert into raw.focus_billing_files values (?, ?, ?, ?, ?)", files)
    columns = [
        f'cast(focus."{name}" as {focus.DUCKDB_TYPES[kind]}) as "{name}"'
        if name in present
        else f'cast(null as {focus.DUCKDB_TYPES[kind]}) as "{name}"'
        for name, kind in focus.KINDS.items()
    ]
    if files:
        file_list = "[" + ", ".join(_quote(item[0]) for item in files) + "]"
        reader = f"read_parquet({file_list}, filename = true, union_by_name = true)"
        where = ""
    else:
        reader = "(select null as filename, 0 as runcost_source_line, '' as runcost_source_file)"
        where = "\nwhere false"
    select_list = ",\n    ".join(columns)
    con.execute(
        "create or replace view raw.focus_billing as\n"
        "select\n    files.file_index,\n    files.delivery_id,\n    files.export_name,\n"
        "    cast(focus.runcost_source_file as varchar) as source_file,\n"
        f"    cast(focus.runcost_source_line as bigint) as source_line,\n    {select_list}\n"
        f"from {reader} as focus\n"
        f"inner join raw.focus_billing_files as files on focus.filename = files.filename{where}"
    )


def _relative_name(path: Path, folder: Path) -> str:
    try:
        return str(path.relative_to(folder))
    except ValueError:
        return path.name


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
