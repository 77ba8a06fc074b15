"""The SQL runner: model headers, dependency order, layer rules, and errors that name the file."""

from __future__ import annotations

import duckdb
import pytest

from pipeline.common.errors import ModelError
from pipeline.config.loader import parse_config
from pipeline.dag.build import build
from pipeline.dag.models import discover, intermediates, order, parse_model
from pipeline.dag.pools import pool_models
from pipeline.warehouse.publish import TELEMETRY_VIEWS, table_contents

GOOD = "-- A model.\n-- grain: one row per x\nselect 1 as x"
HEADER = "-- A.\n-- grain: x\n-- materialized: {}\n"


def test_parse_reads_header_grain_and_inputs() -> None:
    model = parse_model(
        "marts",
        "m",
        "-- Costs per thing.\n-- grain: one row per (a, b)\n"
        "with lines as (select * from normalized.cost_lines),\n"
        "final as (select * from lines join staging.attempts using (a))\nselect * from final",
    )
    assert model.description == "Costs per thing."
    assert model.grain == "one row per (a, b)"
    assert model.inputs == {"normalized.cost_lines", "staging.attempts"}
    assert model.materialization == "table"
    assert parse_model("staging", "s", GOOD).materialization == "view"
    assert parse_model("checks", "c", GOOD).materialization == "check"


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("select 1", "the first line must be a comment"),
        ("-- A model.\nselect 1", "add a header line `-- grain: one row per (...)`"),
        (GOOD + ";", "a model is one select without a trailing ';'"),
        ("-- A.\n-- grain: x\nselect 1; select 2", "exactly one select statement"),
        ("-- A.\n-- grain: x\ncreate table t (a int)", "exactly one select statement"),
        ("-- A.\n-- grain: x\nselect from where", "SQL does not parse"),
        ("-- A.\n-- grain: x\n-- materialized: tabel\nselect 1", "`intermediate` or `parquet`"),
        (
            "-- A.\n-- grain: x\n-- materialized: view\nselect * from staging.attempts",
            "staging.attempts is not published",
        ),
    ],
)
def test_malformed_models_name_the_file(sql: str, message: str) -> None:
    with pytest.raises(ModelError) as caught:
        parse_model("marts", "bad", sql)
    assert "marts.bad" in str(caught.value)
    assert message in str(caught.value)


def test_a_model_may_be_published_as_a_view() -> None:
    header = "-- A.\n-- grain: x\n-- materialized: {}\nselect * from normalized.cost_lines"
    assert parse_model("marts", "v", header.format("view")).materialization == "view"
    assert parse_model("marts", "t", header.format("table")).materialization == "table"
    with pytest.raises(ModelError, match="cannot choose its materialization"):
        parse_model("staging", "s", header.format("table"))
    shipped = {model.qualified for model in discover() if model.materialization == "view"}
    assert {"normalized.focus", "marts.allocation_detail"} <= shipped


def test_an_intermediate_is_built_but_never_published() -> None:
    step = parse_model("attribution", "step", HEADER.format("intermediate") + "select 1 as x")
    assert (step.materialization, step.created_as) == ("intermediate", "table")
    shown = parse_model("marts", "shown", HEADER.format("view") + "select * from attribution.step")
    with pytest.raises(ModelError, match=r"attribution\.step, which is not published"):
        order([step, shown])
    shipped = intermediates(discover())
    assert {"attribution.tag_matches", "attribution.resource_time_overlaps"} <= shipped
    assert "allocation.cost_slices" not in shipped and "normalized.cost_lines" not in shipped
    assert "attribution.line_attributions" not in shipped
    con = duckdb.connect()
    con.execute("create schema attribution; create schema marts; create schema staging")
    for name in TELEMETRY_VIEWS:
        con.execute(f"create view staging.{name} as select 1 as id")
    con.execute("create table attribution.step as select 1 as x")
    con.execute("create table marts.kept as select 2 as x")
    names = [table.name for table in table_contents(con, hidden=intermediates([step]))]
    assert "marts.kept" in names and "attribution.step" not in names


def test_order_follows_dependencies() -> None:
    a = parse_model("normalized", "a", "-- A.\n-- grain: x\nselect * from staging.s")
    s = parse_model("staging", "s", "-- S.\n-- grain: x\nselect * from raw.things")
    m = parse_model("marts", "m", "-- M.\n-- grain: x\nselect * from normalized.a")
    assert [model.qualified for model in order([m, a, s])] == [
        "staging.s",
        "normalized.a",
        "marts.m",
    ]


@pytest.mark.parametrize(
    ("models", "message"),
    [
        (
            [("staging", "s", "select * from marts.m"), ("marts", "m", "select 1")],
            "staging.s reads marts.m, a higher layer",
        ),
        ([("marts", "m", "select * from raw.cur")], "raw.* may be read only from staging"),
        ([("marts", "m", "select * from cost_lines")], "neither a model nor a source"),
        (
            [("marts", "a", "select * from marts.b"), ("marts", "b", "select * from marts.a")],
            "cycle",
        ),
    ],
)
def test_order_rejects_bad_graphs(models: list[tuple[str, str, str]], message: str) -> None:
    parsed = [parse_model(layer, name, f"-- X.\n-- grain: x\n{sql}") for layer, name, sql in models]
    with pytest.raises(ModelError, match=message):
        order(parsed)


def test_build_collects_check_rows_and_wraps_sql_errors() -> None:
    con = duckdb.connect()
    ok = parse_model("marts", "m", "-- M.\n-- grain: x\nselect 1 as x")
    failing = parse_model("checks", "c", "-- C.\n-- grain: x\nselect * from marts.m where x = 1")
    report = build(con, [ok, failing])
    assert report.checks_run == ["c"]
    assert report.check_failures == [("c", ["x"], [(1,)], 1)]
    broken = parse_model("marts", "broken", "-- B.\n-- grain: x\nselect no_such_column")
    with pytest.raises(ModelError, match=r"building marts\.broken failed"):
        build(con, [broken])


def test_shipped_models_all_order(tmp_path) -> None:
    models = order(discover() + pool_models(parse_config({}, base=tmp_path)))
    names = [model.qualified for model in models]
    assert names.index("normalized.cost_lines") < names.index("marts.attempt_costs")
    assert all(model.grain.startswith("one row per") for model in models)
