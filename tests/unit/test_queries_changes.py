"""cost_changes: marts.cost_changes by model, marginal first, money exact."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

import duckdb
import pytest

from pipeline.common.money import MONEY_SQL
from pipeline.warehouse.queries import (
    COST_CHANGE_COLUMNS,
    CostChange,
    cost_changes,
    select_cost_changes,
)

# (level, experiment, attempt, model, previous, total, change, previous status, status, reasons)
ROWS = [
    ("attempt", "exp-a", "att-2", "marginal", "1", "2", "1", "billed", "billed", "late_rows"),
    ("attempt", "exp-a", "att-1", "fully_loaded", "5", "4.9999999999", "-0.0000000001",
     "estimated", "billed", "estimate_replaced"),
    ("experiment", "exp-a", None, "fully_loaded", None, "7", "7", None, "billed", "new_telemetry"),
    ("attempt", "exp-a", "att-2", "fully_loaded", "1", "2", "1", "billed", "billed", "late_rows"),
]  # fmt: skip


@pytest.fixture
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect()
    con.execute("create schema marts")
    con.execute(
        "create table marts.cost_changes (change_level varchar, experiment_id varchar, "
        f"attempt_id varchar, allocation_model varchar, previous_total {MONEY_SQL}, "
        f"total {MONEY_SQL}, change {MONEY_SQL}, previous_cost_status varchar, "
        "cost_status varchar, reasons varchar, previous_run_id varchar)"
    )
    con.executemany(f"insert into marts.cost_changes values ({', '.join('?' * 10)}, 'run-0')", ROWS)
    yield con
    con.close()


def change(model: str, level: str, attempt: str | None, *money: str | None) -> CostChange:
    row = next(row for row in ROWS if row[3] == model and row[0] == level and row[2] == attempt)
    amounts = [None if value is None else Decimal(value) for value in money]
    return CostChange(model, level, row[1], attempt, *amounts, row[7], row[8], row[9])


def test_both_models_marginal_first_then_level_experiment_attempt(con) -> None:
    assert cost_changes(con) == [
        change("marginal", "attempt", "att-2", "1", "2", "1"),
        change("fully_loaded", "attempt", "att-1", "5", "4.9999999999", "-0.0000000001"),
        change("fully_loaded", "attempt", "att-2", "1", "2", "1"),
        change("fully_loaded", "experiment", None, None, "7", "7"),
    ]


@pytest.mark.parametrize("model", ["marginal", "fully_loaded"])
def test_one_model(con, model: str) -> None:
    found = cost_changes(con, model)
    assert [row.allocation_model for row in found] == [model] * (3 if model != "marginal" else 1)
    assert found == [row for row in cost_changes(con) if row.allocation_model == model]


def test_the_cursor_streams_the_same_rows_under_the_published_names(con) -> None:
    cursor = select_cost_changes(con, "both")
    assert tuple(column[0] for column in cursor.description) == COST_CHANGE_COLUMNS
    assert cursor.fetchall() == [row.values() for row in cost_changes(con)]


def test_an_unknown_model_is_refused(con) -> None:
    with pytest.raises(ValueError, match="allocation_model must be one of"):
        cost_changes(con, "loaded")
