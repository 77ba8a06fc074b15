"""Import CTEs are inlined: parse_model marks them `not materialized`, and DuckDB then scans the
relation at each reference instead of copying it first."""

from __future__ import annotations

import duckdb
import pytest
import sqlglot
from sqlglot import expressions as exp

from pipeline.dag.ctes import import_ctes, inline_imports, is_import
from pipeline.dag.models import discover, parse_model, sql_root

MODEL = """-- a test model
-- grain: one row per id
with lines as (
    select * from normalized.lines
),

named as (
    select lines.id, lines.cost from normalized.lines as lines
),

big as (
    select lines.id from lines where lines.cost > 1
),

kept as materialized (
    select * from normalized.lines
),

final as (
    select * from lines
)

select lines.id from lines
inner join big on lines.id = big.id
inner join named on lines.id = named.id
inner join kept on lines.id = kept.id
where lines.id in (select big.id from big)
"""


def _ctes(sql: str) -> dict[str, object]:
    statement = sqlglot.parse_one(sql, read="duckdb")
    found = statement.args.get("with") or statement.args.get("with_")
    return {cte.alias: cte.args.get("materialized") for cte in found.expressions}


def test_import_ctes_are_marked_and_the_rest_keep_duckdbs_choice() -> None:
    model = parse_model("marts", "x", MODEL)
    # False is sqlglot's `not materialized`; None is no hint; True the model's own choice
    assert _ctes(model.sql) == {
        "lines": False,
        "named": False,
        "big": None,
        "kept": True,
        "final": None,  # a step of the model, not an import
    }


@pytest.mark.parametrize(
    "body",
    [
        "select * from t where x > 1",
        "select t.x from t inner join u on t.x = u.x",
        "select x, count(*) from t group by x",
        "select distinct x from t",
        "select x, row_number() over (order by x) from t",
        "select * from read_parquet('a.parquet')",
        "select unnest(l) from t",
        "select * from t order by x limit 3",
        "select * from t union all select * from u",
        "select (select max(x) from u) from t",
        "select cast(x as int) as x from t",
    ],
)
def test_a_cte_that_computes_is_not_an_import(body: str) -> None:
    assert not is_import(sqlglot.parse_one(body, read="duckdb"))


def test_a_name_defined_twice_is_left_as_written() -> None:
    sql = "with a as (select * from t)\nselect * from (\nwith a as (select 1) select * from a), a"
    statement = sqlglot.parse_one(sql, read="duckdb")
    assert import_ctes(statement) == ["a"]
    assert inline_imports(sql, statement) == sql


TWICE = """-- reads one relation twice
-- grain: one row per id
with lines as (
    select * from normalized.lines
)

select a.id, b.cost from lines as a inner join lines as b on a.id = b.id + 1
"""


def test_duckdb_copies_an_import_referenced_twice_unless_it_is_marked() -> None:
    con = duckdb.connect()
    con.execute("create schema normalized")
    con.execute(
        "create table normalized.lines as select range as id, range * 2 as cost from range(9)"
    )

    def plan(sql: str) -> str:
        return "\n".join(row[1] for row in con.execute(f"explain {sql}").fetchall())

    model = parse_model("marts", "x", TWICE)
    assert "CTE Name: lines" in plan(TWICE)  # why the rule exists: a copy, read at each reference
    assert "CTE Name" not in plan(model.sql)
    assert sorted(con.execute(model.sql).fetchall()) == sorted(con.execute(TWICE).fetchall())


def test_every_import_cte_of_every_model_is_marked() -> None:
    unmarked, marked = [], 0
    for model in discover(sql_root()):
        statement = sqlglot.parse_one(model.sql, read="duckdb")
        ctes = (statement.args.get("with") or statement.args.get("with_")).expressions
        names = {cte.alias for cte in ctes}
        for cte in ctes:
            source = (cte.this.args.get("from") or cte.this.args.get("from_") or cte.this).this
            reads_a_relation = isinstance(source, exp.Table) and (
                source.db or source.name not in names
            )
            if is_import(cte.this) and reads_a_relation:
                marked += cte.args.get("materialized") is False
                if cte.args.get("materialized") is not False:
                    unmarked.append(f"{model.qualified}: {cte.alias}")
    assert unmarked == []
    assert marked > 100  # the models do read through import CTEs
