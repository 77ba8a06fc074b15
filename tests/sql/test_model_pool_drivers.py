"""Pool drivers (cpu_memory_requested, attempt_count, cost_weighted), no-usage pools, overlaps,
inference exclusion and queue time, on hand-made lines."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from decimal import Decimal

from builders import at, cur_line, line_id, records

from pipeline.dag.pools import log_pool_warnings

D = Decimal


def eks_fee(cost: float = 1.0, **columns) -> dict:
    return cur_line(
        line_item_product_code="AmazonEKS",
        line_item_resource_id="arn:aws:eks:us-east-1:1:cluster/ml",
        line_item_unblended_cost=cost,
        **columns,
    )


def one_pool(**settings) -> dict:
    return {"pools": [{"name": "eks", "selector": "resource_class = 'platform'", **settings}]}


def amounts(con, kind: str = "shared", model: str = "fully_loaded") -> dict[str, Decimal]:
    rows = records(
        con,
        "select attempt_id, sum(billed_cost) as cost from allocation.cost_allocations "
        "where allocation_kind = ? and allocation_model = ? group by attempt_id",
        kind,
        model,
    )
    return {row["attempt_id"]: row["cost"] for row in rows}


def unallocated(con, model: str = "fully_loaded") -> list[tuple]:
    rows = records(
        con,
        "select line_id, pool_name, unallocated_reason, billed_cost "
        "from allocation.cost_allocations "
        "where allocation_kind = 'unallocated' and allocation_model = ? order by line_id",
        model,
    )
    return [tuple(row.values()) for row in rows]


def test_cpu_memory_requested_adds_the_vcpu_share_and_the_memory_share(build):
    attempts = [
        {"attempt_id": "a1", "experiment_id": "e", "started_at": at(10), "ended_at": at(11)},
        {"attempt_id": "a2", "experiment_id": "e", "started_at": at(10, 30), "ended_at": at(12)},
    ]
    # rows without times hold for the attempt's interval: a1 3600 s, a2 1800 s of the hour
    resources = [
        {"attempt_id": "a1", "resource_id": "pod-1", "vcpu_count": 8.0, "memory_gib": 32.0},
        {"attempt_id": "a2", "resource_id": "pod-2", "vcpu_count": 8.0, "memory_gib": 96.0},
    ]

    con, report = build(
        [eks_fee(3.0)], attempts, resources, config=one_pool(driver="cpu_memory_requested")
    )

    # vCPU-seconds 28800 : 14400 -> 2/3, 1/3; GiB-seconds 115200 : 172800 -> 0.4, 0.6
    # weights 16/15 and 14/15 of 2 -> 1.6 and 1.4 of $3
    assert amounts(con) == {"a1": D("1.6"), "a2": D("1.4")}
    weights = records(
        con, "select attempt_id, weight from allocation.pool_driver_weights order by attempt_id"
    )
    assert weights == [
        {"attempt_id": "a1", "weight": D("1.066666666667")},
        {"attempt_id": "a2", "weight": D("0.933333333333")},
    ]
    assert report.check_failures == []


def test_attempt_count_weighs_each_attempt_started_in_the_window_once(build):
    attempts = [
        {"attempt_id": "a1", "experiment_id": "e", "started_at": at(10), "ended_at": at(11)},
        {"attempt_id": "a2", "experiment_id": "e", "started_at": at(10, 30), "ended_at": at(12)},
        {"attempt_id": "a3", "experiment_id": "e", "started_at": at(12), "ended_at": at(13)},
        # started in September: it runs in October but was not launched there
        {
            "attempt_id": "a0",
            "experiment_id": "e",
            "started_at": datetime(2026, 9, 30, 23, tzinfo=UTC),
            "ended_at": at(1),
        },
        {"attempt_id": "a4", "experiment_id": "e", "status": "cancelled"},
    ]
    config = one_pool(driver="attempt_count", spread="billing_period")

    con, report = build([eks_fee(3.0)], attempts, [], config=config)

    assert amounts(con) == {"a1": D(1), "a2": D(1), "a3": D(1)}
    assert report.check_failures == []


def test_cost_weighted_spreads_an_account_credit_by_net_attributed_cost(build):
    attempts = [
        {"attempt_id": "a1", "experiment_id": "e", "started_at": at(10), "ended_at": at(11)},
        {"attempt_id": "a2", "experiment_id": "e", "started_at": at(10), "ended_at": at(11)},
        {"attempt_id": "a3", "experiment_id": "e", "started_at": at(10), "ended_at": at(11)},
    ]
    lines = [
        cur_line(line_item_unblended_cost=40.0, line_item_net_unblended_cost=30.0,
                 resource_tags={"user_attempt_id": "a1"}),
        cur_line(line_item_unblended_cost=10.0, line_item_net_unblended_cost=10.0,
                 resource_tags={"user_attempt_id": "a2"}),
        cur_line(line_item_line_item_type="Credit", line_item_unblended_cost=-8.0,
                 line_item_usage_start_date=at(0), line_item_usage_end_date=at(0, day=2),
                 pricing_unit=""),
    ]  # fmt: skip
    config = {
        "pools": [
            {
                "name": "credits",
                "selector": "resource_class = 'credit'",
                "driver": "cost_weighted",
                "basis": "net_cost",
                "spread": "billing_period",
            }
        ]
    }

    con, report = build(lines, attempts, [], config=config)

    # net attributed cost 30 : 10 : 0 (a3 has none, so no share)
    assert amounts(con) == {"a1": D(-6), "a2": D(-2)}
    costs = records(
        con,
        "select attempt_id, net_cost from marts.attempt_costs "
        "where allocation_model = 'fully_loaded' order by attempt_id",
    )
    assert [row["net_cost"] for row in costs] == [D(24), D(8), D(0)]
    assert report.check_failures == []


def test_a_driver_without_usage_data_leaves_the_pool_unallocated_and_warns(build, caplog):
    attempts = [
        {"attempt_id": "a1", "experiment_id": "e", "started_at": at(10), "ended_at": at(11)},
    ]  # no gpu_count, no vCPU or memory in attempt_resources
    config = {
        "pools": [
            {"name": "gpu-pool", "selector": "resource_class = 'platform'"},
            {"name": "cpu-pool", "selector": "resource_class = 'tax'",
             "driver": "cpu_memory_requested"},
        ]
    }  # fmt: skip
    lines = [eks_fee(2.0), cur_line(line_item_line_item_type="Tax", line_item_unblended_cost=1.0)]

    con, report = build(
        lines, attempts, [{"attempt_id": "a1", "resource_id": "i-1"}], config=config
    )

    assert unallocated(con) == [
        (line_id(0), "gpu-pool", "pool_driver_no_usage", D(2)),
        (line_id(1), "cpu-pool", "pool_driver_no_usage", D(1)),
    ]
    with caplog.at_level(logging.WARNING, logger="runcost"):
        log_pool_warnings(con)
    messages = [record.getMessage() for record in caplog.records]
    assert any(
        m.startswith("pool cpu-pool: driver cpu_memory_requested has no usage") for m in messages
    )
    assert any(m.startswith("pool gpu-pool: driver gpu_seconds has no usage") for m in messages)
    assert report.check_failures == []


def test_lines_several_pools_match_go_to_the_first_and_are_reported(build, caplog):
    attempts = [
        {"attempt_id": "a1", "experiment_id": "e", "started_at": at(10), "ended_at": at(11)},
    ]
    config = {
        "pools": [
            {"name": "platform", "selector": "resource_class = 'platform'", "driver": "even"},
            {"name": "everything", "selector": "billed_cost > 0", "driver": "even"},
        ]
    }
    lines = [eks_fee(2.0), eks_fee(3.0), cur_line(line_item_unblended_cost=5.0)]

    con, report = build(lines, attempts, [], config=config)

    matches = records(
        con,
        "select line_id, pool_order, first_match from allocation.pool_line_matches "
        "order by line_id, pool_order",
    )
    assert [tuple(row.values()) for row in matches] == [
        (line_id(0), 1, True), (line_id(0), 2, False), (line_id(1), 1, True),
        (line_id(1), 2, False), (line_id(2), 2, True),
    ]  # fmt: skip
    overlaps = records(
        con,
        "select pool_name, overlapping_pool_name, cost_lines, billed_cost from marts.pool_overlaps",
    )
    assert overlaps == [
        {
            "pool_name": "platform",
            "overlapping_pool_name": "everything",
            "cost_lines": 2,
            "billed_cost": D(5),
        }
    ]
    rows = records(
        con,
        "select pool_name, sum(billed_cost) as cost from allocation.cost_allocations "
        "where allocation_model = 'fully_loaded' group by pool_name order by pool_name",
    )
    assert rows == [
        {"pool_name": "everything", "cost": D(5)},
        {"pool_name": "platform", "cost": D(5)},
    ]
    with caplog.at_level(logging.WARNING, logger="runcost"):
        log_pool_warnings(con)
    assert [record.getMessage() for record in caplog.records] == [
        "pool platform: 2 cost line(s) also match pool everything, which comes later in "
        "runcost.toml and does not get them (the first matching pool wins); narrow one selector"
    ]
    assert report.check_failures == []


INFERENCE = [
    cur_line(line_item_product_code="AmazonBedrock", line_item_unblended_cost=4.0,
             line_item_usage_type="USE1-Claude3Sonnet-input-tokens", pricing_unit="",
             resource_tags={"user_attempt_id": "a1"}),
    cur_line(line_item_product_code="AmazonSageMaker", line_item_unblended_cost=2.0,
             line_item_usage_type="USE1-Hosting:ml.g5.xlarge", line_item_resource_id="ep-1"),
    cur_line(line_item_product_code="AmazonSageMaker", line_item_unblended_cost=8.0,
             line_item_usage_type="USE1-Train:ml.p4d.24xlarge",
             resource_tags={"user_attempt_id": "a1"}),
]  # fmt: skip
ONE_ATTEMPT = [{"attempt_id": "a1", "experiment_id": "e", "started_at": at(10), "ended_at": at(11)}]
CATCH_ALL = {"name": "all", "selector": "true", "driver": "even"}


def test_inference_lines_are_excluded_in_both_models_by_default(build):
    con, report = build(
        INFERENCE, ONE_ATTEMPT, [{"attempt_id": "a1", "resource_id": "ep-1"}],
        config={"pools": [CATCH_ALL]},
    )  # fmt: skip

    for model in ("marginal", "fully_loaded"):
        assert unallocated(con, model) == [
            (line_id(0), None, "excluded_inference", D(4)),
            (line_id(1), None, "excluded_inference", D(2)),
        ]
        assert amounts(con, "attributed", model) == {"a1": D(8)}
    assert records(con, "select line_id from attribution.excluded_lines order by 1") == [
        {"line_id": line_id(0)},
        {"line_id": line_id(1)},
    ]
    # the catch-all pool's selector matches them, but no pool takes an excluded line's rest
    rests = "select line_id, pool_name from allocation.line_remainders order by 1"
    assert records(con, rests) == [
        {"line_id": line_id(0), "pool_name": None},
        {"line_id": line_id(1), "pool_name": None},
    ]
    assert report.check_failures == []


def test_exclusion_can_be_turned_off_or_replaced(build):
    con, report = build(INFERENCE, ONE_ATTEMPT, [], config={"allocation": {"exclude": ""}})
    assert amounts(con, "attributed", "marginal") == {"a1": D(12)}
    assert report.check_failures == []

    config = {"allocation": {"exclude": "usage_type like '%Train%'"}}
    con, report = build(INFERENCE, ONE_ATTEMPT, [], config=config)
    assert amounts(con, "attributed", "marginal") == {"a1": D(4)}
    reasons = {row[0]: row[2] for row in unallocated(con, "marginal")}
    # the untagged hosting line, no longer excluded, has no holder
    assert reasons == {line_id(1): "no_matching_attempt", line_id(2): "excluded_inference"}
    assert report.check_failures == []


def test_queue_time_is_not_billed_time(build):
    # q waits for capacity 09:00-10:00 and runs 10:00-11:00 on i-q; r runs 09:00-11:00
    attempts = [
        {"attempt_id": "q", "experiment_id": "e", "submitted_at": at(9), "started_at": at(10),
         "ended_at": at(11), "gpu_count": 8},
        {"attempt_id": "r", "experiment_id": "e", "submitted_at": at(9), "started_at": at(9),
         "ended_at": at(11), "gpu_count": 1},
    ]  # fmt: skip
    lines = [
        eks_fee(1.0, line_item_usage_start_date=at(9), line_item_usage_end_date=at(10)),
        cur_line(line_item_resource_id="i-q", line_item_unblended_cost=5.0,
                 line_item_usage_start_date=at(9), line_item_usage_end_date=at(10)),
        cur_line(line_item_resource_id="i-q", line_item_unblended_cost=5.0),
    ]  # fmt: skip
    resources = [{"attempt_id": "q", "resource_id": "i-q"}]  # no times: the attempt's own

    con, report = build(lines, attempts, resources, config=one_pool(driver="gpu_seconds"))

    costs = records(
        con,
        "select attempt_id, allocation_model, billed_cost from marts.attempt_costs "
        "order by attempt_id, allocation_model",
    )
    # q pays its running hour only: no compute and no pool share for the hour it queued
    assert [tuple(row.values()) for row in costs] == [
        ("q", "fully_loaded", D(5)),
        ("q", "marginal", D(5)),
        ("r", "fully_loaded", D(1)),
        ("r", "marginal", D(0)),
    ]
    assert unallocated(con, "marginal")[1] == (line_id(1), None, "outside_any_attempt", D(5))
    assert report.check_failures == []
