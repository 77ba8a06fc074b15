"""Every model transpiles to Spark SQL, and each named rewrite writes what it says it writes."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
import sqlglot
from sqlglot import expressions as exp
from sqlglot.errors import UnsupportedError

from pipeline.config.loader import load_config
from pipeline.dag.engines.spark.session import FUNCTIONS, register_functions
from pipeline.dag.engines.spark.transpile import REWRITES, to_spark, view_name
from pipeline.dag.models import discover, parse_model
from pipeline.dag.pools import pool_models
from pipeline.scenario import CONFIG

REPO = Path(__file__).resolve().parents[2]
# Spark's builtin functions (`show system functions` of a Spark 4.1.1 session), stored once
BUILTIN_FUNCTIONS = frozenset(
    line
    for line in (Path(__file__).with_name("spark_functions.txt")).read_text("utf-8").splitlines()
    if line and not line.startswith("#")
)
# TRY_CAST(x AS type) is Spark SQL grammar, as CAST is, not a listed function; the functions
# runcost registers on every session (nfc_normalize) resolve as builtins do
SPARK_FUNCTIONS = BUILTIN_FUNCTIONS | {"try_cast"} | set(FUNCTIONS)


def _generated_models(tmp_path: Path) -> list:
    config_file = tmp_path / "runcost.toml"
    config_file.write_text(CONFIG, encoding="utf-8")
    with_pools = pool_models(load_config(config_file))
    config_file.write_text('[warehouse]\npath = "w"\n', encoding="utf-8")
    return with_pools + pool_models(load_config(config_file))


def test_every_model_transpiles_to_spark_sql(tmp_path: Path) -> None:
    """The convention: a model sqlglot cannot write as Spark SQL fails here, by name."""
    models = discover(REPO / "sql") + _generated_models(tmp_path)
    assert len(models) > 30
    failures = {}
    for model in models:
        try:
            spark_sql = to_spark(model.sql)
        except Exception as error:  # any error names the model
            failures[model.qualified] = f"{type(error).__name__}: {error}"
            continue
        unknown = sorted(set(_called_functions(spark_sql)) - SPARK_FUNCTIONS)
        if unknown:  # a DuckDB function sqlglot passed through by name: Spark cannot resolve it
            failures[model.qualified] = f"functions Spark does not have: {unknown}"
        # no schema-qualified relation survives: Spark reads the layer__name temp views
        tables = sqlglot.parse_one(spark_sql, read="spark").find_all(exp.Table)
        assert [table.sql() for table in tables if table.db] == [], model.qualified
    assert failures == {}


def _called_functions(spark_sql: str) -> list[str]:
    """The name of every function a Spark SQL statement calls, lowercase."""
    names = []
    for node in sqlglot.parse_one(spark_sql, read="spark").find_all(exp.Func):
        match = re.match(r"([A-Za-z_][A-Za-z0-9_]*)\(", node.sql(dialect="spark"))
        if match:
            names.append(match.group(1).lower())
    return names


def test_function_check_catches_duckdb_only_functions() -> None:
    assert len(SPARK_FUNCTIONS) > 400
    called = _called_functions(
        to_spark("select list_sum(l), starts_with(s, 'a'), sum(x) over () from t")
    )
    assert "startswith" in called and "sum" in called and "aggregate" in called
    # what sqlglot passes through unchanged is caught: Spark has neither
    passed = _called_functions("SELECT LIST_SUM(l), TIMEZONE('UTC', t) FROM t")
    assert sorted(set(passed) - SPARK_FUNCTIONS) == ["list_sum", "timezone"]


def test_rewrites_are_named_and_each_is_tested_here() -> None:
    names = [name for name, _ in REWRITES]
    assert len(names) == len(set(names))
    source = Path(__file__).read_text(encoding="utf-8")
    assert [name for name in names if f"def test_{name}" not in source] == []


def test_qualified_names() -> None:
    assert view_name("staging.attempts") == "staging__attempts"
    assert to_spark("select attempts.x from staging.attempts") == (
        "SELECT attempts.x FROM staging__attempts AS attempts"
    )
    assert to_spark("select a.x from raw.aws_cur2 as a, c") == (
        "SELECT a.x FROM raw__aws_cur2 AS a, c"
    )


def test_cte_hints() -> None:
    assert (
        to_spark(
            "with a as not materialized (select * from t), b as materialized (select 1 as x) "
            "select * from a, b"
        )
        == "WITH a AS (SELECT * FROM t), b AS (SELECT 1 AS x) SELECT * FROM a, b"
    )


def test_division_as_double() -> None:
    assert to_spark("select a / b from t") == "SELECT CAST(a AS DOUBLE) / CAST(b AS DOUBLE) FROM t"
    assert to_spark("select cast(a as double) / 2 from t") == (
        "SELECT CAST(a AS DOUBLE) / CAST(2 AS DOUBLE) FROM t"
    )
    assert to_spark("select a // b from t") == "SELECT a DIV b FROM t"  # integer division stays


def test_epoch_functions() -> None:
    assert to_spark("select epoch_us(t) from x") == "SELECT UNIX_MICROS(t) FROM x"
    assert to_spark("select epoch(t) from x") == (
        "SELECT CAST(UNIX_MICROS(t) AS DOUBLE) / CAST(1000000.0 AS DOUBLE) FROM x"
    )


def test_hash_as_xxhash64() -> None:
    assert to_spark("select hash(a, b) from x") == (
        "SELECT XXHASH64(a IS NULL, a, b IS NULL, b) FROM x"
    )


def test_micro_intervals() -> None:
    assert to_spark("select t + to_microseconds(n) from x") == (
        "SELECT t + MAKE_DT_INTERVAL(0, 0, 0, CAST(CAST(n AS DECIMAL(38, 0)) * 0.000001 AS "
        "DECIMAL(18, 6))) FROM x"
    )


def test_hugeint_as_decimal() -> None:
    assert to_spark("select cast(a * 100 as hugeint) from x") == (
        "SELECT CAST(a * 100 AS DECIMAL(38, 0)) FROM x"
    )


def test_integer_sign() -> None:
    assert to_spark("select sign(a) * b from x") == "SELECT CAST(SIGN(a) AS INT) * b FROM x"
    assert to_spark("select cast(sign(a) as bigint) from x") == (
        "SELECT CAST(SIGN(a) AS BIGINT) FROM x"
    )


def test_safe_subscripts() -> None:
    # DuckDB lists count from 1, as try_element_at does; a map is looked up by its key
    assert to_spark("select list_filter(l, lambda v: v > 0)[1] from x") == (
        "SELECT TRY_ELEMENT_AT(FILTER(l, v -> v > 0), 1) FROM x"
    )
    assert to_spark("select tags['team'], tags[k] from x") == (
        "SELECT TRY_ELEMENT_AT(tags, 'team'), TRY_ELEMENT_AT(tags, k) FROM x"
    )


def test_exclusive_ranges() -> None:
    assert to_spark("select unnest(range(a, b, interval 1 hour)) as h from x") == (
        "SELECT EXPLODE(IF(a < b, FILTER(SEQUENCE(a, b, INTERVAL '1' HOUR), range_value -> "
        "range_value < b), ARRAY())) AS h FROM x"
    )
    with pytest.raises(UnsupportedError, match="positive step"):
        to_spark("select range(a, b) from x")


def test_window_filters() -> None:
    assert to_spark("select sum(v) filter (where k) over (partition by p) from x") == (
        "SELECT SUM(CASE WHEN k THEN v END) OVER (PARTITION BY p) FROM x"
    )
    assert to_spark("select count(*) filter (where k) over () from x") == (
        "SELECT COUNT(CASE WHEN k THEN 1 END) OVER () FROM x"
    )
    # an aggregate (not a window) keeps its FILTER, which Spark accepts
    assert to_spark("select count(*) filter (where k) from x") == (
        "SELECT COUNT(*) FILTER(WHERE k) FROM x"
    )


def test_ordered_lists() -> None:
    assert to_spark("select list(distinct v order by v) from x") == (
        "SELECT ARRAY_SORT(COLLECT_SET(v)) FROM x"
    )
    assert to_spark("select list(v order by v desc) from x") == (
        "SELECT REVERSE(ARRAY_SORT(COLLECT_LIST(v))) FROM x"
    )
    with pytest.raises(UnsupportedError, match="ordered by another column"):
        to_spark("select list(v order by w) from x")


def test_zipped_unnests() -> None:
    assert to_spark("select unnest(['a', 'b']) as name, unnest([1, 2]) as rank") == (
        "SELECT INLINE(ARRAYS_ZIP(ARRAY('a', 'b'), ARRAY(1, 2))) AS (name, rank)"
    )
    with pytest.raises(UnsupportedError, match="unnest beside other columns"):
        to_spark("select unnest([1]) as a, unnest([2]) as b, 3 as c")


def test_qualify_as_subquery() -> None:
    assert to_spark("select t.a, sum(t.b) over () as total from t qualify t.c > 0") == (
        "SELECT qualified.a, qualified.total FROM (SELECT t.a, SUM(t.b) OVER () AS total, "
        "t.c > 0 AS qualify_keep FROM t) AS qualified WHERE qualified.qualify_keep"
    )
    with pytest.raises(UnsupportedError, match="QUALIFY needs named columns"):
        to_spark("select * from t qualify a > 0")


def test_a_model_that_cannot_be_written_names_the_construct() -> None:
    model = parse_model("marts", "m", "-- M.\n-- grain: x\nselect list(v order by w) as l from t")
    with pytest.raises(UnsupportedError, match=r"list\(\) ordered by another column"):
        to_spark(model.sql)


def test_list_sums() -> None:
    assert to_spark("select list_sum(l) from x") == (
        "SELECT AGGREGATE(FILTER(l, list_item -> NOT list_item IS NULL), "
        "TRY_ELEMENT_AT(FILTER(l, list_item -> NOT list_item IS NULL), 1) - "
        "TRY_ELEMENT_AT(FILTER(l, list_item -> NOT list_item IS NULL), 1), "
        "(list_total, list_item) -> list_total + list_item) FROM x"
    )


def test_local_to_instant() -> None:
    assert to_spark("select timezone('Europe/Paris', cast(d as timestamp) + interval 1 month)") == (
        "SELECT TO_UTC_TIMESTAMP(CAST(d AS TIMESTAMP_NTZ) + INTERVAL '1' MONTH, 'Europe/Paris')"
    )
    with pytest.raises(UnsupportedError, match="non-TIMESTAMP"):
        to_spark("select timezone('Europe/Paris', t) from x")


def test_functions_runcost_registers_answer_as_duckdb_does() -> None:
    """nfc_normalize, which Spark lacks, is registered on every session as a UDF giving DuckDB's
    answers; the models call it (first_tag_value), and Spark has no builtin of that name."""
    registered: dict[str, tuple[Callable[[str | None], str | None], str]] = {}

    class Udf:
        def register(self, name: str, function: Callable, return_type: str) -> None:
            registered[name] = (function, return_type)

    class Session:
        udf = Udf()

    register_functions(Session())
    assert sorted(registered) == sorted(FUNCTIONS) == ["nfc_normalize"]
    assert not set(FUNCTIONS) & BUILTIN_FUNCTIONS
    nfc_normalize, return_type = registered["nfc_normalize"]
    assert return_type == "string"
    con = duckdb.connect()
    decomposed = unicodedata.normalize("NFD", "att-café")
    for value in (decomposed, "att-café", "att-llm-01", "Ω-Å", "", None):
        expected = con.execute("select nfc_normalize(?)", [value]).fetchone()[0]
        assert nfc_normalize(value) == expected
    assert nfc_normalize(decomposed) == unicodedata.normalize("NFC", "att-café")
    facts = next(
        model for model in discover(REPO / "sql") if model.qualified == "normalized.cost_line_facts"
    )
    assert _called_functions(to_spark(facts.sql)).count("nfc_normalize") == 2
