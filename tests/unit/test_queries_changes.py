"""cost_changes: marts.cost_changes by model, marginal first, money exact; other bases compared
with the previous snapshot's costs."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from pipeline.common.money import MONEY_SQL
from pipeline.warehouse.queries import (
    COST_CHANGE_COLUMNS,
    CostChange,
    cost_changes,
    select_cost_changes,
)
from pipeline.warehouse.queries.changes import (
    BASIS_ONLY_REASON,
    PreviousCosts,
    is_first_snapshot,
    previous_costs,
    previous_run_id,
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


# (experiment, attempt or None, model, billed, effective, unbilled estimate, cost status)
PREVIOUS_COSTS = [
    ("exp-a", "att-1", "fully_loaded", "5", "4", "0", "estimated"),
    ("exp-a", "att-2", "fully_loaded", "1", "1", "0", "billed"),
    ("exp-a", "att-3", "fully_loaded", "3", "2", "0", "billed"),
    ("exp-a", None, "fully_loaded", "9", "7", "0", "estimated"),
]
CURRENT_COSTS = [
    # billed moved and effective with it: the mart's reason is kept
    ("exp-a", "att-1", "fully_loaded", "4.9999999999", "6", "0", "billed"),
    # billed the same, effective moved (an amortized fee restated): no billed reason applies
    ("exp-a", "att-2", "fully_loaded", "1", "1.5", "0", "billed"),
    # att-3 is gone; att-4 is new, its hours estimated
    ("exp-a", "att-4", "fully_loaded", "0", "0", "2.5", "estimated"),
    ("exp-a", None, "fully_loaded", "5.9999999999", "7.5", "2.5", "estimated"),
]
COST_COLUMNS = (
    f"experiment_id varchar, attempt_id varchar, allocation_model varchar, "
    f"billed_cost {MONEY_SQL}, effective_cost {MONEY_SQL}, list_cost {MONEY_SQL}, "
    f"net_cost {MONEY_SQL}, unbilled_estimate {MONEY_SQL}, cost_status varchar"
)


def _cost_tables(con: duckdb.DuckDBPyConnection, prefix: str, rows: list[tuple]) -> None:
    for level, keep in (("attempt", True), ("experiment", False)):
        name = f"{prefix}{level}_costs"
        con.execute(f"create table {name} ({COST_COLUMNS})")
        for experiment, attempt, model, billed, effective, estimate, status in rows:
            if (attempt is not None) == keep:
                # list and net cost follow billed here: only effective is compared apart
                values = [experiment, attempt, model, billed, effective, billed, billed]
                con.execute(
                    f"insert into {name} values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [*values, estimate, status],
                )


@pytest.fixture
def two_snapshots(con: duckdb.DuckDBPyConnection) -> PreviousCosts:
    con.execute("delete from marts.cost_changes")
    con.executemany(
        f"insert into marts.cost_changes values ({', '.join('?' * 10)}, 'run-0')",
        [
            ("attempt", "exp-a", "att-1", "fully_loaded", "5", "4.9999999999", "-0.0000000001",
             "estimated", "billed", "estimate_replaced"),
            ("attempt", "exp-a", "att-3", "fully_loaded", "3", None, "-3", "billed", None,
             "new_telemetry"),
            ("experiment", "exp-a", None, "fully_loaded", "9", "8.4999999999", "-0.5000000001",
             "estimated", "estimated", "new_telemetry, estimate_replaced"),
        ],
    )  # fmt: skip
    _cost_tables(con, "marts.", CURRENT_COSTS)
    _cost_tables(con, "previous_", PREVIOUS_COSTS)
    return PreviousCosts("run-0", "previous_attempt_costs", "previous_experiment_costs")


def test_the_effective_basis_compares_effective_cost_and_keeps_the_billed_reasons(
    con, two_snapshots: PreviousCosts
) -> None:
    found = [
        (row.attempt_id or row.experiment_id, row.previous_total, row.total, row.change,
         row.previous_cost_status, row.cost_status, row.reasons)
        for row in cost_changes(con, "fully_loaded", "effective", two_snapshots)
    ]  # fmt: skip
    D = Decimal
    assert found == [
        ("att-1", D(4), D(6), D(2), "estimated", "billed", "estimate_replaced"),
        ("att-2", D(1), D("1.5"), D("0.5"), "billed", "billed", BASIS_ONLY_REASON),
        ("att-3", D(2), None, D(-2), "billed", None, "new_telemetry"),
        ("att-4", None, D("2.5"), D("2.5"), None, "estimated", "new_telemetry"),
        ("exp-a", D(7), D(10), D(3), "estimated", "estimated", "new_telemetry, estimate_replaced"),
    ]


def test_the_billed_basis_is_the_mart_as_built(con, two_snapshots: PreviousCosts) -> None:
    assert cost_changes(con, "both", "billed", two_snapshots) == cost_changes(con)
    assert [row.attempt_id for row in cost_changes(con, basis="billed")] == ["att-1", "att-3", None]


def test_another_basis_needs_the_previous_snapshot(con) -> None:
    with pytest.raises(ValueError, match="the net basis needs the previous snapshot's costs"):
        cost_changes(con, "both", "net")
    with pytest.raises(ValueError, match="basis must be one of"):
        cost_changes(con, "both", "amortized")


def test_a_first_run_names_no_previous_run(con) -> None:
    assert previous_run_id(con) == "run-0"
    assert not is_first_snapshot(con)
    con.execute("update marts.cost_changes set previous_run_id = null")
    assert previous_run_id(con) is None
    assert is_first_snapshot(con)
    con.execute("delete from marts.cost_changes")  # nothing moved: not a first run
    assert not is_first_snapshot(con)


def test_previous_costs_read_a_published_snapshot(tmp_path: Path) -> None:
    assert previous_costs(tmp_path / "pruned") is None
    assert previous_costs(tmp_path) is None  # a folder with no snapshot.json
