"""raw.aws_cur2: a view over the current CUR 2.0 deliveries, every column typed by the contract."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.common.duck import literal
from pipeline.ingest.provider import register_files
from pipeline.warehouse.raw_store import Delivery
from schemas import aws_cur2


def register_cur(con: duckdb.DuckDBPyConnection, deliveries: list[Delivery]) -> None:
    files = register_files(con, "raw.aws_cur2_files", deliveries)
    present: dict[str, pa.DataType] = {}
    for path in files:
        for field in pq.read_schema(path):
            present.setdefault(field.name, field.type)

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
    file_list = "[" + ", ".join(literal(str(path)) for path in files) + "]"
    if files:
        reader = (
            f"read_parquet({file_list}, filename = true, file_row_number = true, "
            "union_by_name = true)"
        )
    else:
        reader = "(select null as filename, 0 as file_row_number where false)"
    # delivery_period: the BILLING_PERIOD the file was delivered under, which ingest checks each
    # line's bill_billing_period_start_date against (check_period); staging reads a line's period
    # from it, one value per file, instead of formatting a timestamp on every line
    con.execute(
        "create or replace view raw.aws_cur2 as\n"
        f"select\n    files.file_index,\n    files.delivery_id,\n    files.export_name,\n"
        f"    files.source_file,\n    files.billing_period as delivery_period,\n"
        f"    cur.file_row_number as source_line,\n    {select_list}\n"
        f"from {reader} as cur\n"
        "inner join raw.aws_cur2_files as files on cur.filename = files.filename"
    )
