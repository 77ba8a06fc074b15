"""The run summary: the costliest experiments and how the bill reconciles, from the marts."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import duckdb

# the summary's order: fully loaded effective cost, the largest first
_EXPERIMENTS = """
with experiments as (
    select
        experiment_id,
        attempts,
        failed_attempts,
        max(effective_cost) filter (where allocation_model = 'marginal') as marginal,
        max(effective_cost) filter (where allocation_model = 'fully_loaded') as fully_loaded,
        max(failed_attempt_cost) filter (
            where allocation_model = 'fully_loaded'
        ) as failed_attempt_cost,
        max(experiment_only_cost) filter (
            where allocation_model = 'fully_loaded'
        ) as experiment_only_cost
    from marts.experiment_costs
    group by experiment_id, attempts, failed_attempts
)
select *, count(*) over () as experiment_count
from experiments
order by fully_loaded desc nulls last, experiment_id
limit ?
"""
_RECONCILIATION = """
select
    billing_period, billing_currency, bill_total, attributed, shared, unallocated, difference
from marts.reconciliation
where cost_basis = 'effective_cost' and allocation_model = 'fully_loaded'
order by all
"""


@dataclass(frozen=True)
class ExperimentCost:
    """One experiment's effective cost: marginal, fully loaded, and the fully loaded parts."""

    experiment_id: str
    attempts: int
    failed_attempts: int
    marginal: Decimal | None
    fully_loaded: Decimal | None
    failed_attempt_cost: Decimal | None
    experiment_only_cost: Decimal | None


@dataclass(frozen=True)
class ReconciliationRow:
    """One billing period and currency: the bill = attributed + shared + unallocated."""

    billing_period: str
    billing_currency: str
    bill_total: Decimal
    attributed: Decimal
    shared: Decimal
    unallocated: Decimal
    difference: Decimal


@dataclass(frozen=True)
class RunSummary:
    """What a run's summary shows: the top experiments by cost, of how many, and the bill."""

    experiments: list[ExperimentCost]
    experiment_count: int
    reconciliation: list[ReconciliationRow]

    @property
    def more_experiments(self) -> int:
        """How many experiments the summary leaves out."""
        return self.experiment_count - len(self.experiments)


def top_experiments(
    con: duckdb.DuckDBPyConnection, top: int | None = 10
) -> tuple[list[ExperimentCost], int]:
    """The ``top`` experiments by fully loaded effective cost (all when None), and how many
    experiments marts.experiment_costs holds."""
    if top is not None and top < 0:
        raise ValueError(f"top must be 0 or more, not {top}")
    rows = con.execute(_EXPERIMENTS, [top]).fetchall()
    if rows:
        count = rows[0][-1]
    else:  # no row to carry the count: top is 0, or there is no experiment
        count = con.execute(
            "select count(distinct experiment_id) from marts.experiment_costs"
        ).fetchone()[0]  # type: ignore[index]
    return [ExperimentCost(*row[:-1]) for row in rows], int(count)


def reconciliation(con: duckdb.DuckDBPyConnection) -> list[ReconciliationRow]:
    """marts.reconciliation in the effective basis, fully loaded, by period and currency."""
    return [ReconciliationRow(*row) for row in con.execute(_RECONCILIATION).fetchall()]


def run_summary(con: duckdb.DuckDBPyConnection, top: int | None = 10) -> RunSummary:
    """The summary of a published snapshot: ``top`` experiments by cost and the reconciliation."""
    experiments, count = top_experiments(con, top)
    return RunSummary(experiments, count, reconciliation(con))
