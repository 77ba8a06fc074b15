"""explain_attempt: one attempt's slices grouped by method, pool, driver and service, exactly."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

import duckdb
import pytest

from pipeline.common.errors import RuncostError
from pipeline.common.money import MONEY_SQL
from pipeline.warehouse.queries import BASES, CostGroup, Explanation, explain_attempt

# (model, line, attempt, method, pool, driver, service, billed, effective, list, net)
DETAIL = [
    ("fully_loaded", 1, "att-1", "tag", None, None, "AmazonEC2", "10", "8", "12", "9"),
    ("fully_loaded", 2, "att-1", "tag", None, None, "AmazonEC2", "0.0000000001", "0", "0", "0"),
    ("fully_loaded", 3, "att-1", "pool", "eks", "gpu_seconds", "AmazonEKS", "2.5", "2.5", "3", "2"),
    # one line split in two slices is one line of the group
    ("fully_loaded", 4, "att-1", "pool", "eks", "gpu_seconds", "AmazonEKS", "1", "1", "1", "1"),
    ("fully_loaded", 4, "att-1", "pool", "eks", "gpu_seconds", "AmazonEKS", "1", "1", "1", "1"),
    ("marginal", 1, "att-1", "tag", None, None, "AmazonEC2", "10", "8", "12", "9"),
    ("fully_loaded", 5, "att-2", "tag", None, None, "AmazonS3", "99", "99", "99", "99"),
]
# (attempt, experiment, model, status, currency, billed, effective, list, net)
ATTEMPTS = [
    ("att-1", "exp-a", "fully_loaded", "failed", "USD", "14.5000000001", "12.5", "17", "13"),
    ("att-1", "exp-a", "marginal", "failed", "USD", "10", "8", "12", "9"),
    ("att-2", "exp-a", "fully_loaded", "succeeded", "USD", "99", "99", "99", "99"),
]


@pytest.fixture
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect()
    con.execute("create schema marts")
    money = ", ".join(f"{basis} {MONEY_SQL}" for basis in BASES)
    con.execute(
        "create table marts.allocation_detail (allocation_model varchar, line_id bigint, "
        "attempt_id varchar, allocation_method varchar, pool_name varchar, driver varchar, "
        f"service_name varchar, {money})"
    )
    con.executemany(f"insert into marts.allocation_detail values ({', '.join('?' * 11)})", DETAIL)
    con.execute(
        "create table marts.attempt_costs (attempt_id varchar, experiment_id varchar, "
        f"allocation_model varchar, status varchar, billing_currency varchar, {money})"
    )
    con.executemany(f"insert into marts.attempt_costs values ({', '.join('?' * 9)})", ATTEMPTS)
    yield con
    con.close()


def amounts(*values: str) -> dict[str, Decimal]:
    return dict(zip(BASES, map(Decimal, values), strict=True))


def test_the_groups_and_totals_of_one_attempt(con) -> None:
    assert explain_attempt(con, "att-1") == Explanation(
        attempt_id="att-1",
        experiment_id="exp-a",
        status="failed",
        allocation_model="fully_loaded",
        currency="USD",
        groups=[
            CostGroup(
                "pool", "eks", "gpu_seconds", "AmazonEKS", 2, amounts("4.5", "4.5", "5", "4")
            ),
            CostGroup("tag", "", "", "AmazonEC2", 2, amounts("10.0000000001", "8", "12", "9")),
        ],
        totals=amounts("14.5000000001", "12.5", "17", "13"),
    )


def test_the_groups_add_up_to_the_totals_to_the_tenth_decimal(con) -> None:
    result = explain_attempt(con, "att-1")
    assert result.group_sums() == result.totals
    assert result.groups[1]["billed_cost"] == Decimal("10.0000000001")


def test_another_model(con) -> None:
    result = explain_attempt(con, "att-1", "marginal")
    assert result.groups == [
        CostGroup("tag", "", "", "AmazonEC2", 1, amounts("10", "8", "12", "9"))
    ]
    assert result.totals == amounts("10", "8", "12", "9")


def test_an_attempt_that_is_not_in_the_mart(con) -> None:
    with pytest.raises(RuncostError) as raised:
        explain_attempt(con, "att-nobody")
    assert str(raised.value) == (
        "attempt 'att-nobody' is not in marts.attempt_costs of the published snapshot; list the "
        'attempts with: runcost sql "select attempt_id from marts.attempt_costs"'
    )
