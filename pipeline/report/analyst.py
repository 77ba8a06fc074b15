"""The report's analyst tables: each one SQL aggregate over a published mart (fully loaded,
effective cost), drawn only when its mart is published."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from html import escape

import duckdb

from pipeline.report import data


@dataclass(frozen=True)
class Section:
    """One report section: its anchor, title, the mart it reads, a note and its query."""

    anchor: str
    title: str
    mart: str
    note: str
    headers: tuple[str, ...]
    numeric: frozenset[int]
    sql: str
    empty: str = "No rows in this snapshot."
    # value column -> a column (not shown) saying why the value is NULL, shown in its place
    explained: tuple[tuple[int, int], ...] = ()


# NULL: no billing period touches the attempt (no cost line, no estimated hour)
PERIOD_STATUS = """
    coalesce(
        any_value(period_status),
        case when any_value(started_at) is null then '—, never started' else 'no period' end
    )
"""


SECTIONS = (
    Section(
        "attempts",
        "Cost per attempt",
        "marts.attempt_costs",
        "Every attempt, most expensive first; cost status says whether its cost is billed "
        "(final or open period) or still holds an estimate for unbilled hours.",
        (
            "attempt",
            "experiment",
            "status",
            "capacity",
            "GPU-hours",
            "fully loaded",
            "marginal",
            "cost status",
            "period status",
        ),
        frozenset({4, 5, 6}),
        f"""
        select
            attempt_id, experiment_id, any_value(status), any_value(capacity_type),
            round(any_value(gpu_hours), 2),
            sum(effective_cost) filter (where allocation_model = 'fully_loaded'),
            sum(effective_cost) filter (where allocation_model = 'marginal'),
            any_value(cost_status), {PERIOD_STATUS}
        from marts.attempt_costs
        group by attempt_id, experiment_id
        order by 6 desc nulls last, attempt_id
        """,
    ),
    Section(
        "estimates",
        "Estimates and final numbers",
        "marts.attempt_costs",
        "How much of the attempts' fully loaded cost is final (its billing period invoiced), "
        "billed in an open period (may still change), or an estimate of hours not yet billed.",
        ("cost status", "period status", "attempts", "fully loaded", "unbilled estimate"),
        frozenset({2, 3, 4}),
        f"""
        select
            cost_status, {PERIOD_STATUS} as period_status, count(*),
            sum(effective_cost), sum(coalesce(unbilled_estimate, 0))
        from marts.attempt_costs
        where allocation_model = 'fully_loaded'
        group by cost_status, period_status
        order by cost_status, period_status
        """,
    ),
    Section(
        "unallocated",
        "Unallocated cost by reason",
        "marts.unallocated_costs",
        "Cost no attempt, experiment or pool took, by why (fully loaded model).",
        ("reason", "currency", "cost lines", "unallocated"),
        frozenset({2, 3}),
        """
        select unallocated_reason, billing_currency, sum(cost_lines), sum(effective_cost)
        from marts.unallocated_costs
        where allocation_model = 'fully_loaded'
        group by all
        order by 4 desc, 1
        """,
    ),
    Section(
        "accepted",
        "Cost per accepted result",
        "marts.cost_per_accepted_result",
        "Fully loaded cost, failed attempts included, divided by the results that met their "
        "experiment's quality bar, per team and capacity type.",
        ("by", "value", "experiments", "accepted results", "total cost", "per accepted result"),
        frozenset({2, 3, 4, 5}),
        """
        select
            dimension,
            -- NULL: cost on the experiment alone (tagged to it), which has no attempt to group by
            coalesce(dimension_value, '(none: experiment-level cost)'),
            experiments, accepted_results, total_cost, cost_per_accepted_result,
            replace(coalesce(no_result_reason, 'no value in the mart'), '_', ' ')
        from marts.cost_per_accepted_result
        where allocation_model = 'fully_loaded' and dimension in ('all', 'team', 'capacity_type')
        order by dimension = 'all' desc, dimension, dimension_value
        """,
        explained=((5, 6),),
    ),
    Section(
        "goodput",
        "Goodput and cost per useful GPU-hour",
        "marts.attempt_goodput",
        "Goodput is the share of billed GPU-hours that did useful training (no startup, "
        "checkpoint restores or lost work); cost per useful GPU-hour divides by it.",
        (
            "attempt",
            "capacity",
            "billed GPU-hours",
            "goodput",
            "per billed GPU-hour",
            "per useful GPU-hour",
            "source",
        ),
        frozenset({2, 3, 4, 5}),
        """
        select
            attempt_id, capacity_type, round(billed_gpu_hours, 2),
            -- an attempt that never ran has no goodput, whatever a model would predict for it
            case
                when billed_gpu_hours is null then 'n/a: never ran'
                when billed_gpu_hours = 0 then 'n/a: no GPU-hours'
                else printf('%.3f', goodput_used)
            end,
            cost_per_billed_gpu_hour, cost_per_useful_gpu_hour,
            case when coalesce(billed_gpu_hours, 0) = 0 then 'none' else goodput_source end,
            case
                when coalesce(billed_gpu_hours, 0) = 0 then 'n/a: no GPU-hours'
                else 'n/a: no productive hours known'
            end,
            case
                when coalesce(billed_gpu_hours, 0) = 0 then 'n/a: no GPU-hours'
                else 'n/a: no cost'
            end,
            'none: never ran'
        from marts.attempt_goodput
        where allocation_model = 'fully_loaded'
        order by cost desc nulls last, attempt_id
        """,
        explained=((5, 7), (4, 8), (2, 9)),
    ),
    Section(
        "capacity",
        "Spot versus on-demand",
        "marts.capacity_type_economics",
        "Per capacity type: price per GPU-hour, goodput, and price per useful GPU-hour; "
        "spot pays off when its price per useful GPU-hour is below on-demand's.",
        (
            "capacity",
            "attempts",
            "interruptions",
            "total cost",
            "per GPU-hour",
            "goodput",
            "per useful GPU-hour",
            "pays off",
        ),
        frozenset({1, 2, 3, 4, 5, 6}),
        """
        select
            capacity_type, attempts, interruptions, total_cost, price_per_gpu_hour,
            round(goodput, 3), price_per_useful_gpu_hour, pays_off_against_on_demand,
            'n/a: no GPU-hours',
            case when capacity_type = 'on_demand' then 'n/a: the reference' else 'n/a' end
        from marts.capacity_type_economics
        where allocation_model = 'fully_loaded'
        order by capacity_type
        """,
        explained=((5, 8), (6, 8), (7, 9)),
    ),
    Section(
        "waste",
        "Waste findings",
        "marts.waste_findings",
        "Resources billed while nothing used them (idle volumes, instances after an attempt "
        "ended, GPUs an attempt held that measured idle), with the cost and how sure the "
        "finding is.",
        ("finding", "subject", "experiment", "currency", "cost", "idle hours", "confidence"),
        frozenset({4, 5}),
        """
        select
            finding_type, subject_id, coalesce(experiment_id, ''), billing_currency,
            effective_cost, round(idle_hours, 1), confidence
        from marts.waste_findings
        order by effective_cost desc, subject_id
        """,
        "No waste found in this snapshot.",
    ),
)

Table = Callable[[list[str], list[tuple], set[int]], str]


def analyst_sections(con: duckdb.DuckDBPyConnection, table: Table) -> list[str]:
    """The HTML of every section whose mart is published."""
    return [
        _section(con, section, table)
        for section in SECTIONS
        if data.table_exists(con, section.mart)
    ]


def section_rows(con: duckdb.DuckDBPyConnection, section: Section) -> list[tuple]:
    """The section's rows as shown: a NULL with an explanation column reads as the explanation."""
    rows = con.execute(section.sql).fetchall()
    hidden = {reason for _, reason in section.explained}
    shown = [index for index in range(len(section.headers)) if index not in hidden]
    reasons = dict(section.explained)
    return [
        tuple(
            row[reasons[index]] if row[index] is None and index in reasons else row[index]
            for index in shown
        )
        for row in rows
    ]


def _section(con: duckdb.DuckDBPyConnection, section: Section, table: Table) -> str:
    rows = section_rows(con, section)
    body = (
        table(list(section.headers), rows, set(section.numeric))
        if rows
        else f"<p>{escape(section.empty)}</p>"
    )
    return (
        f"<section id='{section.anchor}'><h2>{escape(section.title)}</h2>"
        f"<p class='note'>{escape(section.note)} Amounts: {escape(data.BASIS_LABEL)}. "
        f"Source: {escape(section.mart)}.</p>"
        f"<div class='table'>{body}</div></section>"
    )
