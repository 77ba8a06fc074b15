"""The run summary's queries: the costliest experiments, how many, and the reconciliation."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

import duckdb
import pytest

from pipeline.common.money import MONEY_SQL
from pipeline.warehouse.queries import (
    ExperimentCost,
    ReconciliationRow,
    RunSummary,
    reconciliation,
    run_summary,
    top_experiments,
)

# (experiment, attempts, failed, marginal, fully loaded, failed attempts' cost, experiment-only)
EXPERIMENTS = [
    ("exp-a", 2, 1, "10.5", "100.25", "40.0000000001", "0"),
    ("exp-b", 1, 0, "3", "300", "0", "1.5"),
    ("exp-c", 3, 2, "7", "100.25", "9", "0"),  # ties exp-a: the name breaks the tie
    ("exp-d", 1, 1, "0.0000000001", "0.0000000002", "0.0000000002", "0"),
]


def given(rows: list[tuple]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("create schema marts")
    con.execute(
        "create table marts.experiment_costs (experiment_id varchar, allocation_model varchar, "
        f"attempts bigint, failed_attempts bigint, effective_cost {MONEY_SQL}, "
        f"failed_attempt_cost {MONEY_SQL}, experiment_only_cost {MONEY_SQL})"
    )
    for experiment, attempts, failed, marginal, loaded, failed_cost, only in rows:
        # the mart's columns hold the same parts under either model; the summary reads one
        for model, cost in (("marginal", marginal), ("fully_loaded", loaded)):
            con.execute(
                "insert into marts.experiment_costs values (?, ?, ?, ?, ?, ?, ?)",
                [experiment, model, attempts, failed, cost, failed_cost, only],
            )
    con.execute(
        "create table marts.reconciliation (allocation_model varchar, cost_basis varchar, "
        "billing_period varchar, billing_currency varchar, "
        + ", ".join(
            f"{name} {MONEY_SQL}"
            for name in ("bill_total", "attributed", "shared", "unallocated", "difference")
        )
        + ")"
    )
    bill = [
        ("fully_loaded", "effective_cost", "2026-10", "USD", "500", "410", "80", "10", "0"),
        ("fully_loaded", "effective_cost", "2026-09", "USD", "7.25", "7", "0.25", "0", "0"),
        ("fully_loaded", "effective_cost", "2026-10", "EUR", "1", "1", "0", "0", "0"),
        ("marginal", "effective_cost", "2026-10", "USD", "500", "13.5", "0", "486.5", "0"),
        ("fully_loaded", "billed_cost", "2026-10", "USD", "600", "600", "0", "0", "0"),
    ]
    con.executemany("insert into marts.reconciliation values (?, ?, ?, ?, ?, ?, ?, ?, ?)", bill)
    return con


@pytest.fixture
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    con = given(EXPERIMENTS)
    yield con
    con.close()


def expected(name: str) -> ExperimentCost:
    row = next(row for row in EXPERIMENTS if row[0] == name)
    return ExperimentCost(row[0], row[1], row[2], *(Decimal(value) for value in row[3:]))


def test_the_top_experiments_are_the_costliest_fully_loaded_with_the_count(con) -> None:
    assert top_experiments(con, 2) == ([expected("exp-b"), expected("exp-a")], 4)


@pytest.mark.parametrize("top", [None, 4, 10])
def test_every_experiment_when_top_reaches_them_all(con, top: int | None) -> None:
    order = ["exp-b", "exp-a", "exp-c", "exp-d"]
    assert top_experiments(con, top) == ([expected(name) for name in order], 4)


def test_amounts_are_exact_to_the_tenth_decimal(con) -> None:
    experiments, _count = top_experiments(con, None)
    assert experiments[0].fully_loaded == Decimal("300.0000000000")
    assert experiments[1].failed_attempt_cost == Decimal("40.0000000001")
    assert experiments[-1].marginal == Decimal("1E-10")
    assert experiments[-1].fully_loaded == Decimal("2E-10")


@pytest.mark.parametrize("rows", [EXPERIMENTS, []], ids=["four", "none"])
def test_top_zero_lists_none_and_still_counts(rows: list[tuple]) -> None:
    con = given(rows)
    try:
        assert top_experiments(con, 0) == ([], len(rows))
    finally:
        con.close()


def test_no_experiment_at_all() -> None:
    con = given([])
    try:
        assert run_summary(con) == RunSummary([], 0, reconciliation(con))
        assert len(reconciliation(con)) == 3
    finally:
        con.close()


def test_a_negative_top_is_refused(con) -> None:
    with pytest.raises(ValueError, match="top must be 0 or more, not -1"):
        top_experiments(con, -1)


def test_reconciliation_is_effective_and_fully_loaded_by_period_and_currency(con) -> None:
    assert reconciliation(con) == [
        ReconciliationRow("2026-09", "USD", *map(Decimal, ("7.25", "7", "0.25", "0", "0"))),
        ReconciliationRow("2026-10", "EUR", *map(Decimal, ("1", "1", "0", "0", "0"))),
        ReconciliationRow("2026-10", "USD", *map(Decimal, ("500", "410", "80", "10", "0"))),
    ]


def test_the_run_summary_says_how_many_it_leaves_out(con) -> None:
    summary = run_summary(con, top=1)
    assert summary == RunSummary([expected("exp-b")], 4, reconciliation(con))
    assert summary.more_experiments == 3
    assert run_summary(con).more_experiments == 0
