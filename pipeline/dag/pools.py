"""Models generated from the [[pools]] in runcost.toml: which lines and attempts each pool takes."""

from __future__ import annotations

import logging

import duckdb
import sqlglot
from sqlglot import expressions as exp

from pipeline.config.loader import Config
from pipeline.config.pools import ATTEMPT_COLUMNS, COST_LINE_COLUMNS, validate_condition
from pipeline.dag.models import Model, parse_model

log = logging.getLogger("runcost")


def pool_models(config: Config) -> list[Model]:
    """The models generated from runcost.toml selectors: allocation.pool_line_matches,
    allocation.pool_eligible_attempts and attribution.excluded_lines."""
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
        "-- grain: one row per (line_id, pool_order) a selector matches; first_match: the winner\n"
        "-- materialized: intermediate (marts.pool_overlaps and the shared slices carry it)\n"
        f"with matches as (\n{line_sql}\n),\n\n"
        "first_matches as (\n    select matches.line_id, min(matches.pool_order) as first_order\n"
        "    from matches\n    group by matches.line_id\n),\n\n"
        "final as (\n    select\n        matches.line_id,\n        matches.pool_order,\n"
        "        matches.pool_order = first_matches.first_order as first_match\n"
        "    from matches\n"
        "    inner join first_matches on matches.line_id = first_matches.line_id\n)\n\n"
        "select * from final"
    )
    attempt_model = (
        "-- Attempts each pool may spread over (generated from [[pools]] attempts conditions).\n"
        "-- grain: one row per (pool_order, attempt_id)\n"
        f"with eligible as (\n{attempt_sql}\n),\n\n"
        "final as (\n    select distinct eligible.pool_order, eligible.attempt_id from eligible\n)"
        "\n\nselect * from final"
    )
    if config.allocation_exclude:
        exclude = validate_condition(
            config.allocation_exclude, COST_LINE_COLUMNS, "allocation.exclude"
        )
        excluded_sql = (
            sqlglot.select("cost_lines.line_id")
            .from_("normalized.cost_lines as cost_lines")
            .where(_qualify(exclude, "cost_lines"))
            .sql(dialect="duckdb", pretty=True)
        )
    else:
        excluded_sql = (
            "select cast(null as bigint) as line_id "
            "from normalized.cost_lines as cost_lines where false"
        )
    excluded_model = (
        "-- Cost lines [allocation] exclude takes out of training attribution (inference, APIs).\n"
        "-- grain: one row per excluded line_id; each goes to unallocated as excluded_inference\n"
        "-- materialized: intermediate (its lines are the excluded_inference slices)\n"
        f"with excluded as (\n{excluded_sql}\n),\n\n"
        "final as (\n    select distinct excluded.line_id from excluded\n)\n\nselect * from final"
    )
    return [
        parse_model("allocation", "pool_line_matches", line_model),
        parse_model("allocation", "pool_eligible_attempts", attempt_model),
        parse_model("attribution", "excluded_lines", excluded_model),
    ]


def log_pool_warnings(con: duckdb.DuckDBPyConnection) -> None:
    """Warn, naming the pool, about selectors that match no line, lines several pools select,
    and pools whose driver found no usage data (those lines stay unallocated as
    pool_driver_no_usage)."""
    for name, selector in con.execute(
        "select pools.pool_name, pools.selector from config.pools as pools "
        "where not exists (select 1 from allocation.pool_line_matches as matches "
        "where matches.pool_order = pools.pool_order) order by pools.pool_order"
    ).fetchall():
        # a service not used this month is no error; a misspelt selector looks the same
        log.warning(
            "pool %s: selector %s matches no cost line, so the pool shares nothing; if the "
            "bill has such lines, fix the selector (it is a condition on normalized.cost_lines)",
            name,
            selector,
            extra={"stage": "build"},
        )
    for row in con.execute(
        "select pool_name, overlapping_pool_name, sum(cost_lines) "
        "from marts.pool_overlaps group by all order by all"
    ).fetchall():
        log.warning(
            "pool %s: %d cost line(s) also match pool %s, which comes later in runcost.toml "
            "and does not get them (the first matching pool wins); narrow one selector",
            row[0],
            row[2],
            row[1],
            extra={"stage": "build"},
        )
    for row in con.execute(
        "select slices.pool_name, pools.driver, count(distinct slices.line_id) "
        "from allocation.cost_allocations as slices "
        "inner join config.pools as pools on slices.pool_name = pools.pool_name "
        "where slices.unallocated_reason = 'pool_driver_no_usage' group by all order by all"
    ).fetchall():
        log.warning(
            "pool %s: driver %s has no usage data for the attempts in scope, so %d cost "
            "line(s) stay unallocated (pool_driver_no_usage); add the telemetry it needs or "
            "choose another driver",
            row[0],
            row[1],
            row[2],
            extra={"stage": "build"},
        )


def _qualify(condition: exp.Expression, table: str) -> exp.Expression:
    condition = condition.copy()
    for column in condition.find_all(exp.Column):
        column.set("table", exp.to_identifier(table))
    return exp.paren(condition)


def _union_or_empty(selects: list[exp.Select], empty: str) -> str:
    if not selects:
        return empty
    return "\nunion all\n".join(select.sql(dialect="duckdb", pretty=True) for select in selects)
