"""How each attempt's and experiment's cost moved between two snapshots (marts.cost_changes)."""

from __future__ import annotations

from dataclasses import astuple, dataclass
from decimal import Decimal

import duckdb

ALLOCATION_MODELS = ("both", "marginal", "fully_loaded")
COST_CHANGE_COLUMNS = (
    "allocation_model", "change_level", "experiment_id", "attempt_id", "previous_total", "total",
    "change", "previous_cost_status", "cost_status", "reasons",
)  # fmt: skip
MONEY_COLUMNS = ("previous_total", "total", "change")
_CHANGES = f"""
select {", ".join(COST_CHANGE_COLUMNS)}
from marts.cost_changes
where ? in ('both', allocation_model)
order by allocation_model desc, change_level, experiment_id, attempt_id
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


def select_cost_changes(
    con: duckdb.DuckDBPyConnection, allocation_model: str = "both"
) -> duckdb.DuckDBPyConnection:
    """The executed query, for writers that stream it: COST_CHANGE_COLUMNS, marginal first.

    ``allocation_model`` is one of ALLOCATION_MODELS; "both" keeps a row per model.
    """
    if allocation_model not in ALLOCATION_MODELS:
        raise ValueError(f"allocation_model must be one of {ALLOCATION_MODELS}")
    return con.execute(_CHANGES, [allocation_model])


def cost_changes(
    con: duckdb.DuckDBPyConnection, allocation_model: str = "both"
) -> list[CostChange]:
    """Every row of marts.cost_changes for ``allocation_model``, in select_cost_changes' order."""
    return [CostChange(*row) for row in select_cost_changes(con, allocation_model).fetchall()]
