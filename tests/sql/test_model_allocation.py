"""allocation.*: pools spread unattributed cost by driver and window; slices sum to lines."""

from __future__ import annotations

from decimal import Decimal

import pytest
from builders import at, cur_line, line_id, records

D = Decimal


def eks_fee(cost: float = 1.0, **columns) -> dict:
    return cur_line(
        line_item_product_code="AmazonEKS",
        line_item_resource_id="arn:aws:eks:us-east-1:1:cluster/ml",
        line_item_unblended_cost=cost,
        **columns,
    )


ATTEMPTS = [
    {
        "attempt_id": "a1",
        "experiment_id": "e1",
        "started_at": at(10),
        "ended_at": at(11),
        "gpu_count": 1,
    },
    {
        "attempt_id": "a2",
        "experiment_id": "e1",
        "started_at": at(10, 30),
        "ended_at": at(12),
        "gpu_count": 2,
        "status": "failed",
    },
    {
        "attempt_id": "a3",
        "experiment_id": "e2",
        "started_at": at(12),
        "ended_at": at(13),
        "gpu_count": 4,
    },
    {"attempt_id": "a4", "experiment_id": "e2", "status": "cancelled", "gpu_count": 8},
]


def pool(**settings) -> dict:
    return {"pools": [{"name": "eks", "selector": "service_name = 'AmazonEKS'", **settings}]}


def slices(con, model: str = "fully_loaded") -> list[tuple]:
    """(line_id, kind, attempt_id, pool_name, reason, billed_cost) per slice of one model."""
    rows = records(
        con,
        "select line_id, allocation_kind, attempt_id, pool_name, unallocated_reason, billed_cost "
        "from allocation.cost_allocations where allocation_model = ? "
        "order by line_id, allocation_kind, attempt_id",
        model,
    )
    return [tuple(row.values()) for row in rows]


def shared_by_attempt(con) -> dict[str, Decimal]:
    rows = records(
        con,
        "select attempt_id, billed_cost from allocation.cost_allocations "
        "where allocation_kind = 'shared' order by attempt_id",
    )
    return {row["attempt_id"]: row["billed_cost"] for row in rows}


def test_gpu_seconds_over_the_charge_period(build):
    con, report = build([eks_fee(1.0)], ATTEMPTS, [], config=pool(driver="gpu_seconds"))

    # a1 holds 1 GPU for 3600 s of the hour, a2 2 GPUs for 1800 s; a3 starts after it
    assert slices(con) == [
        (line_id(0), "shared", "a1", "eks", None, D("0.5")),
        (line_id(0), "shared", "a2", "eks", None, D("0.5")),
    ]
    assert slices(con, "marginal") == [
        (line_id(0), "unallocated", None, None, "no_matching_attempt", D(1))
    ]
    assert report.check_failures == []


def test_gpu_seconds_over_the_billing_period(build):
    config = pool(driver="gpu_seconds", spread="billing_period")

    con, report = build([eks_fee(1.0)], ATTEMPTS, [], config=config)

    # GPU-seconds in October: a1 3600, a2 2 x 5400, a3 4 x 3600; of 28800
    assert shared_by_attempt(con) == {"a1": D("0.125"), "a2": D("0.375"), "a3": D("0.5")}
    shares = records(
        con, "select attempt_id, share from allocation.pool_shares order by attempt_id"
    )
    assert [row["share"] for row in shares] == [0.125, 0.375, 0.5]
    assert report.check_failures == []


def test_even_driver(build):
    con, report = build([eks_fee(3.0)], ATTEMPTS, [], config=pool(driver="even"))

    # a1 and a2 overlap the hour; a3 does not; a4 never started
    assert shared_by_attempt(con) == {"a1": D("1.5"), "a2": D("1.5")}
    assert report.check_failures == []


def test_even_driver_over_the_billing_period_gives_the_remainder_to_one_slice(build):
    config = pool(driver="even", spread="billing_period")

    con, report = build([eks_fee(1.0)], ATTEMPTS, [], config=config)

    amounts = shared_by_attempt(con)
    assert set(amounts) == {"a1", "a2", "a3"}
    assert sorted(amounts.values()) == [D("0.3333333333"), D("0.3333333333"), D("0.3333333334")]
    assert sum(amounts.values()) == D(1)
    assert report.check_failures == []


def test_pool_attempts_condition_excludes_attempts(build):
    config = pool(
        driver="gpu_seconds",
        spread="billing_period",
        attempts="status <> 'failed' and gpu_count >= 2",
    )

    con, report = build([eks_fee(7.0)], ATTEMPTS, [], config=config)

    # a1 has 1 GPU, a2 failed, a4 never started: a3 takes it all
    assert shared_by_attempt(con) == {"a3": D(7)}
    assert report.check_failures == []


def test_pool_attempts_condition_by_experiment(build):
    config = pool(driver="even", spread="billing_period", attempts="experiment_id = 'e1'")

    con, report = build([eks_fee(7.0)], ATTEMPTS, [], config=config)

    assert shared_by_attempt(con) == {"a1": D("3.5"), "a2": D("3.5")}
    assert report.check_failures == []


def test_pooled_line_without_eligible_attempts(build):
    lines = [
        eks_fee(2.0, line_item_usage_start_date=at(20), line_item_usage_end_date=at(21)),
        cur_line(line_item_unblended_cost=5.0, line_item_product_code="AWSSupport"),
    ]

    con, report = build(lines, ATTEMPTS, [], config=pool(driver="even"))

    assert slices(con) == [
        (line_id(0), "unallocated", None, "eks", "pool_no_eligible_attempts", D(2)),
        (line_id(1), "unallocated", None, None, "no_resource_id", D(5)),
    ]
    assert slices(con, "marginal") == [
        (line_id(0), "unallocated", None, None, "no_matching_attempt", D(2)),
        (line_id(1), "unallocated", None, None, "no_resource_id", D(5)),
    ]
    unallocated = records(
        con,
        "select allocation_model, unallocated_reason, billed_cost from marts.unallocated_costs "
        "order by allocation_model, unallocated_reason",
    )
    assert [tuple(row.values()) for row in unallocated] == [
        ("fully_loaded", "no_resource_id", D(5)),
        ("fully_loaded", "pool_no_eligible_attempts", D(2)),
        ("marginal", "no_matching_attempt", D(2)),
        ("marginal", "no_resource_id", D(5)),
    ]
    assert report.check_failures == []


def test_tiny_line_split_three_ways_still_sums_exactly(build):
    attempts = [
        {"attempt_id": name, "experiment_id": "e1", "started_at": at(10), "ended_at": at(11)}
        for name in ("a1", "a2", "a3")
    ]

    con, report = build([eks_fee(0.0000000001)], attempts, [], config=pool(driver="even"))

    amounts = shared_by_attempt(con)
    assert sorted(amounts.values()) == [D(0), D(0), D("0.0000000001")]
    assert report.check_failures == []


def test_remainder_rounding_across_all_bases(build):
    attempts = [
        {"attempt_id": name, "experiment_id": "e1", "started_at": at(10), "ended_at": at(11)}
        for name in ("a1", "a2", "a3")
    ]
    line = eks_fee(
        10.0,
        line_item_net_unblended_cost=9.1,
        pricing_public_on_demand_cost=12.2,
    )

    con, report = build([line], attempts, [], config=pool(driver="even"))

    totals = records(
        con,
        "select sum(billed_cost) as billed, sum(effective_cost) as effective, "
        "sum(list_cost) as list, sum(net_cost) as net, count(*) as slices "
        "from allocation.cost_allocations where allocation_model = 'fully_loaded'",
    )
    assert totals == [
        {"billed": D(10), "effective": D(10), "list": D("12.2"), "net": D("9.1"), "slices": 3}
    ]
    assert report.check_failures == []


@pytest.mark.parametrize(
    ("pools", "winner", "amounts"),
    [
        pytest.param(
            [
                {
                    "name": "only-a1",
                    "selector": "true",
                    "driver": "even",
                    "attempts": "attempt_id = 'a1'",
                },
                {"name": "eks", "selector": "service_name = 'AmazonEKS'", "driver": "even"},
            ],
            "only-a1",
            {"a1": D(4)},
            id="catch-all-first",
        ),
        pytest.param(
            [
                {"name": "eks", "selector": "service_name = 'AmazonEKS'", "driver": "even"},
                {
                    "name": "only-a1",
                    "selector": "true",
                    "driver": "even",
                    "attempts": "attempt_id = 'a1'",
                },
            ],
            "eks",
            {"a1": D(2), "a2": D(2)},
            id="eks-first",
        ),
    ],
)
def test_first_pool_in_config_order_wins(build, pools, winner, amounts):
    con, report = build([eks_fee(4.0)], ATTEMPTS, [], config={"pools": pools})

    names = records(con, "select distinct pool_name from allocation.pool_shares")
    assert names == [{"pool_name": winner}]
    # the rest names the pool that takes it, and is unallocated in the marginal model alone
    rests = records(
        con,
        "select rests.pool_name, slices.allocation_models from allocation.line_remainders as rests "
        "inner join allocation.unattributed_slices as slices on rests.line_id = slices.line_id "
        "where slices.allocation_kind = 'unallocated'",
    )
    assert rests == [{"pool_name": winner, "allocation_models": "marginal"}]
    assert shared_by_attempt(con) == amounts
    assert report.check_failures == []


def test_pool_takes_the_unattributed_rest_of_a_partly_placed_line(build):
    lines = [cur_line(line_item_resource_id="i-b", line_item_unblended_cost=36.0)]
    attempts = [
        {"attempt_id": "a2", "experiment_id": "e1", "started_at": at(10), "ended_at": at(10, 20)},
        {"attempt_id": "a3", "experiment_id": "e1", "started_at": at(10, 25), "ended_at": at(11)},
    ]
    resources = [
        {"attempt_id": "a2", "resource_id": "i-b"},
        {"attempt_id": "a3", "resource_id": "i-b"},
    ]
    config = {"pools": [{"name": "idle", "selector": "resource_id = 'i-b'", "driver": "even"}]}

    con, report = build(lines, attempts, resources, config=config)

    assert slices(con) == [
        (line_id(0), "attributed", "a2", None, None, D(12)),
        (line_id(0), "attributed", "a3", None, None, D(21)),
        (line_id(0), "shared", "a2", "idle", None, D("1.5")),
        (line_id(0), "shared", "a3", "idle", None, D("1.5")),
    ]
    costs = records(
        con,
        "select attempt_id, allocation_model, billed_cost, estimated_cost, shared_cost "
        "from marts.attempt_costs order by attempt_id, allocation_model",
    )
    assert [tuple(row.values()) for row in costs] == [
        ("a2", "fully_loaded", D("13.5"), D(12), D("1.5")),
        ("a2", "marginal", D(12), D(12), D(0)),
        ("a3", "fully_loaded", D("22.5"), D(21), D("1.5")),
        ("a3", "marginal", D(21), D(21), D(0)),
    ]
    assert report.check_failures == []


def test_attributed_lines_are_not_pooled(build):
    lines = [eks_fee(6.0, resource_tags={"user_attempt_id": "a3"})]

    con, report = build(lines, ATTEMPTS, [], config=pool(driver="even"))

    assert slices(con) == [(line_id(0), "attributed", "a3", None, None, D(6))]
    assert records(con, "select count(*) as n from allocation.pool_shares") == [{"n": 0}]
    assert report.check_failures == []
