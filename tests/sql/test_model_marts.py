"""marts.*: attempt and experiment costs, unallocated cost by reason, and the reconciliation."""

from __future__ import annotations

from decimal import Decimal

from builders import BASES, MODELS, at, cur_line, records

D = Decimal


def tagged(attempt_id: str, cost: float, **columns) -> dict:
    return cur_line(
        line_item_unblended_cost=cost, resource_tags={"user_attempt_id": attempt_id}, **columns
    )


ATTEMPTS = [
    {"attempt_id": "a1", "experiment_id": "e1", "status": "succeeded", "gpu_count": 8,
     "started_at": at(10), "ended_at": at(11)},
    {"attempt_id": "a2", "experiment_id": "e1", "status": "failed", "gpu_count": 2,
     "started_at": at(10), "ended_at": at(11, 30)},
    {"attempt_id": "a3", "experiment_id": "e1", "status": "interrupted",
     "started_at": at(10), "ended_at": at(10, 15)},
    {"attempt_id": "a4", "experiment_id": "e1", "status": "timeout",
     "started_at": at(10), "ended_at": at(12)},
    {"attempt_id": "a5", "experiment_id": "e1", "status": "cancelled"},
    {"attempt_id": "a6", "experiment_id": "e3", "status": "running", "started_at": at(10)},
]  # fmt: skip

LINES = [
    tagged("a1", 10.0),
    # covered by a Savings Plan: billed 5, effective 3
    tagged(
        "a2",
        5.0,
        line_item_line_item_type="SavingsPlanCoveredUsage",
        savings_plan_savings_plan_effective_cost=3.0,
    ),
    tagged("a3", 2.0),
    cur_line(line_item_unblended_cost=1.5, resource_tags={"user_experiment_id": "e1"}),
    cur_line(line_item_unblended_cost=0.75, line_item_product_code="AWSSupport"),
    cur_line(
        line_item_unblended_cost=0.25,
        line_item_product_code="AWSSupport",
        line_item_line_item_type="Fee",
    ),
    cur_line(line_item_unblended_cost=4.0, line_item_resource_id="i-idle"),
    cur_line(line_item_unblended_cost=-1.0, line_item_line_item_type="Credit"),
]


def test_attempt_costs_has_every_attempt_once_per_model(build):
    con, report = build(LINES, ATTEMPTS, [])

    rows = records(
        con,
        "select attempt_id, allocation_model, billed_cost, effective_cost, cost_slices, "
        "wall_hours, gpu_hours from marts.attempt_costs order by attempt_id, allocation_model",
    )

    expected = []
    for attempt_id, billed, effective, slices, wall, gpu in [
        ("a1", D(10), D(10), 1, 1.0, 8.0),
        ("a2", D(5), D(3), 1, 1.5, 3.0),
        ("a3", D(2), D(2), 1, 0.25, 0.0),
        ("a4", D(0), D(0), 0, 2.0, 0.0),
        ("a5", D(0), D(0), 0, None, None),
        ("a6", D(0), D(0), 0, None, None),
    ]:
        for model in sorted(MODELS):
            expected.append((attempt_id, model, billed, effective, slices, wall, gpu))
    assert [tuple(row.values()) for row in rows] == expected
    assert report.check_failures == []


def test_experiment_costs_count_failed_attempts_and_experiment_only_cost(build):
    con, report = build(
        LINES, ATTEMPTS, [], experiments=[{"experiment_id": "e2", "team": "vision"}]
    )

    rows = records(
        con,
        "select experiment_id, team, attempts, failed_attempts, billed_cost, effective_cost, "
        "failed_attempt_cost, experiment_only_cost from marts.experiment_costs "
        "where allocation_model = 'marginal' order by experiment_id",
    )

    assert [tuple(row.values()) for row in rows] == [
        # a2 (failed, effective 3), a3 (interrupted, 2) and a4 (timeout, 0) are failed attempts
        ("e1", None, 5, 3, D("18.5"), D("16.5"), D(5), D("1.5")),
        ("e2", "vision", 0, 0, D(0), D(0), D(0), D(0)),
        ("e3", None, 1, 0, D(0), D(0), D(0), D(0)),
    ]
    models = records(
        con, "select allocation_model, count(*) as n from marts.experiment_costs group by all"
    )
    assert sorted((row["allocation_model"], row["n"]) for row in models) == [
        ("fully_loaded", 3),
        ("marginal", 3),
    ]
    assert report.check_failures == []


def test_fully_loaded_experiment_costs_include_shared_cost(build):
    config = {"pools": [{"name": "support", "selector": "service_name = 'AWSSupport'",
                         "driver": "even", "spread": "billing_period"}]}  # fmt: skip

    con, report = build(LINES, ATTEMPTS, [], config=config)

    rows = records(
        con,
        "select experiment_id, effective_cost, failed_attempt_cost from marts.experiment_costs "
        "where allocation_model = 'fully_loaded' order by experiment_id",
    )
    # support (0.75 + 0.25) is spread evenly over the five attempts that started
    assert [tuple(row.values()) for row in rows] == [
        ("e1", D("17.3"), D("5.6")),
        ("e3", D("0.2"), D(0)),
    ]
    assert report.check_failures == []


def test_unallocated_costs_group_by_reason_and_service(build):
    lines = [
        *LINES,
        cur_line(line_item_unblended_cost=2.0, line_item_resource_id="i-idle"),
        cur_line(line_item_unblended_cost=3.0, resource_tags={"user_attempt_id": "ghost"}),
    ]
    con, report = build(lines, ATTEMPTS, [])

    rows = records(
        con,
        "select unallocated_reason, service_name, cost_lines, billed_cost, effective_cost "
        "from marts.unallocated_costs where allocation_model = 'marginal' order by all",
    )

    assert [tuple(row.values()) for row in rows] == [
        ("no_matching_attempt", "AmazonEC2", 2, D(6), D(6)),
        ("no_resource_id", "AWSSupport", 2, D(1), D(1)),
        ("no_resource_id", "AmazonEC2", 1, D(-1), D(-1)),
        ("unknown_attempt_tag", "AmazonEC2", 1, D(3), D(3)),
    ]
    assert report.check_failures == []


def test_reconciliation_balances_every_basis_and_model(build):
    lines = [*LINES, cur_line(line_item_unblended_cost=0.5, pricing_public_on_demand_cost=0.75)]
    lines[0] = {**lines[0], "pricing_public_on_demand_cost": 12.0, "bill_invoice_id": "INV-1"}
    config = {"pools": [{"name": "support", "selector": "service_name = 'AWSSupport'",
                         "driver": "even"}]}  # fmt: skip

    con, report = build(lines, ATTEMPTS, [], config=config)

    rows = records(
        con,
        "select allocation_model, cost_basis, cost_lines, invoiced, bill_total, attributed, "
        "shared, unallocated, difference from marts.reconciliation "
        "order by allocation_model, cost_basis",
    )
    # bill: 10 + 5 + 2 + 1.5 + 0.75 + 0.25 + 4 - 1 + 0.5 = 23; effective has 3 for 5 on a2
    # attributed: a1 10, a2 5 (effective 3), a3 2, e1 alone 1.5; the support pool (10:00-11:00,
    # even) shares 1 over a1..a4 and a6; unallocated: i-idle 4, credit -1, untagged 0.5
    totals = {
        "billed_cost": (D(23), D("18.5"), D(1), D("3.5")),
        "effective_cost": (D(21), D("16.5"), D(1), D("3.5")),
        "list_cost": (D("12.75"), D(12), D(0), D("0.75")),
        "net_cost": (D(21), D("16.5"), D(1), D("3.5")),
    }
    expected = []
    for model in sorted(MODELS):
        for basis in BASES:
            bill, attributed, shared, unallocated = totals[basis]
            if model == "marginal":
                shared, unallocated = D(0), unallocated + shared
            expected.append((model, basis, 9, False, bill, attributed, shared, unallocated, D(0)))
    assert [tuple(row.values()) for row in rows] == expected
    assert report.check_failures == []


def test_experiment_costs_sum_every_basis_over_failed_attempts(build):
    # each basis differs on every line, so a basis that dropped the failed attempt, or took
    # another basis's column, gives another number
    lines = [
        tagged(
            "a1",
            10.0,
            pricing_public_on_demand_cost=12.0,
            line_item_net_unblended_cost=9.0,
        ),
        # a2 failed: covered by a Savings Plan, billed 5, effective 3, net 2.5, list 8
        tagged(
            "a2",
            5.0,
            line_item_line_item_type="SavingsPlanCoveredUsage",
            savings_plan_savings_plan_effective_cost=3.0,
            savings_plan_net_savings_plan_effective_cost=2.5,
            pricing_public_on_demand_cost=8.0,
        ),
        cur_line(
            line_item_unblended_cost=1.5,
            pricing_public_on_demand_cost=1.75,
            line_item_net_unblended_cost=1.25,
            resource_tags={"user_experiment_id": "e1"},
        ),
    ]
    con, report = build(lines, ATTEMPTS, [])

    rows = records(
        con,
        "select allocation_model, failed_attempts, billed_cost, effective_cost, list_cost, "
        "net_cost, failed_attempt_cost from marts.experiment_costs "
        "where experiment_id = 'e1' order by allocation_model",
    )

    # a1 + a2 (failed) + the line tagged to e1, on each basis
    assert [tuple(row.values()) for row in rows] == [
        (model, 3, D("16.5"), D("14.5"), D("21.75"), D("12.75"), D(3)) for model in sorted(MODELS)
    ]
    assert report.check_failures == []
