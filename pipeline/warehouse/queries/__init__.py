"""The questions the CLI asks of a warehouse, as functions returning dataclasses; no printing."""

from pipeline.warehouse.queries.changes import (
    COST_CHANGE_COLUMNS,
    CostChange,
    cost_changes,
    select_cost_changes,
)
from pipeline.warehouse.queries.costs import (
    ExperimentCost,
    ReconciliationRow,
    RunSummary,
    reconciliation,
    run_summary,
    top_experiments,
)
from pipeline.warehouse.queries.explain import BASES, CostGroup, Explanation, explain_attempt
from pipeline.warehouse.queries.runs import LastRun, PeriodTotal, RunOutcome, last_run, run_outcome
from pipeline.warehouse.queries.status import (
    CurrentSnapshot,
    PeriodStatus,
    WarehouseStatus,
    period_statuses,
    warehouse_status,
)

__all__ = [
    "BASES",
    "COST_CHANGE_COLUMNS",
    "CostChange",
    "CostGroup",
    "CurrentSnapshot",
    "ExperimentCost",
    "Explanation",
    "LastRun",
    "PeriodStatus",
    "PeriodTotal",
    "ReconciliationRow",
    "RunOutcome",
    "RunSummary",
    "WarehouseStatus",
    "cost_changes",
    "explain_attempt",
    "last_run",
    "period_statuses",
    "reconciliation",
    "run_outcome",
    "run_summary",
    "select_cost_changes",
    "top_experiments",
    "warehouse_status",
]
