"""Economics marts on hand-built inputs: outcomes, frontier, goodput, spot, TCO, waste."""

from __future__ import annotations

from decimal import Decimal

import pytest
from builders import at, cur_line, records
from economics_builders import build_economics

D = Decimal


def tagged(attempt_id: str, cost: float, **columns) -> dict:
    return cur_line(
        line_item_unblended_cost=cost, resource_tags={"user_attempt_id": attempt_id}, **columns
    )


def acc(experiment_id: str, team: str, threshold: float = 0.8, higher: bool = True) -> dict:
    return {
        "experiment_id": experiment_id,
        "team": team,
        "quality_metric": "acc" if higher else "loss",
        "quality_threshold": threshold,
        "higher_is_better": higher,
    }


EXPERIMENTS = [
    acc("e1", "vision"),
    acc("e2", "vision"),
    acc("e3", "vision"),
    acc("e4", "nlp", threshold=2.0, higher=False),
    {"experiment_id": "e5", "team": "nlp"},  # no quality bar declared
]
ATTEMPTS = [
    {
        "attempt_id": "a1",
        "experiment_id": "e1",
        "status": "failed",
        "submitted_at": at(9),
        "started_at": at(9, 30),
        "ended_at": at(10),
        "capacity_type": "spot",
    },
    {
        "attempt_id": "a2",
        "experiment_id": "e1",
        "metric_name": "acc",
        "metric_value": 0.85,
        "started_at": at(11),
        "ended_at": at(13),
        "capacity_type": "on_demand",
        "config_version": "c1",
    },
    {
        "attempt_id": "b1",
        "experiment_id": "e2",
        "metric_name": "acc",
        "metric_value": 0.9,
        "started_at": at(10),
        "ended_at": at(12),
        "capacity_type": "on_demand",
        "config_version": "c2",
    },
    {
        "attempt_id": "c1",
        "experiment_id": "e3",
        "metric_name": "acc",
        "metric_value": 0.82,
        "started_at": at(10),
        "ended_at": at(12),
        "capacity_type": "on_demand",
    },
    {
        "attempt_id": "d1",
        "experiment_id": "e4",
        "metric_name": "loss",
        "metric_value": 2.5,
        "started_at": at(10),
        "ended_at": at(12),
        "capacity_type": "spot",
    },
    {
        "attempt_id": "f1",
        "experiment_id": "e5",
        "metric_value": 1.0,
        "started_at": at(10),
        "ended_at": at(12),
        "capacity_type": "spot",
    },
]
LINES = [
    tagged("a1", 5.0),
    tagged("a2", 10.0),
    tagged("b1", 20.0),
    tagged("c1", 30.0),
    tagged("d1", 7.0),
    tagged("f1", 3.0),
    # an inference endpoint: on no attempt and no experiment, so never training spend
    cur_line(
        line_item_unblended_cost=100.0,
        line_item_product_code="AmazonSageMaker",
        line_item_resource_id="endpoint/chat",
    ),
]


@pytest.fixture
def portfolio(tmp_path):
    return build_economics(tmp_path, LINES, ATTEMPTS, [], EXPERIMENTS)


def test_experiment_outcomes_accept_on_the_best_succeeded_attempt(portfolio):
    rows = records(
        portfolio,
        "select experiment_id, total_cost, failed_attempt_cost, best_metric_value, accepted, "
        "acceptance_status, accepting_attempt_id, time_to_target_hours "
        "from marts.experiment_outcomes where allocation_model = 'marginal' order by experiment_id",
    )
    assert [tuple(row.values()) for row in rows] == [
        # e1: 5 (failed a1) + 10 = 15; submitted 09:00, a2 met 0.85 >= 0.8 at 13:00 -> 4 h
        ("e1", D(15), D(5), 0.85, True, "met_bar", "a2", 4.0),
        ("e2", D(20), D(0), 0.9, True, "met_bar", "b1", 2.0),
        ("e3", D(30), D(0), 0.82, True, "met_bar", "c1", 2.0),
        # loss 2.5 > 2.0 with lower-is-better: below the bar
        ("e4", D(7), D(0), 2.5, False, "below_bar", None, None),
        # no bar declared: accepted is unknown (NULL), not false
        ("e5", D(3), D(0), None, None, "no_quality_bar", None, None),
    ]


def test_cost_per_accepted_result_by_team_and_none_accepted(portfolio):
    rows = records(
        portfolio,
        "select dimension, dimension_value, experiments, accepted_results, total_cost, "
        "cost_per_accepted_result, no_result_reason from marts.cost_per_accepted_result "
        "where allocation_model = 'marginal' and dimension in ('all', 'team', 'capacity_type') "
        "order by dimension, dimension_value",
    )
    assert [tuple(row.values())[:6] for row in rows] == [
        # 5 + 10 + 20 + 30 + 7 + 3 = 75 over 3 accepted; the $100 endpoint is not training
        ("all", "all", 5, 3, D(75), D(25)),
        # a2 + b1 + c1 = 60, all three accepting attempts on-demand: 60 / 3 = 20
        ("capacity_type", "on_demand", 3, 3, D(60), D(20)),
        # a1 + d1 + f1 = 15, nothing accepted on spot: NULL and a reason, no division
        ("capacity_type", "spot", 3, 0, D(15), None),
        # nlp: e4 + e5 = 10, nothing accepted
        ("team", "nlp", 2, 0, D(10), None),
        # vision: 15 + 20 + 30 = 65 / 3 = 21.666..., rounded half up at 10 places
        ("team", "vision", 3, 3, D(65), D("21.6666666667")),
    ]
    reasons = {(row["dimension"], row["dimension_value"]): row["no_result_reason"] for row in rows}
    assert reasons[("team", "nlp")] == "no_accepted_result"
    assert reasons[("capacity_type", "spot")] == "no_accepted_result"
    assert reasons[("all", "all")] is None


def test_cost_quality_frontier_flags(portfolio):
    rows = records(
        portfolio,
        "select experiment_id, total_cost, best_metric_value, on_frontier, cheapest_meeting_bar "
        "from marts.cost_quality_frontier where allocation_model = 'marginal' "
        "order by experiment_id",
    )
    assert [tuple(row.values()) for row in rows] == [
        # e1 (15, 0.85): nothing cheaper -> frontier; the cheapest that met the acc bar
        ("e1", D(15), 0.85, True, True),
        # e2 (20, 0.90): only e1 is cheaper, and it is worse -> frontier
        ("e2", D(20), 0.9, True, False),
        # e3 (30, 0.82): e1 (15, 0.85) is cheaper and better -> dominated
        ("e3", D(30), 0.82, False, False),
        # e4 is the only loss experiment: frontier of its own metric, did not meet its bar
        ("e4", D(7), 2.5, True, False),
        # e5 has no metric to compare: unknown
        ("e5", D(3), None, None, False),
    ]


# Goodput: spot attempt interrupted and resumed within itself, an on-demand one, one without events
GOODPUT_ATTEMPTS = [
    {
        "attempt_id": "s1",
        "experiment_id": "g",
        "gpu_count": 4,
        "capacity_type": "spot",
        "started_at": at(10),
        "ended_at": at(12),
    },
    {
        "attempt_id": "o1",
        "experiment_id": "g",
        "gpu_count": 4,
        "capacity_type": "on_demand",
        "started_at": at(10),
        "ended_at": at(12),
    },
    {
        "attempt_id": "n1",
        "experiment_id": "g",
        "gpu_count": 1,
        "capacity_type": "reserved",
        "started_at": at(10),
        "ended_at": at(11),
    },
]
GOODPUT_EVENTS = [
    {"attempt_id": "s1", "event_at": at(10, 6), "event_type": "first_step"},
    {
        "attempt_id": "s1",
        "event_at": at(10, 30),
        "event_type": "checkpoint_saved",
        "duration_s": 60.0,
    },
    {"attempt_id": "s1", "event_at": at(11), "event_type": "checkpoint_saved", "duration_s": 60.0},
    {"attempt_id": "s1", "event_at": at(11, 20), "event_type": "interrupted"},
    {"attempt_id": "s1", "event_at": at(11, 30), "event_type": "resumed"},
    {
        "attempt_id": "s1",
        "event_at": at(11, 33),
        "event_type": "checkpoint_loaded",
        "duration_s": 180.0,
    },
    {"attempt_id": "o1", "event_at": at(10, 6), "event_type": "first_step"},
    {"attempt_id": "o1", "event_at": at(11), "event_type": "checkpoint_saved", "duration_s": 60.0},
]
GOODPUT_LINES = [tagged("s1", 4.0), tagged("o1", 16.0), tagged("n1", 1.0)]


def test_attempt_goodput_parts_and_unknowns(tmp_path):
    con = build_economics(tmp_path, GOODPUT_LINES, GOODPUT_ATTEMPTS, [], [], GOODPUT_EVENTS)
    rows = {
        row["attempt_id"]: row
        for row in records(
            con, "select * from marts.attempt_goodput where allocation_model = 'marginal'"
        )
    }
    s1 = rows["s1"]
    # 2 h x 4 GPUs = 8 billed GPU-hours. startup 10:00 -> 10:06 = 0.1 h; saves 2 x 60 s;
    # restore 180 s = 0.05 h; lost at 11:20 since the 11:00 save = 1/3 h; recovery
    # 11:20 -> 11:30 = 1/6 h. productive = 2 - 0.1 - 1/30 - 0.05 - 1/3 - 1/6 = 1.316666 h
    assert s1["billed_gpu_hours"] == pytest.approx(8.0)
    assert s1["startup_gpu_hours"] == pytest.approx(0.4)
    assert s1["checkpoint_save_gpu_hours"] == pytest.approx(4 * 2 / 60)
    assert s1["checkpoint_restore_gpu_hours"] == pytest.approx(0.2)
    assert s1["lost_work_gpu_hours"] == pytest.approx(4 / 3)
    assert s1["recovery_gpu_hours"] == pytest.approx(4 / 6)
    assert s1["productive_gpu_hours"] == pytest.approx(4 * 1.3166666666666667)
    assert s1["goodput"] == pytest.approx(1.3166666666666667 / 2)
    assert s1["interruptions"] == 1
    # $4 over 8 billed GPU-hours; over 5.2666 useful ones = 0.759493670886...
    assert s1["cost_per_billed_gpu_hour"] == D("0.5")
    assert s1["cost_per_useful_gpu_hour"] == D("0.7594936709")
    # lost work cost = 4 x (4/3) / 8 = 0.666...
    assert s1["lost_work_cost"] == D("0.6666666667")
    assert s1["goodput_source"] == "measured"
    # saves every 30 min of 1 min each: tau = 30 - 1 = 29 min measured from the events
    assert s1["modeled_checkpoint_source"] == "events"
    assert s1["modeled_checkpoint_interval_hours"] == pytest.approx(29 / 60)

    n1 = rows["n1"]
    # no events: every measured part is unknown (NULL), never 0; the model fills in, labelled
    for part in ("startup", "checkpoint_save", "checkpoint_restore", "lost_work", "recovery"):
        assert n1[f"{part}_gpu_hours"] is None
    assert n1["productive_gpu_hours"] is None and n1["goodput"] is None
    assert n1["cost_per_useful_gpu_hour"] is None
    assert n1["goodput_source"] == "modeled_young_daly"
    # defaults: M = 1 / (1 x 1.97e-5) h; tau 60 min, delta 1 min, R 10 min
    assert n1["modeled_mtbf_hours"] == pytest.approx(1 / 1.97e-5)
    # G = tau / (M e^(R/M) (e^((tau+delta)/M) - 1)) ~ tau / (tau + delta) = 60/61 = 0.983607,
    # less the failure term (tau/2 + delta + R) / M = 0.683 / 50761 = 0.0000135
    assert n1["modeled_goodput"] == pytest.approx(0.9835935, abs=1e-6)
    assert n1["goodput_used"] == n1["modeled_goodput"]


def test_an_attempt_without_gpu_hours_has_no_goodput(tmp_path):
    # cancelled in the queue: no started_at, so no billed GPU-hours; the model would still
    # predict 0.98 for its 8 GPUs, but there was no GPU time for a goodput to describe
    never_ran = {
        "attempt_id": "c1",
        "experiment_id": "g",
        "gpu_count": 8,
        "status": "cancelled",
    }
    con = build_economics(
        tmp_path, GOODPUT_LINES, [*GOODPUT_ATTEMPTS, never_ran], [], [], GOODPUT_EVENTS
    )
    rows = records(
        con,
        "select allocation_model, billed_gpu_hours, goodput, modeled_goodput, goodput_used, "
        "goodput_source from marts.attempt_goodput where attempt_id = 'c1' "
        "order by allocation_model",
    )
    assert [row["allocation_model"] for row in rows] == ["fully_loaded", "marginal"]
    for row in rows:
        assert not row["billed_gpu_hours"]
        assert row["goodput"] is None
        # the model's own column stays: 8 GPUs, M = 1 / (8 x 1.97e-5) h
        assert row["modeled_goodput"] == pytest.approx(0.9835019, abs=1e-6)
        assert row["goodput_used"] is None
        assert row["goodput_source"] == "no_gpu_hours"


@pytest.mark.parametrize(
    ("tau", "delta", "recovery", "mtbf", "daly", "first_order"),
    [
        # the Monte Carlo-checked rows of the reference table (minutes)
        (19.2, 1, 10, 185, 0.852, 0.837),
        (60, 5, 15, 600, 0.852, 0.833),
        (30, 2, 5, 3000, 0.931, 0.926),
    ],
)
def test_modeled_goodput_matches_daly(tmp_path, tau, delta, recovery, mtbf, daly, first_order):
    config = {
        "economics": {
            # one GPU, so M = 1 / rate: rate = 60 / mtbf per GPU-hour
            "failure_rate_per_gpu_hour": 60 / mtbf,
            "checkpoint_interval_minutes": tau,
            "checkpoint_write_minutes": delta,
            "recovery_minutes": recovery,
        }
    }
    attempts = [
        {
            "attempt_id": "n1",
            "experiment_id": "g",
            "gpu_count": 1,
            "started_at": at(10),
            "ended_at": at(11),
        }
    ]
    con = build_economics(tmp_path, [tagged("n1", 1.0)], attempts, config=config)
    (row,) = records(
        con,
        "select modeled_goodput, modeled_goodput_first_order, modeled_mtbf_hours "
        "from marts.attempt_goodput where allocation_model = 'marginal'",
    )
    assert row["modeled_mtbf_hours"] == pytest.approx(mtbf / 60)
    assert row["modeled_goodput"] == pytest.approx(daly, abs=6e-4)
    assert row["modeled_goodput_first_order"] == pytest.approx(first_order, abs=6e-4)


def test_capacity_type_break_even(tmp_path):
    con = build_economics(tmp_path, GOODPUT_LINES, GOODPUT_ATTEMPTS, [], [], GOODPUT_EVENTS)
    rows = {
        row["capacity_type"]: row
        for row in records(
            con, "select * from marts.capacity_type_economics where allocation_model = 'marginal'"
        )
    }
    spot, on_demand = rows["spot"], rows["on_demand"]
    # p_spot = 4 / 8 = 0.5, p_od = 16 / 8 = 2
    assert spot["price_per_gpu_hour"] == D("0.5") and on_demand["price_per_gpu_hour"] == D(2)
    # G_od = (2 - 0.1 - 1/60) / 2 = 0.941666; G_spot = 1.316666 / 2 = 0.658333
    assert on_demand["goodput"] == pytest.approx(0.9416666666666667)
    assert spot["goodput"] == pytest.approx(0.6583333333333333)
    # 0.5 / 2 = 0.25 < 0.658333 / 0.941666 = 0.699115: spot pays off
    assert spot["price_ratio_to_on_demand"] == pytest.approx(0.25)
    assert spot["goodput_ratio_to_on_demand"] == pytest.approx(0.6991150442477876)
    assert spot["pays_off_against_on_demand"] is True
    assert on_demand["pays_off_against_on_demand"] is None
    # break-even spot price = 2 x 0.699115... = 1.3982300885
    assert spot["break_even_price_per_gpu_hour"] == D("1.3982300885")
    assert spot["interruptions"] == 1
    assert spot["lost_work_gpu_hours"] == pytest.approx(4 / 3)
    assert spot["lost_work_cost"] == D("0.6666666667")
    assert spot["checkpoint_restore_gpu_hours"] == pytest.approx(0.2)
    # reserved (n1) has no events: its goodput is the labelled model
    assert rows["reserved"]["goodput_source"] == "modeled_young_daly"


def test_zero_length_attempt_with_no_cost_has_no_cost_per_gpu_hour(tmp_path):
    # 0 billed GPU-hours and $0: 0 / 0 would be NaN, which no DECIMAL can hold (found by hypothesis)
    attempts = [
        {
            "attempt_id": "z",
            "experiment_id": "g",
            "gpu_count": 2,
            "started_at": at(10),
            "ended_at": at(10),
        }
    ]
    con = build_economics(tmp_path, [tagged("z", 0.0)], attempts)
    (row,) = records(
        con,
        "select billed_gpu_hours, cost, cost_per_billed_gpu_hour, modeled_cost_per_useful_gpu_hour "
        "from marts.attempt_goodput where allocation_model = 'marginal'",
    )
    assert row == {
        "billed_gpu_hours": 0.0,
        "cost": D("0"),
        "cost_per_billed_gpu_hour": None,
        "modeled_cost_per_useful_gpu_hour": None,
    }


def test_tco_breakdown_categories_and_goodput_uplift(tmp_path):
    attempts = [
        {
            "attempt_id": "t1",
            "experiment_id": "x",
            "gpu_count": 1,
            "started_at": at(10),
            "ended_at": at(11),
        }
    ]
    events = [{"attempt_id": "t1", "event_at": at(10, 12), "event_type": "first_step"}]
    lines = [
        tagged(
            "t1",
            10.0,
            product_instance_type="p4d.24xlarge",
            line_item_usage_type="BoxUsage:p4d.24xlarge",
        ),
        tagged(
            "t1", 2.0, product_instance_type="m5.xlarge", line_item_usage_type="BoxUsage:m5.xlarge"
        ),
        tagged("t1", 1.0, line_item_usage_type="EBS:VolumeUsage.gp3", pricing_unit="GB-Mo"),
        tagged(
            "t1",
            0.5,
            line_item_product_code="AmazonS3",
            line_item_usage_type="TimedStorage-ByteHrs",
        ),
        tagged("t1", 0.25, line_item_usage_type="DataTransfer-Regional-Bytes", pricing_unit="GB"),
        tagged(
            "t1",
            0.125,
            line_item_product_code="AmazonEKS",
            line_item_usage_type="USE1-AmazonEKS-Hours:perCluster",
        ),
        tagged("t1", 0.375, line_item_product_code="AWSSupportBusiness", pricing_unit=""),
    ]
    con = build_economics(tmp_path, lines, attempts, [], [], events)
    rows = records(
        con,
        "select cost_category, on_bill, effective_cost, goodput from marts.tco_breakdown "
        "where allocation_model = 'marginal' order by category_order",
    )
    assert [tuple(row.values()) for row in rows] == [
        ("gpu_compute", True, D(10), None),
        ("other_compute", True, D(2), None),
        ("storage", True, D("1.5"), None),  # EBS 1 + S3 0.5
        ("networking", True, D("0.25"), None),
        ("control_plane", True, D("0.125"), None),
        ("support", True, D("0.375"), None),
        ("idle_capacity", True, D(0), None),
        ("other", True, D(0), None),
        # startup 12 of 60 minutes: G = 0.8; uplift = 10 x (1/0.8 - 1) = 2.5, off the bill
        ("goodput_loss", False, D("2.5"), pytest.approx(0.8)),
    ]


def checkpoint_storage(resource: str, cost: float) -> dict:
    """A day of S3 storage of a checkpoint resource, on October 10."""
    return cur_line(
        line_item_unblended_cost=cost,
        line_item_product_code="AmazonS3",
        line_item_resource_id=resource,
        line_item_usage_type="TimedStorage-ByteHrs",
        pricing_unit="GB-Mo",
        line_item_usage_start_date=at(0, day=10),
        line_item_usage_end_date=at(0, day=11),
    )


def test_waste_findings_with_evidence(tmp_path):
    attempts = [
        {
            "attempt_id": "w1",
            "experiment_id": "x",
            "gpu_count": 1,
            "started_at": at(10),
            "ended_at": at(11),
        }
    ]
    resources = [
        {"attempt_id": "w1", "resource_id": "vol-1"},
        {"attempt_id": "w1", "resource_id": "i-1"},
        {"attempt_id": "w1", "resource_id": "ckpt"},
    ]
    events = [
        {"attempt_id": "w1", "event_at": at(10, 30), "event_type": "data_wait", "duration_s": 900.0}
    ]

    def volume(
        hour: int, resource: str = "vol-1", usage: str = "EBS:VolumeUsage.gp3", cost: float = 0.1
    ) -> dict:
        return cur_line(
            line_item_unblended_cost=cost,
            line_item_resource_id=resource,
            line_item_usage_type=usage,
            pricing_unit="GB-Mo",
            line_item_usage_start_date=at(hour),
            line_item_usage_end_date=at(hour + 1),
        )

    def instance(resource: str, hour: int, cost: float) -> dict:
        return cur_line(
            line_item_unblended_cost=cost,
            line_item_resource_id=resource,
            line_item_usage_type="BoxUsage:g5.xlarge",
            product_instance_type="g5.xlarge",
            line_item_usage_start_date=at(hour),
            line_item_usage_end_date=at(hour + 1),
        )

    lines = [
        volume(10),
        volume(11),
        volume(12),
        volume(13),  # line ids 0-3; held 10-11 only
        instance("i-1", 10, 2.0),
        instance("i-1", 11, 2.0),  # 4, 5: 11-12 billed, no attempt
        instance("i-dev", 10, 1.0),  # 6: never in telemetry
        checkpoint_storage("ckpt", 0.7),  # 7: 9 days after w1 ended
        # 8-10: a vol- resource whose usage type no finding reads is a volume by its id alone
        *(volume(hour, "vol-2", "EBS:FastSnapshotRestore", 0.2) for hour in (10, 11, 12)),
    ]
    con = build_economics(
        tmp_path,
        lines,
        attempts,
        resources,
        [],
        events,
        config={"economics": {"waste_idle_hours": 2, "stale_checkpoint_days": 7}},
    )
    ids = [row["line_id"] for row in records(con, "select line_id from normalized.cost_lines")]
    base = min(ids)
    rows = records(
        con,
        "select finding_type, subject_id, experiment_id, effective_cost, idle_hours, "
        "evidence_line_ids, confidence from marts.waste_findings order by finding_type, subject_id",
    )
    assert [tuple(row.values()) for row in rows] == [
        # w1's g5 hour ($2) x 900 s waited / 3600 s run = 0.5
        ("gpu_waiting_on_data", "w1", "x", D("0.5"), 0.25, [base + 4], "medium"),
        # i-1 billed 11-12 with no attempt: telemetry knows it, so high
        ("idle_instance", "i-1", None, D(2), 1.0, [base + 5], "high"),
        # i-dev never in telemetry: may not be training at all, so low
        ("idle_instance", "i-dev", None, D(1), 1.0, [base + 6], "low"),
        # ckpt storage charged from Oct 10, 9 days after w1 ended (> 7)
        ("stale_checkpoint_storage", "ckpt", "x", D("0.7"), 24.0, [base + 7], "medium"),
        # vol-1: 3 idle hours x $0.1 > 2 hours
        ("unattached_volume", "vol-1", None, D("0.3"), 3.0, [base + 1, base + 2, base + 3], "high"),
        # vol-2 never in telemetry: medium
        (
            "unattached_volume",
            "vol-2",
            None,
            D("0.6"),
            3.0,
            [base + 8, base + 9, base + 10],
            "medium",
        ),
    ]


def test_stale_storage_names_the_experiment_only_when_one_held_it(tmp_path):
    # ckpt-one: two attempts of experiment x; ckpt-two: attempts of x and y; both charged 9 days
    # after the attempts ended (stale after 7)
    attempts = [
        {"attempt_id": "x1", "experiment_id": "x", "started_at": at(10), "ended_at": at(11)},
        {"attempt_id": "x2", "experiment_id": "x", "started_at": at(12), "ended_at": at(13)},
        {"attempt_id": "y1", "experiment_id": "y", "started_at": at(12), "ended_at": at(13)},
    ]
    resources = [
        {"attempt_id": "x1", "resource_id": "ckpt-one"},
        {"attempt_id": "x2", "resource_id": "ckpt-one"},
        {"attempt_id": "x1", "resource_id": "ckpt-two"},
        {"attempt_id": "y1", "resource_id": "ckpt-two"},
    ]

    con = build_economics(
        tmp_path,
        [checkpoint_storage("ckpt-one", 0.5), checkpoint_storage("ckpt-two", 0.5)],
        attempts,
        resources,
        config={"economics": {"stale_checkpoint_days": 7}},
    )
    rows = records(
        con,
        "select subject_id, experiment_id, effective_cost from marts.waste_findings "
        "where finding_type = 'stale_checkpoint_storage' order by subject_id",
    )
    assert [tuple(row.values()) for row in rows] == [
        ("ckpt-one", "x", D("0.5")),
        ("ckpt-two", None, D("0.5")),
    ]
