"""DuckDB and Arrow column types as Spark types: the explicit schemas of Spark's inputs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa

from pipeline.common.errors import ModelError

_SCALARS = {
    "varchar": "string",
    "blob": "binary",
    "boolean": "boolean",
    "tinyint": "tinyint",
    "smallint": "smallint",
    "integer": "int",
    "bigint": "bigint",
    # no 128-bit integer in Spark: the widest exact integer (transpile.hugeint_as_decimal)
    "hugeint": "decimal(38, 0)",
    "float": "float",
    "double": "double",
    "date": "date",
    "timestamp with time zone": "timestamp",
    "timestamp": "timestamp_ntz",
    "null": "string",  # an untyped NULL column: any type reads it
}


def spark_path(path: str | Path) -> str:
    """A path for Spark: a local one as file://..., so a cluster whose default filesystem is
    HDFS (YARN on EMR, Dataproc) does not look for it there; a URL (s3a://...) as it is."""
    text = str(path)
    if "://" in text:
        return text
    return "file://" + os.path.abspath(text)  # not as_uri(): Hadoop would quote its %20 again


def spark_type(kind: Any) -> str:
    """A DuckDBPyType (``relation.types``) as a Spark SQL type, such as ``decimal(38, 10)``."""
    family = str(kind.id)
    if family == "decimal":
        sizes = dict(kind.children)
        return f"decimal({sizes['precision']}, {sizes['scale']})"
    if family == "list":
        return f"array<{spark_type(kind.child)}>"
    if family == "map":
        return f"map<{spark_type(kind.key)}, {spark_type(kind.value)}>"
    if family == "struct":
        fields = ", ".join(f"`{name}`: {spark_type(child)}" for name, child in kind.children)
        return f"struct<{fields}>"
    name = str(kind).lower().strip('"')
    if name in _SCALARS:
        return _SCALARS[name]
    raise ModelError(
        f"the DuckDB type {kind} has no Spark equivalent in runcost's Spark engine; "
        "keep input and model columns to VARCHAR, BOOLEAN, integers, DOUBLE, DECIMAL, DATE, "
        "TIMESTAMP, lists, maps and structs"
    )


def relation_fields(relation: Any) -> list[tuple[str, str]]:
    """A DuckDB relation's (column, Spark type) pairs."""
    return [
        (str(name), spark_type(kind))
        for name, kind in zip(relation.columns, relation.types, strict=True)
    ]


def relation_schema(relation: Any) -> str:
    """A DuckDB relation's columns as a Spark DDL schema: ``a string, b decimal(38, 10)``."""
    return ", ".join(f"`{name}` {kind}" for name, kind in relation_fields(relation))


def arrow_spark_type(kind: pa.DataType) -> str:
    """A Parquet file's Arrow column type as the Spark type to read it as."""
    if pa.types.is_struct(kind):
        fields = ", ".join(f"`{field.name}`: {arrow_spark_type(field.type)}" for field in kind)
        return f"struct<{fields}>"
    if pa.types.is_map(kind):
        return f"map<{arrow_spark_type(kind.key_type)}, {arrow_spark_type(kind.item_type)}>"
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return f"array<{arrow_spark_type(kind.value_type)}>"
    if pa.types.is_decimal(kind):
        return f"decimal({kind.precision}, {kind.scale})"
    if pa.types.is_timestamp(kind):
        return "timestamp" if kind.tz else "timestamp_ntz"
    if pa.types.is_dictionary(kind):
        return arrow_spark_type(kind.value_type)
    for test, name in (
        (pa.types.is_boolean, "boolean"),
        (pa.types.is_int8, "tinyint"),
        (pa.types.is_int16, "smallint"),
        (pa.types.is_int32, "int"),
        (pa.types.is_int64, "bigint"),
        (pa.types.is_float32, "float"),
        (pa.types.is_float64, "double"),
        (pa.types.is_date32, "date"),
        (pa.types.is_string, "string"),
        (pa.types.is_large_string, "string"),
        (pa.types.is_binary, "binary"),
        (pa.types.is_null, "string"),
    ):
        if test(kind):
            return name
    raise ModelError(f"a Parquet column of type {kind} cannot be read by Spark as it is")


def arrow_schema(schema: pa.Schema) -> str:
    """A Parquet file's schema as a Spark DDL schema."""
    return ", ".join(f"`{field.name}` {arrow_spark_type(field.type)}" for field in schema)
