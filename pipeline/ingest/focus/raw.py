"""raw.focus_billing: the FOCUS deliveries' typed rows."""

from __future__ import annotations

import duckdb
import pyarrow.parquet as pq

from pipeline.common.duck import literal
from pipeline.ingest.provider import register_files
from pipeline.warehouse.raw_store import Delivery
from schemas import focus


def register_focus(con: duckdb.DuckDBPyConnection, deliveries: list[Delivery]) -> None:
    """raw.focus_billing: the FOCUS deliveries' typed rows (every known column, NULL if absent)."""
    files = register_files(con, "raw.focus_billing_files", deliveries)
    present: set[str] = set()
    for path in files:
        present.update(pq.read_schema(path).names)
    columns = [
        f'cast(focus."{name}" as {focus.DUCKDB_TYPES[kind]}) as "{name}"'
        if name in present
        else f'cast(null as {focus.DUCKDB_TYPES[kind]}) as "{name}"'
        for name, kind in focus.KINDS.items()
    ]
    if files:
        file_list = "[" + ", ".join(literal(str(path)) for path in files) + "]"
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
