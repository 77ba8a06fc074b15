"""Golden test: the pipeline run on the scenario reproduces the oracle's costs to a micro-dollar."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from pipeline.config import load_config
from pipeline.scenario import write_scenario

TOLERANCE = Decimal("0.000001")
BASES = ("billed_cost", "effective_cost", "list_cost", "net_cost")
ATTEMPT_MONEY = (*BASES, "estimated_cost")
EXPERIMENT_MONEY = (*BASES, "failed_attempt_cost", "experiment_only_cost")


@pytest.fixture(scope="module")
def published(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Path, duckdb.DuckDBPyConnection]]:
    from pipeline.run import (
        run_pipeline,
    )  # the lead's entry point; imported here, not at collection

    folder = tmp_path_factory.mktemp("golden")
    result = run_pipeline(load_config(write_scenario(folder)))
    con = duckdb.connect(str(result.database), read_only=True)
    yield folder / "expected", con
    con.close()


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def mart(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, object]]:
    cursor = con.execute(sql)
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def assert_rows_match(
    actual: list[dict[str, object]],
    expected: list[dict[str, str]],
    keys: tuple[str, ...],
    money: tuple[str, ...],
    counts: tuple[str, ...] = (),
) -> None:
    got = {tuple(row[key] for key in keys): row for row in actual}
    want = {tuple(row[key] for key in keys): row for row in expected}
    assert sorted(got) == sorted(want)
    for key, row in want.items():
        for column in money:
            difference = abs(Decimal(str(got[key][column])) - Decimal(row[column]))
            assert difference <= TOLERANCE, (key, column, got[key][column], row[column])
        for column in counts:
            assert str(got[key][column]) == row[column], (key, column)


def test_attempt_costs_match_the_oracle(published) -> None:
    expected, con = published
    actual = mart(
        con,
        "select attempt_id, experiment_id, allocation_model, billed_cost, effective_cost, "
        "list_cost, net_cost, estimated_cost from marts.attempt_costs",
    )
    rows = read_csv(expected / "attempt_costs.csv")
    assert len(rows) == 20  # 10 attempts x 2 models
    assert_rows_match(actual, rows, ("attempt_id", "allocation_model"), ATTEMPT_MONEY)
    assert {(row["attempt_id"], row["experiment_id"]) for row in actual} == {
        (row["attempt_id"], row["experiment_id"]) for row in rows
    }


def test_experiment_costs_match_the_oracle(published) -> None:
    expected, con = published
    actual = mart(con, "select * from marts.experiment_costs")
    rows = read_csv(expected / "experiment_costs.csv")
    assert len(rows) == 10  # 5 experiments x 2 models
    assert_rows_match(
        actual,
        rows,
        ("experiment_id", "allocation_model"),
        EXPERIMENT_MONEY,
        counts=("attempts", "failed_attempts"),
    )


def test_reconciliation_closes_to_the_bill(published) -> None:
    expected, con = published
    rows = mart(con, "select * from marts.reconciliation")
    assert len(rows) == 8  # 2 models x 4 bases for one payer, period and currency
    assert all(row["difference"] == 0 for row in rows), rows
    (totals,) = read_csv(expected / "bill_totals.csv")
    for row in rows:
        assert row["billing_period"] == totals["billing_period"]
        assert Decimal(str(row["bill_total"])) == Decimal(totals[str(row["cost_basis"])])
