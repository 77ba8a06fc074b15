"""raw.gcp_billing: every column of the detailed export, over the current deliveries."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.common.duck import identifier, literal
from pipeline.common.errors import InputError
from pipeline.common.money import MONEY_SQL, exact_decimal
from pipeline.ingest.provider import register_files
from pipeline.warehouse.raw_store import Delivery
from pipeline.warehouse.undecodable import name_undecodable
from schemas import gcp_billing


def register_gcp(con: duckdb.DuckDBPyConnection, deliveries: list[Delivery]) -> None:
    """raw.gcp_billing: every column of the detailed export, with money as DECIMAL(38, 10).

    Files are grouped by their Arrow schema (standard or detailed table, FLOAT64 or NUMERIC
    money), each group read with its own select list; the groups are unioned. A column or
    nested field a file lacks is a typed NULL, so models build even with no GCP data at all.
    """
    files = register_files(con, "raw.gcp_billing_files", deliveries, "partition_date")
    groups: dict[str, tuple[pa.Schema, list[str]]] = {}
    for path in files:
        schema = pq.read_schema(path)
        key = schema.remove_metadata().to_string()
        groups.setdefault(key, (schema, []))[1].append(str(path))
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
    if _as_wanted(present, wanted, leaf):
        # read as it is: a record rebuilt field by field (a list element by element) costs
        # about 0.6 CPU s per 1M rows of the benchmark's export, for the same values
        return path
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
            return exact_decimal(path)  # a FLOAT64 through its text, as CUR money
        # NUMERIC (a decimal) or text: its own digits
        return f"cast(cast({path} as varchar) as {MONEY_SQL})"
    if pa.types.is_timestamp(wanted):
        if pa.types.is_timestamp(present) and not present.tz:
            return f"timezone('UTC', {path})"  # the export's timestamps are UTC
        return f"cast({path} as timestamp with time zone)"
    return f"cast({path} as {_duck_type(wanted, leaf)})"


def _as_wanted(present: pa.DataType, wanted: pa.DataType, leaf: str) -> bool:
    """Whether DuckDB reads a column (or field) of Arrow type ``present`` as the type
    _gcp_expr makes of ``wanted``: no money or quantity (DECIMAL_LEAVES) inside, timestamps of
    a zone, records of the same fields in the same order."""
    if pa.types.is_struct(wanted):
        return (
            pa.types.is_struct(present)
            and [field.name for field in present] == [field.name for field in wanted]
            and all(
                _as_wanted(present.field(index).type, field.type, f"{leaf}.{field.name}")
                for index, field in enumerate(wanted)
            )
        )
    if pa.types.is_list(wanted):
        return pa.types.is_list(present) and _as_wanted(present.value_type, wanted.value_type, leaf)
    if leaf in gcp_billing.DECIMAL_LEAVES:
        return False
    if pa.types.is_timestamp(wanted):
        return pa.types.is_timestamp(present) and present.unit == "us" and bool(present.tz)
    if pa.types.is_string(wanted):
        return pa.types.is_string(present) or pa.types.is_large_string(present)
    return present == wanted


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
