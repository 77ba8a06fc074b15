"""How each attempt's and experiment's cost moved between two snapshots, in any cost basis."""

from __future__ import annotations

from dataclasses import astuple, dataclass
from decimal import Decimal
from pathlib import Path

import duckdb

from pipeline.common.money import MONEY_SQL
from pipeline.warehouse.snapshots import snapshot_record, sql_path

ALLOCATION_MODELS = ("both", "marginal", "fully_loaded")
# marts.cost_changes holds the billed basis only (total = billed_cost + unbilled_estimate); the
# others are compared here from both snapshots' attempt_costs and experiment_costs.
COST_BASES = ("billed", "effective", "list", "net")
MART_BASIS = "billed"
COST_CHANGE_COLUMNS = (
    "allocation_model", "change_level", "experiment_id", "attempt_id", "previous_total", "total",
    "change", "previous_cost_status", "cost_status", "reasons",
)  # fmt: skip
MONEY_COLUMNS = ("previous_total", "total", "change")
# a row whose total moved in this basis while its billed total did not: the mart's reasons are
# found on billed cost, so none of them applies (an amortized fee or a discount was restated)
BASIS_ONLY_REASON = "billed_cost_unchanged"
_ORDER = "order by allocation_model desc, change_level, experiment_id, attempt_id"
_CHANGES = f"""
select {", ".join(COST_CHANGE_COLUMNS)}
from marts.cost_changes
where ? in ('both', allocation_model)
{_ORDER}
"""
_COSTS = """
    select
        'attempt' as change_level, experiment_id, attempt_id, allocation_model,
        {column} as cost, unbilled_estimate, cost_status
    from {attempts}
    union all
    select
        'experiment' as change_level, experiment_id, null as attempt_id, allocation_model,
        {column} as cost, unbilled_estimate, cost_status
    from {experiments}
"""
_SAME_ROW = """
    {left}.change_level = {right}.change_level
    and {left}.allocation_model = {right}.allocation_model
    and {left}.experiment_id is not distinct from {right}.experiment_id
    and {left}.attempt_id is not distinct from {right}.attempt_id
"""
_BASIS_CHANGES = """
with current_costs as ({current}),

previous_costs as ({previous}),

pairs as (
    select
        coalesce(current_costs.change_level, previous_costs.change_level) as change_level,
        coalesce(current_costs.experiment_id, previous_costs.experiment_id) as experiment_id,
        coalesce(current_costs.attempt_id, previous_costs.attempt_id) as attempt_id,
        coalesce(current_costs.allocation_model, previous_costs.allocation_model)
            as allocation_model,
        case when previous_costs.change_level is not null
            then coalesce(previous_costs.cost, 0) + coalesce(previous_costs.unbilled_estimate, 0)
        end as previous_total,
        case when current_costs.change_level is not null
            then coalesce(current_costs.cost, 0) + coalesce(current_costs.unbilled_estimate, 0)
        end as total,
        previous_costs.cost_status as previous_cost_status,
        current_costs.cost_status,
        previous_costs.change_level is null or current_costs.change_level is null as appeared
    from current_costs
    full outer join previous_costs on {same_pair}
),

final as (
    select
        pairs.allocation_model,
        pairs.change_level,
        pairs.experiment_id,
        pairs.attempt_id,
        cast(pairs.previous_total as {money}) as previous_total,
        cast(pairs.total as {money}) as total,
        cast(coalesce(pairs.total, 0) - coalesce(pairs.previous_total, 0) as {money}) as change,
        pairs.previous_cost_status,
        pairs.cost_status,
        coalesce(
            nullif(billed.reasons, ''),
            case when pairs.appeared then 'new_telemetry' else '{basis_only}' end
        ) as reasons
    from pairs
    left join marts.cost_changes as billed on {same_billed}
    where
        pairs.total is distinct from pairs.previous_total
        or pairs.previous_cost_status is distinct from pairs.cost_status
)

select {columns}
from final
where ? in ('both', allocation_model)
{order}
"""


@dataclass(frozen=True)
class CostChange:
    """One attempt's or experiment's move under one model: totals, statuses and the reasons."""

    allocation_model: str
    change_level: str
    experiment_id: str | None
    attempt_id: str | None
    previous_total: Decimal | None
    total: Decimal | None
    change: Decimal | None
    previous_cost_status: str | None
    cost_status: str | None
    reasons: str | None

    def values(self) -> tuple[object, ...]:
        """The fields in COST_CHANGE_COLUMNS order."""
        return astuple(self)


@dataclass(frozen=True)
class PreviousCosts:
    """The previous snapshot's attempt and experiment costs, as relations a query reads."""

    run_id: str
    attempt_costs: str
    experiment_costs: str


def previous_costs(folder: Path) -> PreviousCosts | None:
    """The cost tables of the published snapshot in ``folder``; None when it is not kept."""
    record = snapshot_record(folder) if folder.is_dir() else None
    if record is None:
        return None
    tables = record.get("tables", {})
    readers = []
    for name in ("marts.attempt_costs", "marts.experiment_costs"):
        entry = tables.get(name)
        if entry is None:
            return None
        location = sql_path(folder.resolve() / entry["path"])
        if entry.get("partition_by"):
            readers.append(f"read_parquet('{location}/*/*.parquet', hive_partitioning = true)")
        else:
            readers.append(f"read_parquet('{location}')")
    return PreviousCosts(str(record["run_id"]), readers[0], readers[1])


def previous_run_id(con: duckdb.DuckDBPyConnection) -> str | None:
    """The run marts.cost_changes compares with; None on a first run (no previous snapshot).

    An empty mart (nothing moved) names no run either: the caller tells the two apart with
    ``is_first_snapshot``.
    """
    row = con.execute("select max(previous_run_id) from marts.cost_changes").fetchone()
    return str(row[0]) if row and row[0] is not None else None


def is_first_snapshot(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether marts.cost_changes was built with no previous snapshot to compare with.

    Before the first publish the mart lists every attempt and experiment, none naming a
    previous run; once a previous snapshot exists every row names it.
    """
    row = con.execute(
        "select count(*) > 0 and count(previous_run_id) = 0 from marts.cost_changes"
    ).fetchone()
    return bool(row and row[0])


def select_cost_changes(
    con: duckdb.DuckDBPyConnection,
    allocation_model: str = "both",
    basis: str = MART_BASIS,
    previous: PreviousCosts | None = None,
) -> duckdb.DuckDBPyConnection:
    """The executed query, for writers that stream it: COST_CHANGE_COLUMNS, marginal first.

    ``allocation_model`` is one of ALLOCATION_MODELS; "both" keeps a row per model. Totals are
    ``basis`` cost plus the unbilled estimate. The billed basis is marts.cost_changes as built;
    another basis compares ``con``'s marts.attempt_costs and marts.experiment_costs with
    ``previous`` (required), keeping the mart's reasons.
    """
    if allocation_model not in ALLOCATION_MODELS:
        raise ValueError(f"allocation_model must be one of {ALLOCATION_MODELS}")
    if basis not in COST_BASES:
        raise ValueError(f"basis must be one of {COST_BASES}")
    if basis == MART_BASIS:
        return con.execute(_CHANGES, [allocation_model])
    if previous is None:
        raise ValueError(f"the {basis} basis needs the previous snapshot's costs")
    column = f"{basis}_cost"
    sql = _BASIS_CHANGES.format(
        current=_COSTS.format(
            column=column, attempts="marts.attempt_costs", experiments="marts.experiment_costs"
        ),
        previous=_COSTS.format(
            column=column, attempts=previous.attempt_costs, experiments=previous.experiment_costs
        ),
        same_pair=_SAME_ROW.format(left="current_costs", right="previous_costs"),
        same_billed=_SAME_ROW.format(left="pairs", right="billed"),
        money=MONEY_SQL,
        basis_only=BASIS_ONLY_REASON,
        columns=", ".join(COST_CHANGE_COLUMNS),
        order=_ORDER,
    )
    return con.execute(sql, [allocation_model])


def cost_changes(
    con: duckdb.DuckDBPyConnection,
    allocation_model: str = "both",
    basis: str = MART_BASIS,
    previous: PreviousCosts | None = None,
) -> list[CostChange]:
    """Every change for ``allocation_model`` in ``basis``, in select_cost_changes' order."""
    cursor = select_cost_changes(con, allocation_model, basis, previous)
    return [CostChange(*row) for row in cursor.fetchall()]
