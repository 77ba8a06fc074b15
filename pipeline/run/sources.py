"""Register the run's inputs in DuckDB as the raw.* sources that staging models read."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.common.duck import identifier, literal
from pipeline.common.errors import InputError
from pipeline.common.money import MONEY_SQL
from pipeline.dag.macros import EXACT_DECIMAL
from pipeline.ingest.aws_cur2 import Delivery
from pipeline.warehouse.parquet import COMPRESSION
from pipeline.warehouse.undecodable import name_undecodable
from pipeline.warehouse.views import layout_path
from schemas import aws_cur2, focus, gcp_billing

TELEMETRY_TABLES = ("attempts", "attempt_resources", "attempt_events", "experiments", "gpu_usage")
ROW_GROUP_ROWS = 122_880  # DuckDB's own row group size


def register_sources(
    con: duckdb.DuckDBPyConnection,
    deliveries: Iterable[Delivery],
    telemetry: dict[str, pa.Table],
    published: Path | None = None,
) -> dict[str, Path]:
    """Create raw.aws_cur2 and raw.gcp_billing (views over the current deliveries) and the raw
    telemetry relations; the telemetry Parquet written, by published table name.

    With ``published`` (a folder in the snapshot's layout), each telemetry table is written
    there once as the Parquet the snapshot publishes (telemetry/<name>.parquet) and raw.<name>
    is a view of it; without, raw.<name> is a table of ``con``.
    """
    con.execute("create schema if not exists raw")
    deliveries = list(deliveries)
    _register_cur(con, [item for item in deliveries if item.provider == "aws"])
    _register_gcp(con, [item for item in deliveries if item.provider == "gcp"])
    register_focus(con, [item for item in deliveries if item.provider == "focus"])
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
    file_list = "[" + ", ".join(literal(item[0]) for item in files) + "]"
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


def _register_gcp(con: duckdb.DuckDBPyConnection, deliveries: list[Delivery]) -> None:
    """raw.gcp_billing: every column of the detailed export, with money as DECIMAL(38, 10).

    Files are grouped by their Arrow schema (standard or detailed table, FLOAT64 or NUMERIC
    money), each group read with its own select list; the groups are unioned. A column or
    nested field a file lacks is a typed NULL, so models build even with no GCP data at all.
    """
    files: list[tuple[str, int, str, str, str, str]] = []
    groups: dict[str, tuple[pa.Schema, list[str]]] = {}
    for delivery in sorted(deliveries, key=lambda item: (item.export, item.billing_period)):
        for path in sorted(delivery.files):
            schema = pq.read_schema(path)
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
            key = schema.remove_metadata().to_string()
            groups.setdefault(key, (schema, []))[1].append(str(path))
    con.execute(
        "create or replace table raw.gcp_billing_files (filename varchar, file_index bigint, "
        "delivery_id varchar, export_name varchar, partition_date varchar, source_file varchar)"
    )
    if files:
        con.executemany("insert into raw.gcp_billing_files values (?, ?, ?, ?, ?, ?)", files)
    selects = []
    for schema, paths in groups.values():
        try:
            columns = [
                f"{_gcp_expr('src.' + identifier(name), name, kind, _field_type(schema, name))} "
                f"as {identifier(name)}"
                for name, kind in gcp_billing.DETAILED
            ]
        except InputError as error:
            raise InputError(f"{paths[0]}: {error}") from error
        selects.append(
            "select files.file_index, files.delivery_id, files.export_name, files.partition_date,"
            " files.source_file, src.file_row_number as source_line,\n    "
            + ",\n    ".join(columns)
            + "\nfrom read_parquet(["
            + ", ".join(literal(path) for path in paths)
            + "], filename = true, file_row_number = true) as src\n"
            "inner join raw.gcp_billing_files as files on src.filename = files.filename"
        )
    if not selects:
        columns = [
            f"{_gcp_expr('', name, kind, None)} as {identifier(name)}"
            for name, kind in gcp_billing.DETAILED
        ]
        selects.append(
            "select cast(null as bigint) as file_index, cast(null as varchar) as delivery_id, "
            "cast(null as varchar) as export_name, cast(null as varchar) as partition_date, "
            "cast(null as varchar) as source_file, cast(null as bigint) as source_line,\n    "
            + ",\n    ".join(columns)
            + "\nwhere false"
        )
    con.execute("create or replace view raw.gcp_billing as\n" + "\nunion all\n".join(selects))
    _check_gcp_currencies(con)


def _check_gcp_currencies(con: duckdb.DuckDBPyConnection) -> None:
    """One invoice month of one export table is billed in one currency."""
    try:
        mixed = con.execute(
            "select export_name, invoice.month, list(distinct currency order by currency) "
            "from raw.gcp_billing group by all having count(distinct currency) > 1 order by all"
        ).fetchall()
    except duckdb.Error as error:  # the first read of the stored GCP files' pages
        name_undecodable(con, error)
        raise
    if mixed:
        export, month, currencies = mixed[0]
        raise InputError(
            f"GCP export {export}: invoice month {month} is billed in several currencies "
            f"({', '.join(currencies)}); an invoice month has one currency, so the table mixes "
            "billing accounts or was edited. Point gcp at one billing account's export table "
            "(each billing account exports to its own gcp_billing_export_*_<ACCOUNT> table)"
        )


def _field_type(schema: pa.Schema, name: str) -> pa.DataType | None:
    index = schema.get_field_index(name)
    return None if index < 0 else schema.field(index).type


def _gcp_expr(path: str, leaf: str, wanted: pa.DataType, present: pa.DataType | None) -> str:
    """A DuckDB expression reading ``path`` (of Arrow type ``present``) as ``wanted``."""
    if present is None:
        return f"cast(null as {_duck_type(wanted, leaf)})"
    if pa.types.is_struct(wanted):
        if not pa.types.is_struct(present):
            raise InputError(f"column {leaf} is {present}, not a RECORD (struct)")
        parts = []
        for field in wanted:
            index = present.get_field_index(field.name)
            inner = None if index < 0 else present.field(index).type
            name = f"{leaf}.{field.name}"
            parts.append(
                f"{literal(field.name)}: "
                f"{_gcp_expr(f'{path}.{identifier(field.name)}', name, field.type, inner)}"
            )
        return f"case when {path} is null then null else {{{', '.join(parts)}}} end"
    if pa.types.is_list(wanted):
        if not pa.types.is_list(present):
            raise InputError(f"column {leaf} is {present}, not a REPEATED field (list)")
        element = f"elem_{path.count('.')}_{len(path)}"
        inner = _gcp_expr(element, leaf, wanted.value_type, present.value_type)
        return f"list_transform({path}, lambda {element}: {inner})"
    if leaf in gcp_billing.DECIMAL_LEAVES:
        if pa.types.is_floating(present):
            return EXACT_DECIMAL.expand([path], leaf)  # a FLOAT64 through its text, as CUR money
        # NUMERIC (a decimal) or text: its own digits
        return f"cast(cast({path} as varchar) as {MONEY_SQL})"
    if pa.types.is_timestamp(wanted):
        if pa.types.is_timestamp(present) and not present.tz:
            return f"timezone('UTC', {path})"  # the export's timestamps are UTC
        return f"cast({path} as timestamp with time zone)"
    return f"cast({path} as {_duck_type(wanted, leaf)})"


def _duck_type(kind: pa.DataType, leaf: str) -> str:
    if pa.types.is_struct(kind):
        fields = ", ".join(
            f"{identifier(field.name)} {_duck_type(field.type, f'{leaf}.{field.name}')}"
            for field in kind
        )
        return f"struct({fields})"
    if pa.types.is_list(kind):
        return f"{_duck_type(kind.value_type, leaf)}[]"
    if leaf in gcp_billing.DECIMAL_LEAVES:
        return MONEY_SQL
    if pa.types.is_timestamp(kind):
        return "timestamp with time zone"
    if pa.types.is_boolean(kind):
        return "boolean"
    if pa.types.is_floating(kind):
        return "double"
    return "varchar"


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
        file_list = "[" + ", ".join(literal(item[0]) for item in files) + "]"
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
