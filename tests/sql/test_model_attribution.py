"""attribution.*: tags, experiment tags, resource and time overlaps, and reasons for the rest."""

from __future__ import annotations

from decimal import Decimal

import pytest
from builders import at, cur_line, line_id, records

D = Decimal


def placed(con) -> list[tuple]:
    """(line_id, attempt_id, experiment_id, method, confidence, billed_cost) per slice."""
    return [
        tuple(row.values())
        for row in records(
            con,
            "select line_id, attempt_id, experiment_id, attribution_method, confidence, "
            "billed_cost from attribution.line_attributions "
            "order by line_id, attempt_id nulls first",
        )
    ]


def left_over(con) -> list[tuple]:
    """(line_id, unallocated_reason, billed_cost) per line not wholly attributed."""
    return [
        tuple(row.values())
        for row in records(
            con,
            "select line_id, unallocated_reason, billed_cost "
            "from allocation.line_remainders order by line_id",
        )
    ]


def shares(con) -> dict[tuple[int, str | None], float]:
    rows = records(con, "select line_id, attempt_id, share from attribution.line_attributions")
    return {(row["line_id"], row["attempt_id"]): row["share"] for row in rows}


def attempt(attempt_id: str, start=None, end=None, **columns) -> dict:
    return {
        "attempt_id": attempt_id,
        "experiment_id": columns.pop("experiment_id", "exp-1"),
        "started_at": start,
        "ended_at": end,
        **columns,
    }


def held(attempt_id: str, resource_id: str | None, start=None, end=None, gpus=None) -> dict:
    return {
        "attempt_id": attempt_id,
        "resource_id": resource_id,
        "resource_kind": "ec2_instance",
        "started_at": start,
        "ended_at": end,
        "gpu_count": gpus,
    }


def test_attempt_tag_places_the_whole_line_before_resource_time(build):
    lines = [
        cur_line(
            line_item_resource_id="i-a",
            line_item_unblended_cost=30.0,
            pricing_public_on_demand_cost=40.0,
            resource_tags={"user_attempt_id": "att-1", "user_experiment_id": "exp-2"},
        )
    ]
    attempts = [attempt("att-1", at(10), at(11)), attempt("att-2", at(10), at(11))]
    resources = [held("att-2", "i-a")]

    con, report = build(lines, attempts, resources)

    assert placed(con) == [(line_id(0), "att-1", "exp-1", "tag", "billed", D(30))]
    assert left_over(con) == []
    assert shares(con) == {(line_id(0), "att-1"): 1.0}
    costs = records(
        con,
        "select attempt_id, billed_cost, list_cost, estimated_cost from marts.attempt_costs "
        "where allocation_model = 'marginal' order by attempt_id",
    )
    assert [tuple(row.values()) for row in costs] == [
        ("att-1", D(30), D(40), D(0)),
        ("att-2", D(0), D(0), D(0)),
    ]
    assert report.check_failures == []


def test_unknown_attempt_tag_is_left_with_its_reason(build):
    lines = [
        cur_line(line_item_unblended_cost=5.0, resource_tags={"user_attempt_id": "att-ghost"}),
        cur_line(
            line_item_resource_id="i-a",
            line_item_unblended_cost=7.0,
            resource_tags={"user_attempt_id": "att-ghost", "user_experiment_id": "exp-ghost"},
        ),
    ]
    con, report = build(lines, [attempt("att-1", at(10), at(11))], [held("att-1", "i-b")])

    assert placed(con) == []
    assert left_over(con) == [
        (line_id(0), "unknown_attempt_tag", D(5)),
        (line_id(1), "unknown_attempt_tag", D(7)),
    ]
    assert report.check_failures == []


def test_unknown_attempt_tag_falls_through_to_resource_time(build):
    lines = [
        cur_line(
            line_item_resource_id="i-a",
            line_item_unblended_cost=8.0,
            resource_tags={"user_attempt_id": "att-ghost"},
        )
    ]
    attempts = [attempt("att-1", at(10), at(10, 30))]

    con, report = build(lines, attempts, [held("att-1", "i-a")])

    assert placed(con) == [(line_id(0), "att-1", "exp-1", "resource_time", "estimated", D(4))]
    assert left_over(con) == [(line_id(0), "outside_any_attempt", D(4))]
    assert report.check_failures == []


def test_experiment_tag_places_the_line_on_the_experiment_alone(build):
    lines = [
        cur_line(line_item_unblended_cost=1.5, resource_tags={"user_experiment_id": "exp-1"}),
        # known only from the experiments table (no attempt yet)
        cur_line(line_item_unblended_cost=2.5, resource_tags={"user_experiment_id": "exp-2"}),
        # an unknown attempt tag does not stop a known experiment tag
        cur_line(
            line_item_unblended_cost=3.5,
            resource_tags={"user_attempt_id": "att-ghost", "user_experiment_id": "exp-1"},
        ),
        cur_line(line_item_unblended_cost=4.5, resource_tags={"user_experiment_id": "exp-ghost"}),
    ]
    con, report = build(
        lines, [attempt("att-1", at(10), at(11))], [], experiments=[{"experiment_id": "exp-2"}]
    )

    assert placed(con) == [
        (line_id(0), None, "exp-1", "experiment_tag", "billed", D("1.5")),
        (line_id(1), None, "exp-2", "experiment_tag", "billed", D("2.5")),
        (line_id(2), None, "exp-1", "experiment_tag", "billed", D("3.5")),
    ]
    assert left_over(con) == [(line_id(3), "unknown_experiment_tag", D("4.5"))]
    experiments = records(
        con,
        "select experiment_id, effective_cost, experiment_only_cost from marts.experiment_costs "
        "where allocation_model = 'marginal' order by experiment_id",
    )
    assert [tuple(row.values()) for row in experiments] == [
        ("exp-1", D(5), D(5)),
        ("exp-2", D("2.5"), D("2.5")),
    ]
    assert report.check_failures == []


def test_sequential_attempts_on_one_node_share_the_hour_by_seconds(build):
    lines = [
        cur_line(
            line_item_resource_id="i-b",
            line_item_usage_amount=1.0,
            line_item_unblended_cost=36.0,
            line_item_net_unblended_cost=30.0,
            pricing_public_on_demand_cost=72.0,
        )
    ]
    attempts = [attempt("att-2", at(10), at(10, 20)), attempt("att-3", at(10, 25), at(11))]
    # no times on the resource rows: the attempts' own times apply
    resources = [held("att-2", "i-b"), held("att-3", "i-b")]

    con, report = build(lines, attempts, resources)

    assert placed(con) == [
        (line_id(0), "att-2", "exp-1", "resource_time", "estimated", D(12)),
        (line_id(0), "att-3", "exp-1", "resource_time", "estimated", D(21)),
    ]
    assert shares(con) == {
        (line_id(0), "att-2"): pytest.approx(1200 / 3600),
        (line_id(0), "att-3"): pytest.approx(2100 / 3600),
    }
    rest = records(con, "select * from allocation.line_remainders")
    assert [
        (row["unallocated_reason"], row["billed_cost"], row["list_cost"], row["net_cost"])
        for row in rest
    ] == [("outside_any_attempt", D(3), D(6), D("2.5"))]
    costs = records(
        con,
        "select attempt_id, billed_cost, effective_cost, list_cost, net_cost, estimated_cost "
        "from marts.attempt_costs where allocation_model = 'marginal' order by attempt_id",
    )
    assert [tuple(row.values()) for row in costs] == [
        ("att-2", D(12), D(12), D(24), D(10), D(12)),
        ("att-3", D(21), D(21), D(42), D("17.5"), D(21)),
    ]
    assert report.check_failures == []


def test_partial_hour_usage_held_all_hour_places_the_whole_line(build):
    lines = [
        cur_line(
            line_item_resource_id="i-a", line_item_usage_amount=0.25, line_item_unblended_cost=0.25
        )
    ]
    con, report = build(lines, [attempt("att-1", at(10), at(11))], [held("att-1", "i-a")])

    assert placed(con) == [(line_id(0), "att-1", "exp-1", "resource_time", "estimated", D("0.25"))]
    assert left_over(con) == []
    assert report.check_failures == []


def test_attempts_sharing_a_node_at_once_place_the_whole_line_by_seconds_held(build):
    # held 3600 s + 1800 s > 3600 s active: share_i = overlap_i / sum of overlaps, and GPU
    # counts do not weigh in (sql commit 5d7701b: overlap / max(active, sum of overlaps))
    lines = [
        cur_line(
            line_item_resource_id="i-a", line_item_usage_amount=1.0, line_item_unblended_cost=90.0
        )
    ]
    attempts = [
        attempt("att-a", at(10), at(11), gpu_count=1),
        attempt("att-b", at(10), at(11), gpu_count=8),
    ]
    resources = [held("att-a", "i-a"), held("att-b", "i-a", at(10, 30), at(11), gpus=8)]

    con, report = build(lines, attempts, resources)

    assert placed(con) == [
        (line_id(0), "att-a", "exp-1", "resource_time", "estimated", D(60)),
        (line_id(0), "att-b", "exp-1", "resource_time", "estimated", D(30)),
    ]
    assert shares(con) == {
        (line_id(0), "att-a"): pytest.approx(2 / 3),
        (line_id(0), "att-b"): pytest.approx(1 / 3),
    }
    assert left_over(con) == []
    assert report.check_failures == []


def test_attempts_sharing_a_node_split_an_odd_amount_exactly(build):
    lines = [cur_line(line_item_resource_id="i-a", line_item_unblended_cost=100.0)]
    attempts = [attempt(name, at(10), at(11)) for name in ("att-a", "att-b", "att-c")]
    resources = [held(name, "i-a") for name in ("att-a", "att-b", "att-c")]

    con, report = build(lines, attempts, resources)

    amounts = [row[-1] for row in placed(con)]
    assert sorted(amounts) == [D("33.3333333333"), D("33.3333333333"), D("33.3333333334")]
    assert left_over(con) == []
    assert report.check_failures == []


def test_resource_times_win_over_the_attempts_times(build):
    lines = [cur_line(line_item_resource_id="i-a", line_item_unblended_cost=10.0)]
    attempts = [attempt("att-1", at(9), at(12))]
    resources = [held("att-1", "i-a", at(10, 30), at(11, 30))]

    con, report = build(lines, attempts, resources)

    assert placed(con) == [(line_id(0), "att-1", "exp-1", "resource_time", "estimated", D(5))]
    assert left_over(con) == [(line_id(0), "outside_any_attempt", D(5))]
    assert report.check_failures == []


def test_running_attempt_holds_its_resource_to_the_end_of_the_window(build):
    lines = [
        cur_line(line_item_resource_id="i-a", line_item_unblended_cost=12.0),
        cur_line(
            line_item_resource_id="i-a",
            line_item_usage_start_date=at(11),
            line_item_usage_end_date=at(12),
            line_item_unblended_cost=12.0,
        ),
    ]
    attempts = [attempt("att-1", at(10, 30), None, status="running")]

    con, report = build(lines, attempts, [held("att-1", "i-a")])

    assert placed(con) == [
        (line_id(0), "att-1", "exp-1", "resource_time", "estimated", D(6)),
        (line_id(1), "att-1", "exp-1", "resource_time", "estimated", D(12)),
    ]
    assert left_over(con) == [(line_id(0), "outside_any_attempt", D(6))]
    assert report.check_failures == []


@pytest.mark.parametrize(
    ("unit", "amount", "start", "end", "expected_placed", "expected_rest"),
    [
        # storage spans the day: 6 of 24 hours held
        pytest.param("GB-Mo", 100.0, at(10), at(16), D(6), D(18), id="storage-six-hours"),
        # held across hour boundaries at odd minutes: 09:30 to 12:15 is 2.75 hours
        pytest.param(
            "GB-Mo", 100.0, at(9, 30), at(12, 15), D("2.75"), D("21.25"), id="odd-minutes"
        ),
        # an instance that ran 6 hours of the day, all while the attempt held it
        pytest.param("Hrs", 6.0, at(10), at(16), D(24), None, id="instance-six-hours"),
        # ran 12 hours, the attempt held it for 6 of them
        pytest.param("Hrs", 12.0, at(10), at(16), D(12), D(12), id="instance-half-held"),
    ],
)
def test_daily_line_is_split_across_its_hours(
    build, unit, amount, start, end, expected_placed, expected_rest
):
    lines = [
        cur_line(
            line_item_resource_id="vol-1",
            pricing_unit=unit,
            line_item_usage_amount=amount,
            line_item_usage_start_date=at(0),
            line_item_usage_end_date=at(0, day=2),
            line_item_unblended_cost=24.0,
        )
    ]
    con, report = build(
        lines, [attempt("att-1", at(0), at(23))], [held("att-1", "vol-1", start, end)]
    )

    assert placed(con) == [
        (line_id(0), "att-1", "exp-1", "resource_time", "estimated", expected_placed)
    ]
    expected = [] if expected_rest is None else [(line_id(0), "outside_any_attempt", expected_rest)]
    assert left_over(con) == expected
    assert report.check_failures == []


def test_empty_and_null_resource_ids_never_join(build):
    lines = [
        cur_line(line_item_resource_id="", line_item_unblended_cost=1.0),
        cur_line(line_item_resource_id=None, line_item_unblended_cost=2.0),
        cur_line(line_item_resource_id="  ", line_item_unblended_cost=3.0),
    ]
    attempts = [attempt("att-1", at(10), at(11)), attempt("att-2", at(10), at(11))]
    resources = [held("att-1", ""), held("att-2", None), held("att-2", "  ")]

    con, report = build(lines, attempts, resources)

    assert placed(con) == []
    assert left_over(con) == [
        (line_id(0), "no_resource_id", D(1)),
        (line_id(1), "no_resource_id", D(2)),
        (line_id(2), "no_resource_id", D(3)),
    ]
    assert report.check_failures == []


def test_resource_held_at_another_time_or_never(build):
    lines = [
        cur_line(line_item_resource_id="i-held-later", line_item_unblended_cost=4.0),
        cur_line(line_item_resource_id="i-unknown", line_item_unblended_cost=5.0),
    ]
    attempts = [attempt("att-1", at(12), at(13))]

    con, report = build(lines, attempts, [held("att-1", "i-held-later")])

    assert placed(con) == []
    assert left_over(con) == [
        (line_id(0), "outside_any_attempt", D(4)),
        (line_id(1), "no_matching_attempt", D(5)),
    ]
    assert report.check_failures == []


def test_resource_time_disabled(build):
    lines = [
        cur_line(line_item_resource_id="i-a", line_item_unblended_cost=4.0),
        cur_line(line_item_unblended_cost=1.0, resource_tags={"user_attempt_id": "att-1"}),
    ]
    config = {"attribution": {"resource_time": False}}

    con, report = build(
        lines, [attempt("att-1", at(10), at(11))], [held("att-1", "i-a")], config=config
    )

    assert placed(con) == [(line_id(1), "att-1", "exp-1", "tag", "billed", D(1))]
    assert left_over(con) == [(line_id(0), "resource_time_disabled", D(4))]
    assert report.check_failures == []


HOSTILE = [
    "x'); drop table attempts; --",
    'say "hi"',
    "line one\nline two",
    "back\\slash; select 1",
]


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_ids_and_tag_values_are_data(build, value):
    attempt_id = f"att-{value}"
    experiment_id = f"exp-{value}"
    resource_id = f"i-{value}"
    lines = [
        cur_line(line_item_unblended_cost=1.0, resource_tags={"user_attempt_id": attempt_id}),
        cur_line(line_item_unblended_cost=2.0, resource_tags={"user_experiment_id": experiment_id}),
        cur_line(line_item_resource_id=resource_id, line_item_unblended_cost=3.0),
        cur_line(line_item_unblended_cost=4.0, resource_tags={"user_attempt_id": value}),
    ]
    attempts = [attempt(attempt_id, at(10), at(11), experiment_id=experiment_id)]

    con, report = build(lines, attempts, [held(attempt_id, resource_id)])

    assert placed(con) == [
        (line_id(0), attempt_id, experiment_id, "tag", "billed", D(1)),
        (line_id(1), None, experiment_id, "experiment_tag", "billed", D(2)),
        (line_id(2), attempt_id, experiment_id, "resource_time", "estimated", D(3)),
    ]
    assert left_over(con) == [(line_id(3), "unknown_attempt_tag", D(4))]
    assert con.execute("select count(*) from raw.attempts").fetchone() == (1,)
    assert report.check_failures == []


def test_hostile_tag_keys_in_config_are_data(build):
    key = "user_x'] from x; --"
    lines = [cur_line(line_item_unblended_cost=1.0, resource_tags={key: "att-1"})]
    config = {"attribution": {"attempt_tag_keys": [key]}}

    con, report = build(lines, [attempt("att-1", at(10), at(11))], [], config=config)

    assert placed(con) == [(line_id(0), "att-1", "exp-1", "tag", "billed", D(1))]
    assert report.check_failures == []
