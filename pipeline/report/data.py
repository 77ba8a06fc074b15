"""The report's numbers: small aggregates computed in SQL over the published snapshot."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

import duckdb

from pipeline.common.money import MONEY_SQL

# The pictures show the fully loaded model in the effective basis: allocation is judged on
# amortized cost (FOCUS: reconcile on billed, allocate on effective).
MODEL = "fully_loaded"
BASIS = "effective_cost"
# how the page names it: once in the header, and in every section's note
BASIS_LABEL = "effective cost, fully loaded"

DAILY_SPEND = f"""
with slices as (
    select
        billing_currency,
        coalesce(service_name, '(none)') as service_name,
        allocation_kind,
        {BASIS} as amount,
        charge_period_start,
        charge_period_end,
        epoch_us(charge_period_end) - epoch_us(charge_period_start) as window_us
    from allocation.cost_allocations
    where allocation_model = '{MODEL}'
),
slice_days as (
    select
        slices.*,
        unnest(generate_series(
            date_trunc('day', charge_period_start),
            greatest(charge_period_end - interval 1 microsecond, charge_period_start),
            interval 1 day
        )) as day_start
    from slices
),
prorated as (
    -- a charge spanning several days (monthly tax, fees) is spread by its seconds in each day
    select
        billing_currency,
        service_name,
        allocation_kind,
        cast(day_start as date) as day,
        case
            when window_us <= 0 then amount
            else cast(amount * (
                (epoch_us(least(charge_period_end, day_start + interval 1 day))
                    - epoch_us(greatest(charge_period_start, day_start))) / window_us
            ) as {MONEY_SQL})
        end as amount
    from slice_days
)
select billing_currency, day, service_name, allocation_kind, sum(amount) as amount
from prorated
group by billing_currency, day, service_name, allocation_kind
order by billing_currency, day, service_name, allocation_kind
"""

EXPERIMENT_STATUS = f"""
select
    allocations.billing_currency,
    allocations.experiment_id,
    case
        when allocations.attempt_id is null then 'experiment only'
        else coalesce(attempts.status, 'unknown')
    end as status,
    sum(allocations.{BASIS}) as amount
from allocation.cost_allocations as allocations
left join telemetry.attempts as attempts on allocations.attempt_id = attempts.attempt_id
where allocations.allocation_model = '{MODEL}' and allocations.experiment_id is not null
group by all
order by all
"""

EXPERIMENT_TABLE = f"""
select
    experiment_id,
    coalesce(max(team), '') as team,
    max(attempts) as attempts,
    max(failed_attempts) as failed_attempts,
    sum({BASIS}) filter (where allocation_model = 'marginal') as marginal,
    sum({BASIS}) filter (where allocation_model = 'fully_loaded') as fully_loaded,
    sum(failed_attempt_cost) filter (where allocation_model = 'fully_loaded') as failed_cost
from marts.experiment_costs
group by experiment_id
order by fully_loaded desc nulls last, experiment_id
"""

SERVICE_SPLIT = f"""
select
    billing_currency,
    coalesce(service_name, '(none)') as service_name,
    sum({BASIS}) filter (where allocation_kind = 'attributed') as attributed,
    sum({BASIS}) filter (where allocation_kind = 'shared') as shared,
    sum({BASIS}) filter (where allocation_kind = 'unallocated') as unallocated,
    sum({BASIS}) as total
from allocation.cost_allocations
where allocation_model = '{MODEL}'
group by all
order by billing_currency, total desc, service_name
"""

# open: the period has not ended; provisional: ended, not every line invoiced; final: invoiced
RECONCILIATION = """
select
    billing_period,
    billing_account_id,
    billing_currency,
    allocation_model,
    cost_basis,
    cost_lines,
    invoiced,
    case
        when invoiced then 'final'
        when strptime(billing_period || '-01', '%Y-%m-%d') + interval 1 month > current_date
            then 'open'
        else 'provisional'
    end as period_status,
    bill_total,
    attributed,
    shared,
    unallocated,
    difference
from marts.reconciliation
order by
    billing_period, billing_account_id, billing_currency, allocation_model desc,
    array_position(['billed_cost', 'effective_cost', 'list_cost', 'net_cost'], cost_basis),
    cost_basis
"""


@dataclass(frozen=True)
class Snapshot:
    """Which snapshot the report shows."""

    run_id: str
    periods: list[str]
    currencies: list[str]
    cost_lines: int


@dataclass(frozen=True)
class Series:
    """Points of one line in a chart over time: (x label, value) in order."""

    name: str
    points: list[tuple[str, float]]


def table_exists(con: duckdb.DuckDBPyConnection, qualified: str) -> bool:
    """Whether the snapshot publishes ``schema.table``."""
    schema, _, name = qualified.partition(".")
    row = con.execute(
        "select count(*) from information_schema.tables where table_schema = ? and table_name = ?",
        [schema, name],
    ).fetchone()
    return bool(row and row[0])


def snapshot(con: duckdb.DuckDBPyConnection) -> Snapshot:
    """The run id, periods, currencies and line count of the published snapshot."""
    run_id = ""
    if table_exists(con, "main.runcost_snapshot"):
        row = con.execute("select run_id from main.runcost_snapshot").fetchone()
        run_id = str(row[0]) if row else ""
    periods, currencies, lines = con.execute(
        "select list(distinct billing_period order by billing_period), "
        "list(distinct billing_currency order by billing_currency), count(*) "
        "from normalized.cost_lines"
    ).fetchone()
    return Snapshot(run_id, list(periods or []), list(currencies or []), int(lines))


def daily_spend(con: duckdb.DuckDBPyConnection) -> list[tuple[str, date, str, str, Decimal]]:
    """(currency, day, service, allocation kind, amount), amounts prorated over charge days."""
    return con.execute(DAILY_SPEND).fetchall()


def service_split(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    """(currency, service, attributed, shared, unallocated, total) over the snapshot."""
    return con.execute(SERVICE_SPLIT).fetchall()


def experiment_status(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str, Decimal]]:
    """(currency, experiment, attempt status or 'experiment only', amount)."""
    return con.execute(EXPERIMENT_STATUS).fetchall()


def experiment_table(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    """Per experiment: team, attempts, failed attempts, marginal and fully loaded cost."""
    return con.execute(EXPERIMENT_TABLE).fetchall()


def reconciliation(con: duckdb.DuckDBPyConnection) -> tuple[list[str], list[tuple]]:
    """marts.reconciliation with each period's status; column names and rows."""
    cursor = con.execute(RECONCILIATION)
    return [item[0] for item in cursor.description], cursor.fetchall()


def columns(con: duckdb.DuckDBPyConnection, qualified: str) -> dict[str, str]:
    """Column name -> DuckDB type of a published table."""
    return {row[0]: str(row[1]) for row in con.execute(f"describe {qualified}").fetchall()}


def _pick(names: dict[str, str], patterns: tuple[str, ...], kinds: tuple[str, ...]) -> str | None:
    for pattern in patterns:
        for name, kind in names.items():
            if re.fullmatch(pattern, name) and kind.startswith(kinds):
                return name
    return None


_TIME = ("DATE", "TIMESTAMP", "VARCHAR")
_NUMBER = ("DECIMAL", "DOUBLE", "FLOAT", "BIGINT", "INTEGER", "HUGEINT")
TAG_COVERAGE_TIME = (r"day", r"date", r"usage_date", r"charge_date", r"week", r"month")
TAG_COVERAGE_TIME += (r"billing_period", r"period")
TAG_COVERAGE_TAGGED = (r"tagged_effective_cost", r"tagged_cost", r"tagged", r"tagged_.*cost")
TAG_COVERAGE_TOTAL = (r"total_cost", r"total_effective_cost", r"effective_cost", r"total")
TAG_COVERAGE_TOTAL += (r"bill_total", r"total_.*cost")
TAG_COVERAGE_RATIO = (r".*coverage.*", r"tagged_(share|fraction|ratio)")


def tag_coverage(con: duckdb.DuckDBPyConnection) -> tuple[list[Series], str]:
    """Share of cost carrying a tag, over time, from marts.tag_coverage; and how it was read.

    Amounts are summed in SQL and divided once per point: one series per ``<kind>_tagged_cost``
    column (attempt, experiment) over ``total_cost``, per billing period and currency. Other
    shapes fall back to a single tagged/total or ratio column. No series when neither fits.
    """
    names = columns(con, "marts.tag_coverage")
    when = _pick(names, TAG_COVERAGE_TIME, _TIME)
    total = _pick(names, TAG_COVERAGE_TOTAL, _NUMBER)
    kinds = [name for name in names if re.fullmatch(r"[a-z]+_tagged_cost", name)]
    if not kinds:
        kinds = [name for name in [_pick(names, TAG_COVERAGE_TAGGED, _NUMBER)] if name]
    currency = "billing_currency" if "billing_currency" in names else "''"
    measures = [
        (kind.removesuffix("_cost").replace("_", " "), f"sum({kind}) / nullif(sum({total}), 0)")
        for kind in kinds
        if kind != total
    ]
    if when and total and measures:
        how = f"tagged cost / total_cost per {when}"
    else:
        ratio = _pick(names, TAG_COVERAGE_RATIO, _NUMBER)
        if not (when and ratio):
            return [], "columns: " + ", ".join(names)
        measures, how = [(ratio, f"avg({ratio})")], f"average of {ratio} per {when}"
    selects = ", ".join(f"cast({value} as double)" for _, value in measures)
    rows = con.execute(
        f"select cast({currency} as varchar), cast({when} as varchar), {selects} "
        "from marts.tag_coverage group by all order by all"
    ).fetchall()
    by_series: dict[str, list[tuple[str, float]]] = {}
    for row in rows:
        for (label, _), coverage in zip(measures, row[2:], strict=True):
            if coverage is not None:
                name = f"{label} {row[0]}".strip()
                by_series.setdefault(name, []).append((row[1], float(coverage)))
    return [Series(name, points) for name, points in by_series.items()], how


COST_QUALITY_COST = (r"effective_cost", r"fully_loaded_cost", r"total_cost", r"cost")
COST_QUALITY_METRIC = (r"metric_value", r"best_metric(_value)?", r"quality(_value)?", r"metric")
COST_QUALITY_FRONTIER = (r"on_frontier", r"is_frontier", r"frontier")


def cost_quality(
    con: duckdb.DuckDBPyConnection, table: str
) -> tuple[list[tuple[str, float, float, bool]], str]:
    """(experiment, cost, quality, on the frontier) per experiment of a cost-quality mart.

    Experiments measure different metrics, so with ``quality_threshold`` and
    ``higher_is_better`` the quality is the best metric relative to the experiment's own bar
    (1 = exactly at the bar, above 1 = better); otherwise the metric itself.
    """
    names = columns(con, table)
    label = "experiment_id" if "experiment_id" in names else None
    cost = _pick(names, COST_QUALITY_COST, _NUMBER)
    metric = _pick(names, COST_QUALITY_METRIC, _NUMBER)
    frontier = _pick(names, COST_QUALITY_FRONTIER, ("BOOLEAN",))
    if not (label and cost and metric):
        return [], "columns: " + ", ".join(names)
    quality, how = f"avg({metric})", f"{cost} against {metric}"
    if {"quality_threshold", "higher_is_better"} <= names.keys():
        quality = (
            f"avg(case when higher_is_better then {metric} / nullif(quality_threshold, 0) "
            f"else quality_threshold / nullif({metric}, 0) end)"
        )
        how = f"{cost} against {metric} relative to the experiment's quality_threshold"
    model = "where allocation_model = 'fully_loaded'" if "allocation_model" in names else ""
    on_frontier = frontier or "false"
    source = f"{table} {model}"
    if "quality_metric" in names:
        # each experiment may measure its own metric: the frontier compares within a metric,
        # so an experiment alone on its metric is on no frontier
        on_frontier = f"({on_frontier} and peers > 1)"
        label = f"{label} || ' (' || quality_metric || ')'"
        source = (
            f"(select *, count(distinct experiment_id) over (partition by quality_metric) "
            f"as peers from {table} {model})"
        )
        how += "; the frontier compares experiments measuring the same metric"
    rows = con.execute(
        f"select cast({label} as varchar), cast(sum({cost}) as double), "
        f"cast({quality} as double), coalesce(bool_or({on_frontier}), false) "
        f"from {source} group by all having {quality} is not null order by 2, 1"
    ).fetchall()
    return [(str(a), float(b), float(c), bool(d)) for a, b, c, d in rows], how
