"""BigQuery types and values for the local endpoint: schema to Arrow, rows in, REST f/v out."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa

_SCALARS: dict[str, pa.DataType] = {
    "STRING": pa.string(),
    "INTEGER": pa.int64(),
    "INT64": pa.int64(),
    "FLOAT": pa.float64(),
    "FLOAT64": pa.float64(),
    "NUMERIC": pa.decimal128(38, 9),
    "BIGNUMERIC": pa.decimal128(38, 18),
    "BOOLEAN": pa.bool_(),
    "BOOL": pa.bool_(),
    "TIMESTAMP": pa.timestamp("us", tz="UTC"),
    "DATETIME": pa.timestamp("us"),
    "DATE": pa.date32(),
}
_STANDARD_SQL = {"INTEGER": "INT64", "FLOAT": "FLOAT64", "BOOLEAN": "BOOL", "RECORD": "STRUCT"}
_LEGACY = {"INT64": "INTEGER", "FLOAT64": "FLOAT", "BOOL": "BOOLEAN", "STRUCT": "RECORD"}


def normalize_schema(schema: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A schema in the REST API's own spelling: legacy type names, a mode on every field."""
    fields = []
    for item in schema:
        kind = item["type"].upper()
        answer: dict[str, Any] = {
            "name": item["name"],
            "type": _LEGACY.get(kind, kind),
            "mode": item.get("mode", "NULLABLE").upper(),
        }
        if item.get("fields"):
            answer["fields"] = normalize_schema(item["fields"])
        fields.append(answer)
    return fields


def arrow_type(item: dict[str, Any]) -> pa.DataType:
    """The Arrow type of one BigQuery schema field (REPEATED is a list, RECORD a struct)."""
    kind = item["type"].upper()
    if kind in ("RECORD", "STRUCT"):
        inner: pa.DataType = pa.struct(
            [pa.field(child["name"], arrow_type(child)) for child in item["fields"]]
        )
    else:
        inner = _SCALARS[kind]
    return pa.list_(inner) if item.get("mode") == "REPEATED" else inner


def decode_schema_type(item: dict[str, Any]) -> str:
    """The GoogleSQL type name INFORMATION_SCHEMA shows, e.g. ARRAY<STRUCT<key STRING, ...>>."""
    kind = item["type"].upper()
    if kind in ("RECORD", "STRUCT"):
        inner = ", ".join(
            f"{child['name']} {decode_schema_type(child)}" for child in item["fields"]
        )
        name = f"STRUCT<{inner}>"
    else:
        name = _STANDARD_SQL.get(kind, kind)
    return f"ARRAY<{name}>" if item.get("mode") == "REPEATED" else name


def coerce_row(row: dict[str, Any], schema: list[dict[str, Any]]) -> dict[str, Any]:
    """One export row as Python values Arrow takes: JSON text values (as an NDJSON extract has
    them) become numbers, decimals and datetimes; absent fields are NULL."""
    return {item["name"]: _coerce(row.get(item["name"]), item) for item in schema}


def _coerce(value: Any, item: dict[str, Any]) -> Any:
    if item.get("mode") == "REPEATED":
        return [_coerce_one(element, item) for element in (value or [])]
    return _coerce_one(value, item)


def _coerce_one(value: Any, item: dict[str, Any]) -> Any:
    if value is None:
        return None
    kind = item["type"].upper()
    if kind in ("RECORD", "STRUCT"):
        return {child["name"]: _coerce(value.get(child["name"]), child) for child in item["fields"]}
    if kind in ("FLOAT", "FLOAT64"):
        return float(value)
    if kind in ("INTEGER", "INT64"):
        return int(value)
    if kind in ("NUMERIC", "BIGNUMERIC"):
        return Decimal(str(value))
    if kind in ("BOOLEAN", "BOOL"):
        return value if isinstance(value, bool) else str(value).lower() == "true"
    if kind == "TIMESTAMP":
        return timestamp(value)
    if kind == "DATE":
        return value if isinstance(value, date) else date.fromisoformat(str(value))
    return str(value)


def timestamp(value: Any) -> datetime:
    """A TIMESTAMP from a datetime, epoch seconds, or text like '2026-11-01 05:00:00 UTC'."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, tz=UTC)
    text = str(value).strip().replace(" UTC", "+00:00").replace("Z", "+00:00")
    parsed = datetime.fromisoformat(text)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def field_type(kind: pa.DataType) -> tuple[str, str, list[pa.Field]]:
    """(BigQuery type, mode, child fields) of an Arrow type in a query result."""
    if pa.types.is_list(kind):
        inner, _mode, fields = field_type(kind.value_type)
        return inner, "REPEATED", fields
    if pa.types.is_struct(kind):
        return "RECORD", "NULLABLE", [kind.field(index) for index in range(kind.num_fields)]
    if pa.types.is_timestamp(kind):
        return ("TIMESTAMP" if kind.tz else "DATETIME"), "NULLABLE", []
    if pa.types.is_decimal(kind):
        return ("NUMERIC" if kind.scale <= 9 else "BIGNUMERIC"), "NULLABLE", []
    for test, name in (
        (pa.types.is_boolean, "BOOLEAN"),
        (pa.types.is_integer, "INTEGER"),
        (pa.types.is_floating, "FLOAT"),
        (pa.types.is_date, "DATE"),
    ):
        if test(kind):
            return name, "NULLABLE", []
    return "STRING", "NULLABLE", []


def encode_value(value: Any, item: dict[str, Any]) -> Any:
    """A value in BigQuery's REST row encoding: strings, {"f": [...]} records, [{"v": ...}]
    repeats, TIMESTAMP as int64 microseconds (the client asks for useInt64Timestamp)."""
    if item.get("mode") == "REPEATED":
        inner = {**item, "mode": "NULLABLE"}
        return [{"v": encode_value(element, inner)} for element in (value or [])]
    if value is None:
        return None
    kind = item["type"]
    if kind == "RECORD":
        return {
            "f": [{"v": encode_value(value.get(child["name"]), child)} for child in item["fields"]]
        }
    if kind == "TIMESTAMP":
        delta = value - datetime(1970, 1, 1, tzinfo=UTC)
        return str((delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds)
    if kind == "DATETIME":
        return value.isoformat()
    if kind == "BOOLEAN":
        return "true" if value else "false"
    if kind == "FLOAT":
        return "NaN" if math.isnan(value) else repr(float(value))
    if kind in ("NUMERIC", "BIGNUMERIC"):
        return format(value, "f")
    if kind == "DATE":
        return value.isoformat()
    return str(value)


def schema_field(item: pa.Field) -> dict[str, Any]:
    """The BigQuery schema field of an Arrow field (as a query result, or a Parquet export)."""
    kind, mode, fields = field_type(item.type)
    answer: dict[str, Any] = {"name": item.name, "type": kind, "mode": mode}
    if fields:
        answer["fields"] = [schema_field(child) for child in fields]
    return answer
