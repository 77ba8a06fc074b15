"""The explicit Spark schemas of the Spark engine's inputs, and how raw views' reads are parsed."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
import sqlglot
from sqlglot import expressions as exp

from pipeline.common.errors import InputError, ModelError
from pipeline.dag.engines.spark.inputs import (
    _listed,
    _read_parquet_arguments,
    unwrapped_lambdas,
    utc_wall_times,
)
from pipeline.dag.engines.spark.schemas import arrow_schema, relation_schema, spark_path


def test_duckdb_columns_become_spark_types() -> None:
    con = duckdb.connect()
    relation = con.sql(
        "select 'a' as s, 1::bigint as n, 1::hugeint as h, 1.5::decimal(38, 10) as money, "
        "1.5::double as d, true as b, date '2026-03-01' as day, "
        "timestamptz '2026-03-01 00:00:00+00' as instant, timestamp '2026-03-01' as wall, "
        "map(['k'], ['v']) as tags, [1.5::decimal(38, 10)] as credits, "
        "{'name': 'x', 'amount': 2.5::decimal(38, 10)} as credit, null as nothing"
    )
    assert relation_schema(relation) == (
        "`s` string, `n` bigint, `h` decimal(38, 0), `money` decimal(38, 10), `d` double, "
        "`b` boolean, `day` date, `instant` timestamp, `wall` timestamp_ntz, "
        "`tags` map<string, string>, `credits` array<decimal(38, 10)>, "
        "`credit` struct<`name`: string, `amount`: decimal(38, 10)>, `nothing` string"
    )


def test_a_duckdb_type_spark_lacks_is_named() -> None:
    relation = duckdb.connect().sql("select interval 1 hour as gap")
    with pytest.raises(ModelError, match="the DuckDB type INTERVAL has no Spark equivalent"):
        relation_schema(relation)


def test_parquet_columns_become_spark_types() -> None:
    schema = pa.schema(
        [
            ("naive", pa.timestamp("us")),
            ("utc", pa.timestamp("us", tz="UTC")),
            ("money", pa.decimal128(38, 10)),
            ("labels", pa.list_(pa.struct([("key", pa.string()), ("value", pa.string())]))),
            ("tags", pa.map_(pa.string(), pa.float64())),
            ("kind", pa.dictionary(pa.int32(), pa.string())),
        ]
    )
    assert arrow_schema(schema) == (
        "`naive` timestamp_ntz, `utc` timestamp, `money` decimal(38, 10), "
        "`labels` array<struct<`key`: string, `value`: string>>, `tags` map<string, double>, "
        "`kind` string"
    )


def test_a_stored_read_parquet_gives_its_files_and_flags(tmp_path: Path) -> None:
    """DuckDB stores a view's read_parquet as list_value(...) and parenthesized flags."""
    con = duckdb.connect()
    first, second = tmp_path / "a b.parquet", tmp_path / "c.parquet"
    for path in (first, second):
        con.execute(f"copy (select 1 as x) to '{path}' (format parquet)")
    con.execute(
        f"create view v as select * from read_parquet(['{first}', '{second}'], filename = true, "
        "union_by_name = true) as cur"
    )
    stored = con.execute("select sql from duckdb_views() where view_name = 'v'").fetchall()[0][0]
    call = next(
        table.this
        for table in sqlglot.parse_one(stored, read="duckdb").find_all(exp.Table)
        if isinstance(table.this, exp.ReadParquet)
    )
    assert _read_parquet_arguments(call, "raw.v") == (
        [str(first), str(second)],
        {"filename": True, "union_by_name": True},
    )


def test_spark_file_uris_map_back_to_the_listed_paths() -> None:
    paths = ["/w/raw/aws/BILLING_PERIOD=2026-03/a b.parquet", "/w/raw/aws/c+d.parquet"]
    assert _listed("file:/w/raw/aws/BILLING_PERIOD=2026-03/a%20b.parquet", paths) == paths[0]
    assert _listed("file:///w/raw/aws/c+d.parquet", paths) == paths[1]
    with pytest.raises(InputError, match="not one of the files listed"):
        _listed("file:/elsewhere.parquet", paths)


def test_utc_wall_times_become_instants() -> None:
    tree = sqlglot.parse_one("select timezone('UTC', cur.t) as t from x as cur", read="duckdb")
    assert utc_wall_times(tree).sql("spark") == "SELECT CAST(cur.t AS TIMESTAMP) AS t FROM x AS cur"


def test_local_paths_are_file_urls_for_spark() -> None:
    """On YARN the default filesystem is HDFS: a bare /mnt/... would be looked for there."""
    assert spark_path("/mnt/warehouse/raw/a b.parquet") == "file:///mnt/warehouse/raw/a b.parquet"
    assert spark_path("s3a://bucket/raw/x.parquet") == "s3a://bucket/raw/x.parquet"


def test_stored_lambdas_lose_their_parentheses() -> None:
    stored = "select list_transform(l, (lambda e: (e + 1) * list_transform(m, (lambda f: ')'))))"
    assert unwrapped_lambdas(stored) == (
        "select list_transform(l, lambda e: (e + 1) * list_transform(m, lambda f: ')'))"
    )
