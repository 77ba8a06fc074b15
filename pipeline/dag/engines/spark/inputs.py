"""The Spark engine's inputs: executors read the raw Parquet; small tables pass with a schema.

A raw.* view of the build database that reads Parquet (raw.aws_cur2, raw.gcp_billing,
raw.focus_billing) is rebuilt in Spark from its own DuckDB definition: each `read_parquet(...)`
becomes a Spark read of the same files with an explicit schema (their footers, read here), the
rest of the view is transpiled like a model, and the result is cast to the types DuckDB gives the
view. Every other input (configuration, telemetry, the run clock, file lists, the previous
snapshot's per-attempt costs) is a table of the build database, small, and goes to Spark over
Arrow with the explicit schema of its DuckDB columns, so an empty table is as typed as a full one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import sqlglot
from sqlglot import expressions as exp

from pipeline.common.errors import InputError
from pipeline.dag.engines.spark.schemas import (
    arrow_schema,
    relation_fields,
    relation_schema,
    spark_path,
)
from pipeline.dag.engines.spark.transpile import to_spark, view_name

INPUT_SCHEMAS = ("raw", "config")


@dataclass
class Inputs:
    """What load_inputs registered: Spark temp views, and how each input reached Spark."""

    views: list[str] = field(default_factory=list)
    config_tables: list[str] = field(default_factory=list)
    # raw view -> the Parquet files its executors read
    read_by_executors: dict[str, list[str]] = field(default_factory=dict)
    # table -> rows sent from the driver (small tables only)
    through_driver: dict[str, int] = field(default_factory=dict)


def load_inputs(session: Any, con: duckdb.DuckDBPyConnection) -> Inputs:
    """Register every raw.* and config.* relation of ``con`` as a Spark temp view."""
    relations = con.execute(
        "select table_schema, table_name, table_type from information_schema.tables "
        "where table_schema in (select unnest(?)) order by all",
        [list(INPUT_SCHEMAS)],
    ).fetchall()
    inputs = Inputs()
    later = []
    for schema, name, kind in relations:
        qualified = f"{schema}.{name}"
        if schema == "config":
            inputs.config_tables.append(qualified)
        definition = _view_sql(con, schema, name) if kind == "VIEW" else None
        if definition is not None:
            later.append((qualified, definition))  # views read the tables: register those first
            continue
        frame, rows = _from_driver(session, con, qualified)
        inputs.through_driver[qualified] = rows
        _register(inputs, frame, view_name(qualified))
    for qualified, definition in later:
        frame, files = _from_files(session, con, qualified, definition, inputs)
        inputs.read_by_executors[qualified] = files
        _register(inputs, frame, view_name(qualified))
    return inputs


def _register(inputs: Inputs, frame: Any, view: str) -> None:
    frame.createOrReplaceTempView(view)
    inputs.views.append(view)


def _view_sql(con: duckdb.DuckDBPyConnection, schema: str, name: str) -> str:
    row = con.execute(
        "select sql from duckdb_views() where schema_name = ? and view_name = ?", [schema, name]
    ).fetchall()
    return str(row[0][0])


def _from_driver(session: Any, con: duckdb.DuckDBPyConnection, qualified: str) -> tuple[Any, int]:
    """A small table over Arrow, with its DuckDB columns' Spark types (none inferred); rows."""
    relation = con.sql(f"select * from {qualified}")
    schema = relation_schema(relation)
    table = relation.to_arrow_table()
    if table.num_rows == 0:
        # Arrow with no chunks cannot be sent (ArrowInvalid on Spark Connect and clusters)
        return session.createDataFrame([], schema), 0
    return session.createDataFrame(table.combine_chunks(), schema), table.num_rows


def _from_files(
    session: Any, con: duckdb.DuckDBPyConnection, qualified: str, definition: str, inputs: Inputs
) -> tuple[Any, list[str]]:
    """The view ``qualified`` as Spark SQL over Spark reads of its Parquet files."""
    statement = sqlglot.parse_one(unwrapped_lambdas(definition), read="duckdb")
    query = statement.expression if isinstance(statement, exp.Create) else statement
    files: list[str] = []
    for index, table in enumerate(
        [table for table in query.find_all(exp.Table) if isinstance(table.this, exp.ReadParquet)]
    ):
        paths, options = _read_parquet_arguments(table.this, qualified)
        reader = f"{view_name(qualified)}__files_{index}"
        _register(inputs, read_files(session, paths, options), reader)
        table.set("this", exp.to_identifier(reader))
        files += paths
    query = utc_wall_times(query)
    frame = session.sql(to_spark(query.sql(dialect="duckdb")))
    wanted = relation_fields(con.sql(f"select * from {qualified}"))
    return frame.select(*_casts(frame, wanted)), files


def _casts(frame: Any, fields: list[tuple[str, str]]) -> list[Any]:
    """Each column cast to the Spark type of DuckDB's column (the view's SQL gives the names)."""
    from pyspark.sql.functions import col

    return [
        col(f"`{actual}`").cast(kind).alias(name)
        for actual, (name, kind) in zip(frame.columns, fields, strict=True)
    ]


def _read_parquet_arguments(call: exp.Expression, where: str) -> tuple[list[str], dict[str, bool]]:
    """The files and flags of DuckDB's stored `read_parquet(list_value(...), (flag = true))`."""
    arguments = [item.unnest() for item in call.expressions]
    listed = arguments[0].expressions if arguments else []
    if not listed or not all(isinstance(item, exp.Literal) and item.is_string for item in listed):
        raise InputError(f"{where}: read_parquet() of a file list is the only form Spark reads")
    options = {}
    for option in arguments[1:]:
        if isinstance(option, exp.EQ) and isinstance(option.expression, exp.Boolean):
            options[option.this.name.lower()] = bool(option.expression.this)
    return [str(item.this) for item in listed], options


def read_files(session: Any, paths: list[str], options: dict[str, bool]) -> Any:
    """Spark's read of ``paths`` as DuckDB's read_parquet(paths, **options) reads them.

    The schema is explicit: the files' own columns (the first type seen for a name, every
    file's columns with union_by_name), never inferred; `filename` is the path as listed and
    `file_row_number` the row's position in its file, as in DuckDB.
    """
    from pyspark.sql.functions import broadcast, col

    schemas = [pq.read_schema(path) for path in paths]  # footers only
    fields: dict[str, pa.Field] = {}
    for schema in schemas if options.get("union_by_name") else schemas[:1]:
        for item in schema:
            fields.setdefault(item.name, item)
    reader = session.read.schema(arrow_schema(pa.schema(list(fields.values()))))
    frame = reader.parquet(*[spark_path(path) for path in paths])
    columns = [col(f"`{name}`") for name in fields]
    if options.get("file_row_number"):
        columns.append(col("_metadata.row_index").alias("file_row_number"))
    if not options.get("filename"):
        return frame.select(*columns)
    frame = frame.select(*columns, col("_metadata.file_path").alias("runcost_spark_path"))
    # Spark names a file by its URI (file:/a%20b.parquet); map it back to the path DuckDB lists
    reported = [row[0] for row in frame.select("runcost_spark_path").distinct().collect()]
    names = session.createDataFrame(
        [(uri, _listed(uri, paths)) for uri in reported],
        "runcost_spark_path string, filename string",
    )
    return frame.join(broadcast(names), "runcost_spark_path").drop("runcost_spark_path")


def _listed(uri: str, paths: list[str]) -> str:
    if uri in paths:
        return uri
    parsed = urlparse(uri)
    local = os.path.normpath(unquote(parsed.path)) if parsed.scheme in ("", "file") else None
    for path in paths:
        if local is not None and os.path.normpath(os.path.abspath(path)) == local:
            return path
        if Path(path).as_uri() == uri:
            return path
    raise InputError(f"Spark read {uri}, which is not one of the files listed: {paths[:3]}")


def unwrapped_lambdas(sql: str) -> str:
    """`f(l, (lambda x: e))` -> `f(l, lambda x: e)`: DuckDB stores a view's lambdas in
    parentheses, which sqlglot does not parse."""
    out, index = [], 0
    while (start := sql.find("(lambda ", index)) >= 0:
        depth, quote, position = 0, "", start
        for position in range(start, len(sql)):
            char = sql[position]
            if quote:
                quote = "" if char == quote else quote
            elif char in "'\"":
                quote = char
            elif char == "(":
                depth += 1
            elif char == ")":
                depth -= 1
                if depth == 0:
                    break
        out.append(sql[index:start])
        out.append(unwrapped_lambdas(sql[start + 1 : position]))
        index = position + 1
    out.append(sql[index:])
    return "".join(out)


def utc_wall_times(tree: exp.Expression) -> exp.Expression:
    """`timezone('UTC', t)` of a file's naive timestamp -> `cast(t as timestamptz)`.

    Spark reads a naive Parquet timestamp as TIMESTAMP_NTZ, and the cast takes it as wall time
    in the session's zone, which is UTC (session.RESULT_SETTINGS): the same instant as DuckDB's.
    """
    for node in list(tree.find_all(exp.Anonymous)):
        if node.name.lower() != "timezone" or len(node.expressions) != 2:
            continue
        zone, value = node.expressions
        if isinstance(zone, exp.Literal) and zone.this.upper() == "UTC":
            node.replace(exp.cast(value.copy(), "timestamptz"))
    return tree
