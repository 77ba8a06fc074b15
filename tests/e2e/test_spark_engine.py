"""The same models on Spark (local[*], PySpark from PyPI): every published table equals DuckDB's."""

from __future__ import annotations

import os
import shutil
import sys
import unicodedata
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest
from engine_compare import same_tables_on_both_engines

from pipeline.config.engine import SparkOptions
from pipeline.dag.engines.base import BuildOutcome
from pipeline.dag.engines.spark.transpile import to_spark
from pipeline.dag.macros import expand_macros
from pipeline.scenario import write_scenario

pytest.importorskip("pyspark", reason="the Spark engine needs the spark extra")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip(
        "PySpark needs a Java runtime, 17 or later (.ci/run installs one)", allow_module_level=True
    )

# a small local session: one shuffle partition is plenty for the demo world's rows
TEST_CONF = (
    '[spark.conf]\n"spark.sql.shuffle.partitions" = 1\n"spark.default.parallelism" = 1\n'
    '"spark.sql.adaptive.enabled" = false\n'
)


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from pipeline.dag.engines.spark.session import open_session

    conf = {"spark.sql.shuffle.partitions": "1", "spark.default.parallelism": "1"}
    spark, _started = open_session(SparkOptions(conf=conf), tmp_path_factory.mktemp("spark"))
    yield spark
    spark.stop()


def _duckdb_rows(sql: str) -> list[tuple]:
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    return [tuple(row) for row in con.execute(sql).fetchall()]


def _spark_rows(session: Any, sql: str) -> list[tuple]:
    return [tuple(row) for row in session.sql(to_spark(sql)).collect()]


# each named rewrite, run on both engines: same rows
SAME_ANSWER = {
    "division_as_double": "select cast(1 as decimal(38, 10)) / cast(3 as decimal(38, 10)) as q",
    "epoch_functions": (
        "select epoch(timestamptz '2026-03-01 10:00:01.25+00') as s, "
        "epoch_us(timestamptz '2026-03-01 10:00:01.25+00') as us"
    ),
    "micro_intervals": (
        "select epoch_us(timestamptz '2026-03-01 00:00:00+00' + "
        "to_microseconds(cast(1.5 * 86400000000 as bigint))) as us"
    ),
    "hugeint_as_decimal": (
        "select cast(cast(12345678.1234567891 as decimal(38, 10)) * 10000000000 as hugeint) as h"
    ),
    "integer_sign": "select sign(cast(-123456789012345678 as decimal(38, 0))) * 3 as s",
    "safe_subscripts": (
        "select list_filter([0, 4, 5], lambda v: v > 3)[1] as first, "
        "list_filter([0], lambda v: v > 3)[1] as none"
    ),
    "exclusive_ranges": (
        "select epoch_us(hours.h) as us from (select unnest(range("
        "timestamptz '2026-03-01 10:00:00+00', timestamptz '2026-03-01 12:30:00+00', "
        "interval 1 hour)) as h) as hours order by us"
    ),
    "window_filters": (
        "select t.x, sum(t.x) filter (where t.x > 1) over () as s, "
        "count(*) filter (where t.x > 2) over () as c from (values (1), (2), (3)) as t(x) "
        "order by t.x"
    ),
    "ordered_lists": (
        "select list(distinct t.x order by t.x) as xs from (values (3), (1), (3), (2)) as t(x)"
    ),
    "zipped_unnests": "select unnest(['a', 'b']) as name, unnest([1, 2]) as rank",
    "qualify_as_subquery": (
        "select t.x, sum(t.x) over () as total from (values (1), (2), (3)) as t(x) "
        "qualify t.x > 1 order by t.x"
    ),
    "qualified_names": "select count(*) as n from (values (1)) as t(x)",
    # the engines' hash values differ; what must agree is that NULLs in other places hash apart
    "hash_as_xxhash64": (
        "select count(distinct hash(t.a, t.b)) as keys from (values (null, 'x'), ('x', null), "
        "('x', 'x'), (null, null), ('x', '')) as t(a, b)"
    ),
    "list_sums": (
        "select list_sum([cast(1.5 as decimal(38, 10)), null, cast(2.25 as decimal(38, 10))]) "
        "as s, list_sum(list_filter([1, 2], lambda v: v > 5)) as none, "
        "list_sum(list_transform([{'a': 2}, {'a': 3}], lambda c: c.a)) as fields"
    ),
    "local_to_instant": (
        "select epoch_us(timezone('America/Los_Angeles', "
        "cast(strptime('20260301', '%Y%m%d') as timestamp) + interval 1 month)) as us"
    ),
}


@pytest.mark.parametrize("rewrite", sorted(SAME_ANSWER))
def test_rewrite_gives_duckdbs_answer_on_spark(session: Any, rewrite: str) -> None:
    sql = SAME_ANSWER[rewrite]
    expected = _duckdb_rows(sql)
    assert expected  # a case that returns nothing proves nothing
    assert _normalized(_spark_rows(session, sql)) == _normalized(expected)


def _normalized(rows: list[tuple]) -> list[tuple]:
    return [
        tuple(int(v) if isinstance(v, Decimal) and v == v.to_integral() else v for v in row)
        for row in rows
    ]


def test_tags_are_read_in_nfc_on_spark(session: Any) -> None:
    """first_tag_value calls nfc_normalize, which Spark has only as the UDF runcost registers:
    a decomposed tag reads as the composed id on both engines, text with a NUL as written."""
    nfd, nfc = unicodedata.normalize("NFD", "att-café"), unicodedata.normalize("NFC", "att-café")
    tags = [nfd, nfc, "att-llm-01", f"{nfd}\x00"]
    rows = ", ".join(
        f"({number}, map(['a'], ['{tag}']), ['z', 'a'])" for number, tag in enumerate(tags)
    )
    sql = expand_macros(
        f"select first_tag_value(t.m, t.k) as tag from (values {rows}) as t(n, m, k) order by t.n",
        "test",
    )
    expected = [(nfc,), (nfc,), ("att-llm-01",), (f"{nfd}\x00",)]
    assert _duckdb_rows(sql) == expected
    assert _spark_rows(session, sql) == expected


def test_allocated_tags_win_over_tags_on_spark(session: Any) -> None:
    """attribution_tags merges a FOCUS 1.3 row's AllocatedTags over its Tags, the allocated
    value winning on a key both hold, with no session setting: Spark's map_concat refuses a
    duplicate key (spark.sql.mapKeyDedupPolicy EXCEPTION), so the keys are filtered first."""
    rows = ", ".join(
        [
            "(1, map(['attempt-id', 'team'], ['att-origin', 'ml']), "
            "map(['attempt-id'], ['att-1']))",
            "(2, map(['team'], ['ml']), map(['attempt-id'], ['att-2']))",
            "(3, map(['attempt-id'], ['att-3']), cast(null as map(varchar, varchar)))",
            "(4, map(['attempt-id'], ['att-4']), map(['team'], ['ml']))",
            "(5, cast(map() as map(varchar, varchar)), map(['attempt-id'], ['']))",
        ]
    )
    sql = expand_macros(
        "select t.n, first_tag_value(attribution_tags(t.tags, t.allocated), ['attempt-id']) "
        "as tag, cardinality(attribution_tags(t.tags, t.allocated)) as keys "
        f"from (values {rows}) as t(n, tags, allocated) order by t.n",
        "test",
    )
    expected = [(1, "att-1", 2), (2, "att-2", 2), (3, "att-3", 1), (4, "att-4", 2), (5, None, 1)]
    assert _duckdb_rows(sql) == expected
    assert _spark_rows(session, sql) == expected


@pytest.mark.slow
def test_focus_1_3_world_gives_the_same_tables_on_both_engines(tmp_path: Path) -> None:
    """A FOCUS 1.3 file's allocated rows (AllocatedTags over Tags, AllocatedResourceId) beside a
    1.2 Parquet file: every published table equals DuckDB's on Spark."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/focus_world.py
    from focus_world import allocated_rows, write_focus_world, write_mixed_csv

    config = write_focus_world(tmp_path / "world")
    write_mixed_csv(tmp_path / "world" / "focus" / "mixed" / "focus_2026.csv", allocated_rows())
    duckdb_run = _same_tables_on_both_engines(config)
    assert duckdb_run.row_counts["normalized.cost_line_facts"] == 5


@pytest.mark.slow
def test_demo_world_gives_the_same_tables_on_both_engines(tmp_path: Path) -> None:
    """local[*]; every world on a standalone cluster and Spark Connect: test_spark_cluster.py."""
    duckdb_run = _same_tables_on_both_engines(write_scenario(tmp_path / "world"))
    assert len(duckdb_run.row_counts) >= 30


def _same_tables_on_both_engines(config_file: Path) -> Any:
    return same_tables_on_both_engines(config_file, TEST_CONF)


def test_catalog_gets_every_published_table(session: Any, tmp_path: Path) -> None:
    from pipeline.dag.build import build
    from pipeline.dag.engines.spark.engine import TELEMETRY_VIEWS, SparkEngine
    from pipeline.dag.models import parse_model

    engine = SparkEngine(session, SparkOptions(catalog="spark_catalog"), tmp_path)
    for name in TELEMETRY_VIEWS:
        session.sql("select 'a1' as attempt_id").createOrReplaceTempView(f"raw__{name}")
    models = [
        parse_model("staging", name, f"-- T.\n-- grain: x\nselect * from raw.{name}")
        for name in TELEMETRY_VIEWS
    ]
    models.append(
        parse_model(
            "marts",
            "money",
            "-- M.\n-- grain: x\nselect cast(1 as decimal(38, 10)) / 3 as share, "
            "cast(0.1 as decimal(38, 10)) + cast(0.2 as decimal(38, 10)) as cost "
            "from staging.attempts",
        )
    )
    models.append(
        parse_model(
            "marts",
            "money_view",
            "-- V.\n-- grain: x\n-- materialized: view\nselect cost * 2 as cost from marts.money",
        )
    )
    report = build(engine, models)
    assert len(report.seconds) == len(TELEMETRY_VIEWS) + 2
    failing = parse_model("checks", "c", "-- C.\n-- grain: x\nselect * from marts.money")
    result = engine.check(failing)
    assert result is not None
    assert (result.columns, result.total) == (["share", "cost"], 1)
    assert result.rows == [(1 / 3, Decimal("0.3000000000"))]
    con = duckdb.connect()
    # a failed check: nothing is written, and the run's connection holds none of the tables
    assert engine.finish(con, models, publish=False) == BuildOutcome(in_connection=False)
    assert not session.catalog.tableExists("spark_catalog.marts.money")
    outcome = engine.finish(con, models)
    # a catalog has no runcost.duckdb to hold views: a published view is written as a table
    telemetry = {f"telemetry.{name}": 1 for name in TELEMETRY_VIEWS}
    assert outcome == BuildOutcome(
        in_connection=False,
        catalog="spark_catalog",
        catalog_rows={"marts.money": 1, "marts.money_view": 1, **telemetry},
    )
    assert con.execute(
        "select count(*) from information_schema.tables where table_schema = 'marts'"
    ).fetchone() == (0,)
    assert session.table("spark_catalog.marts.money_view").collect()[0]["cost"] == Decimal("0.6")
    table = session.table("spark_catalog.marts.money")
    assert [(field.name, field.dataType.simpleString()) for field in table.schema] == [
        ("share", "double"),
        ("cost", "decimal(38,10)"),
    ]
    assert table.collect()[0]["cost"] == Decimal("0.3000000000")
    engine.close()
    assert not session.catalog.tableExists("marts__money")


def test_a_cluster_session_gets_typed_inputs_and_writes_parquet(
    session: Any, tmp_path: Path
) -> None:
    """Not local: small tables go over Arrow with explicit schemas (empty ones too), and Spark
    writes the published tables as Parquet, which the build database reads through views."""
    from pipeline.dag.build import build
    from pipeline.dag.engines.spark.engine import TELEMETRY_VIEWS, SparkEngine
    from pipeline.dag.models import parse_model

    engine = SparkEngine(session, SparkOptions(master="spark://head:7077"), tmp_path)
    assert not engine.local
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    con.execute("create schema raw")
    con.execute("create schema config")
    for name in TELEMETRY_VIEWS:
        con.execute(
            f"create table raw.{name} as select 'a1' as attempt_id, "
            "timestamptz '2026-03-01 10:00:00+00' as started_at"
        )
    con.execute("create table config.rate as select cast(0.1 as decimal(38, 10)) as cost")
    # an empty table has nothing to infer a schema from (CANNOT_INFER_EMPTY_SCHEMA on Connect)
    con.execute(
        "create table raw.nothing "
        "(seen_at timestamptz, money decimal(38, 10), tags map(varchar, varchar))"
    )
    engine.load_inputs(con)
    nothing = session.table("raw__nothing")
    assert [(field.name, field.dataType.simpleString()) for field in nothing.schema] == [
        ("seen_at", "timestamp"),
        ("money", "decimal(38,10)"),
        ("tags", "map<string,string>"),
    ]
    assert nothing.count() == 0
    assert engine.inputs.through_driver["raw.nothing"] == 0
    models = [
        parse_model("staging", name, f"-- T.\n-- grain: x\nselect * from raw.{name}")
        for name in TELEMETRY_VIEWS
    ]
    models.append(
        parse_model(
            "marts",
            "hours",
            "-- M.\n-- grain: x\nselect attempts.attempt_id, count(*) as n, "
            "sum(rate.cost) * 3 as cost, epoch_us(min(attempts.started_at)) as us "
            "from staging.attempts cross join config.rate group by attempts.attempt_id",
        )
    )
    build(engine, models)
    outcome = engine.finish(con, models)
    assert outcome.in_connection and outcome.catalog is None
    assert outcome.published_files["marts.hours"] == (
        tmp_path / "outputs" / "marts" / "hours.parquet"
    )
    assert outcome.published_files["marts.hours"].is_file()
    assert set(outcome.published_files) == {
        "marts.hours",
        *(f"telemetry.{name}" for name in TELEMETRY_VIEWS),
    }
    # DuckDB's types for the model (count(*) is BIGINT, the product DECIMAL(38, 10)), Spark's rows
    assert con.execute("select * from marts.hours").fetchall() == [
        ("a1", 1, Decimal("0.3000000000"), 1772359200000000)
    ]
    kinds = [str(row[1]) for row in con.execute("describe marts.hours").fetchall()]
    assert kinds == ["VARCHAR", "BIGINT", "DECIMAL(38,10)", "BIGINT"]
    assert con.execute("select attempt_id from staging.experiments").fetchall() == [("a1",)]
    # with a catalog, the settings go there too, beside the models and the telemetry
    engine.options = SparkOptions(master="spark://head:7077", catalog="spark_catalog")
    rows = engine.write_catalog(models)
    assert rows["config.rate"] == rows["marts.hours"] == rows["telemetry.attempts"] == 1
    assert session.table("spark_catalog.config.rate").collect()[0]["cost"] == Decimal("0.1")
    engine.close()
