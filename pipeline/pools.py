"""Models generated from the [[pools]] in runcost.toml: which lines and attempts each pool takes."""

from __future__ import annotations

import duckdb
import sqlglot
from sqlglot import expressions as exp

from pipeline.config import Config
from pipeline.config_pools import ATTEMPT_COLUMNS, COST_LINE_COLUMNS, validate_condition
from pipeline.runner import Model, parse_model
from pipeline.tags import cur_tag_keys


def write_pool_settings(con: duckdb.DuckDBPyConnection, config: Config) -> None:
    """Create config.attribution and config.pools; values go in as parameters, never as SQL.

    Tag keys are written as CUR names them (`attempt-id` -> `user_attempt_id`), see pipeline.tags.
    """
    con.execute("create schema if not exists config")
    con.execute(
        "create or replace table config.attribution ("
        "attempt_tag_keys varchar[], experiment_tag_keys varchar[], resource_time boolean)"
    )
    con.execute(
        "insert into config.attribution values (?, ?, ?)",
        [
            cur_tag_keys(config.attempt_tag_keys),
            cur_tag_keys(config.experiment_tag_keys),
            config.resource_time,
        ],
    )
    con.execute(
        "create or replace table config.pools (pool_order integer, pool_name varchar, "
        "selector varchar, attempts varchar, driver varchar, spread varchar)"
    )
    for order, pool in enumerate(config.pools, start=1):
        con.execute(
            "insert into config.pools values (?, ?, ?, ?, ?, ?)",
            [order, pool.name, pool.selector, pool.attempts, pool.driver, pool.spread],
        )


def pool_models(config: Config) -> list[Model]:
    """allocation.pool_line_matches and allocation.pool_eligible_attempts for this config."""
    line_selects = []
    attempt_selects = []
    for order, pool in enumerate(config.pools, start=1):
        where = f"pools[{order}] ({pool.name})"
        selector = validate_condition(pool.selector, COST_LINE_COLUMNS, f"{where}.selector")
        attempts = validate_condition(pool.attempts, ATTEMPT_COLUMNS, f"{where}.attempts")
        line_selects.append(
            sqlglot.select("cost_lines.line_id", exp.Literal.number(order).as_("pool_order"))
            .from_("normalized.cost_lines as cost_lines")
            .where(_qualify(selector, "cost_lines"))
        )
        attempt_selects.append(
            sqlglot.select("attempts.attempt_id", exp.Literal.number(order).as_("pool_order"))
            .from_("staging.attempts as attempts")
            .where(_qualify(attempts, "attempts"))
        )
    line_sql = _union_or_empty(
        line_selects,
        "select cast(null as bigint) as line_id, cast(null as integer) as pool_order "
        "from normalized.cost_lines as cost_lines where false",
    )
    attempt_sql = _union_or_empty(
        attempt_selects,
        "select cast(null as varchar) as attempt_id, cast(null as integer) as pool_order "
        "from staging.attempts as attempts where false",
    )
    line_model = (
        "-- Cost lines each pool selects (generated from [[pools]] selectors); first pool wins.\n"
        "-- grain: one row per line_id that some pool's selector matches\n"
        f"with matches as (\n{line_sql}\n),\n\n"
        "final as (\n    select matches.line_id, min(matches.pool_order) as pool_order\n"
        "    from matches\n    group by matches.line_id\n)\n\nselect * from final"
    )
    attempt_model = (
        "-- Attempts each pool may spread over (generated from [[pools]] attempts conditions).\n"
        "-- grain: one row per (pool_order, attempt_id)\n"
        f"with eligible as (\n{attempt_sql}\n),\n\n"
        "final as (\n    select distinct eligible.pool_order, eligible.attempt_id from eligible\n)"
        "\n\nselect * from final"
    )
    return [
        parse_model("allocation", "pool_line_matches", line_model),
        parse_model("allocation", "pool_eligible_attempts", attempt_model),
    ]


def _qualify(condition: exp.Expression, table: str) -> exp.Expression:
    condition = condition.copy()
    for column in condition.find_all(exp.Column):
        column.set("table", exp.to_identifier(table))
    return exp.paren(condition)


def _union_or_empty(selects: list[exp.Select], empty: str) -> str:
    if not selects:
        return empty
    return "\nunion all\n".join(select.sql(dialect="duckdb", pretty=True) for select in selects)
