"""normalized.usage_horizons: the bill's horizon from usage lines, never from month-long lines;
a GCP bill with month-long tax and support rows estimated past it, then replaced by the bill."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from builders import at, build_models, cur_line, rebuild, records
from gcp_rows import gcp_row, write_gcp

from pipeline.run.history import set_clock

D = Decimal
MONTH_START, MONTH_END = at(0), datetime(2026, 11, 1, tzinfo=UTC)


def _monthly(kind: str, cost: float, **extra: Any) -> dict[str, Any]:
    return cur_line(
        line_item_line_item_type=kind,
        line_item_usage_start_date=MONTH_START,
        line_item_usage_end_date=MONTH_END,
        line_item_unblended_cost=cost,
        pricing_unit="",
        **extra,
    )


def test_aws_horizons_come_from_usage_lines_of_at_most_a_day(build) -> None:
    lines = [
        cur_line(line_item_resource_id="i-1"),  # 10:00-11:00 on the 1st
        cur_line(
            line_item_resource_id="i-1",
            line_item_usage_start_date=at(0, day=2),
            line_item_usage_end_date=at(0, day=3),  # a daily export's line: a day is usage
        ),
        cur_line(line_item_resource_id="vol-1", line_item_usage_start_date=at(11),
                 line_item_usage_end_date=at(12), pricing_unit="GB-Mo"),
        _monthly("Tax", 1.21),
        _monthly("Credit", -5.0, line_item_resource_id="i-1"),
        _monthly("RIFee", 2.5),
        _monthly("Fee", 29.0),
        _monthly("Refund", -1.0),
        # usage billed once for the month (a hosted zone): its window says nothing either
        _monthly("Usage", 0.5, line_item_resource_id="zone-1", line_item_usage_type="HostedZone"),
        # another account's bill reaches further
        cur_line(line_item_usage_account_id="333333333333", line_item_usage_start_date=at(20),
                 line_item_usage_end_date=at(21)),
    ]  # fmt: skip
    con, _report = build(lines)
    assert records(
        con,
        "select sub_account_id, resource_id, usage_until, usage_lines "
        "from normalized.usage_horizons order by all",
    ) == [
        {"sub_account_id": "222222222222", "resource_id": "i-1", "usage_until": at(0, day=3),
         "usage_lines": 2},
        {"sub_account_id": "222222222222", "resource_id": "vol-1", "usage_until": at(12),
         "usage_lines": 1},
        {"sub_account_id": "333333333333", "resource_id": None, "usage_until": at(21),
         "usage_lines": 1},
    ]  # fmt: skip
    assert records(
        con, "select last_charge_period_end, usage_until from normalized.billing_periods"
    ) == [{"last_charge_period_end": MONTH_END, "usage_until": at(0, day=3)}]


# GCP: October's invoice month runs from 1 Oct 07:00 UTC (midnight Pacific)
GCP_MONTH = (datetime(2026, 10, 1, 7, tzinfo=UTC), datetime(2026, 11, 1, 7, tzinfo=UTC))
A2 = {"compute.googleapis.com/machine_spec": "a2-highgpu-1g"}
PRICE = D("3.6731")  # what the analyst configured for a2-highgpu-1g
ATTEMPTS = [
    {"attempt_id": "g1", "experiment_id": "e1", "provider": "gcp", "account_id": "ml-prod",
     "instance_type": "a2-highgpu-1g", "region": "us-central1", "started_at": at(8, day=12),
     "ended_at": at(11, 20, day=12)},
    {"attempt_id": "g2", "experiment_id": "e1", "provider": "gcp", "account_id": "ml-prod",
     "instance_type": "a2-highgpu-1g", "region": "us-central1", "started_at": at(10, 30, day=12),
     "ended_at": at(11, 10, day=12)},
]  # fmt: skip
RESOURCES = [
    {"attempt_id": "g1", "resource_id": "vm-1", "resource_kind": "gce_instance"},
    {"attempt_id": "g2", "resource_id": "vm-2", "resource_kind": "gce_instance"},
]
CONFIG = {
    "estimates": {
        "prices": [
            {"instance_type": "a2-highgpu-1g", "region": "us-central1",
             "price_per_hour": str(PRICE), "currency": "USD"}
        ]
    }
}  # fmt: skip


def _vm_hour(resource: str, hour: int) -> dict[str, Any]:
    return gcp_row(
        resource=resource,
        system_labels=A2,
        location={"region": "us-central1"},
        usage_start_time=at(hour, day=12),
        usage_end_time=at(hour + 1, day=12),
        cost=3.6,
    )


def _gcp_bill(until: int) -> list[dict[str, Any]]:
    """vm-1 from 08:00 and vm-2 from 10:00, hourly up to ``until``, with October's tax and a
    support subscription written over the whole invoice month."""
    rows = [_vm_hour("vm-1", hour) for hour in range(8, until)]
    rows += [_vm_hour("vm-2", hour) for hour in range(10, until)]
    month = {"usage_start_time": GCP_MONTH[0], "usage_end_time": GCP_MONTH[1]}
    rows.append(
        gcp_row(cost=4.1, cost_type="tax", sku={"id": "TAX", "description": "Tax"}, **month)
    )
    rows.append(
        gcp_row(
            cost=150.0,
            service={"id": "2062-016F-44A2", "description": "Support"},
            sku={"id": "A2E5", "description": "Enhanced Support"},
            **month,
        )
    )
    return rows


def _gcp_build(folder: Path, until: int) -> Any:
    delivery = write_gcp(folder / "raw", _gcp_bill(until))
    con, report = build_models(
        folder, [], ATTEMPTS, RESOURCES, config=CONFIG, deliveries=[delivery]
    )
    assert report.check_failures == []
    set_clock(con, at(12, day=12))
    for name in ("normalized.billing_periods", "marts.cost_estimates", "marts.estimate_errors"):
        rebuild(con, name)
    return con


ESTIMATES = (
    "select attempt_id, estimate_start, estimate_end, estimated_seconds, estimated_hours, "
    "estimated_cost from marts.cost_estimates order by attempt_id"
)


def test_gcp_month_long_rows_leave_the_attempts_past_the_usage_horizon_estimated(tmp_path) -> None:
    con = _gcp_build(tmp_path, until=10)  # the export has reached 10:00 on the 12th
    assert records(con, "select usage_until from normalized.billing_periods") == [
        {"usage_until": at(10, day=12)}
    ]
    # g1: 10:00-11:20 past its VM's last row, 4800 s x 3.6731 / 3600 = 4.8974666666... ;
    # g2's VM has no row: from the project's horizon (10:00), so from its start, 2400 s
    assert records(con, ESTIMATES) == [
        {"attempt_id": "g1", "estimate_start": at(10, day=12), "estimate_end": at(11, 20, day=12),
         "estimated_seconds": D(4800), "estimated_hours": D("1.3333333333"),
         "estimated_cost": D("4.8974666667")},
        {"attempt_id": "g2", "estimate_start": at(10, 30, day=12),
         "estimate_end": at(11, 10, day=12), "estimated_seconds": D(2400),
         "estimated_hours": D("0.6666666667"), "estimated_cost": D("2.4487333333")},
    ]  # fmt: skip


def test_gcp_estimates_are_replaced_by_the_bill_with_their_error(tmp_path) -> None:
    before = _gcp_build(tmp_path / "before", until=10)
    columns = (
        "attempt_id, resource_id, estimate_start, estimate_end, estimated_hours, price_per_hour, "
        "estimated_cost, billing_currency"
    )
    estimated = before.execute(f"select {columns} from marts.cost_estimates").fetchall()
    con = _gcp_build(tmp_path / "after", until=12)  # the rows up to 12:00 have arrived
    con.executemany(
        f"insert into raw.previous_cost_estimates ({columns}) values (?, ?, ?, ?, ?, ?, ?, ?)",
        estimated,
    )
    rebuild(con, "marts.estimate_errors")
    assert records(con, ESTIMATES) == []
    # billed: g1 holds vm-1 for 10:00-11:00 and a third of 11:00-12:00 (3.6 + 1.2); g2 holds
    # vm-2 for half of 10:00-11:00 and a sixth of 11:00-12:00 (1.8 + 0.6)
    assert records(
        con,
        "select attempt_id, window_start, window_end, estimated_cost, billed_cost, estimate_error "
        "from marts.estimate_errors order by attempt_id",
    ) == [
        {"attempt_id": "g1", "window_start": at(10, day=12), "window_end": at(11, 20, day=12),
         "estimated_cost": D("4.8974666667"), "billed_cost": D("4.8"),
         "estimate_error": D("0.0974666667")},
        {"attempt_id": "g2", "window_start": at(10, 30, day=12),
         "window_end": at(11, 10, day=12), "estimated_cost": D("2.4487333333"),
         "billed_cost": D("2.4"), "estimate_error": D("0.0487333333")},
    ]  # fmt: skip


def _previous_snapshot_with_todays_telemetry(con) -> None:
    """A previous snapshot (run r1, today's settings) whose attempts and resources are today's."""
    con.execute(
        "insert into raw.previous_snapshot "
        "select 'r1', now(), config_fingerprint from config.periods"
    )
    con.execute(
        "insert into raw.previous_attempts select attempt_id, experiment_id, status, "
        "instance_type, region, capacity_type, gpu_count, started_at, ended_at "
        "from staging.attempts"
    )
    con.execute(
        "insert into raw.previous_attempt_resources select attempt_id, resource_id, "
        "started_at, ended_at, gpu_count from staging.attempt_resources"
    )


def test_an_estimate_repriced_by_a_restated_delivery_says_so(build) -> None:
    # i-1 (no attempt) shows g5.xlarge at 2.00 an hour; a1 runs on i-2, not billed yet: from the
    # account's horizon (11:00) to 14:00 at the bill's price. The previous snapshot priced the
    # same hours at 2.50 from a delivery since replaced: only the price moved, and the reason
    # says where it came from
    lines = [cur_line(line_item_resource_id="i-1", line_item_usage_type="BoxUsage:g5.xlarge",
                      product_instance_type="g5.xlarge", product_region_code="us-east-1",
                      line_item_unblended_cost=2.0, pricing_public_on_demand_cost=2.0)]  # fmt: skip
    attempts = [
        {"attempt_id": "a1", "experiment_id": "e1", "instance_type": "g5.xlarge",
         "region": "us-east-1", "account_id": "222222222222", "started_at": at(10),
         "ended_at": at(14)},
    ]  # fmt: skip
    resources = [{"attempt_id": "a1", "resource_id": "i-2", "resource_kind": "ec2_instance"}]
    con, _report = build(lines, attempts, resources)
    set_clock(con, datetime(2026, 11, 1, tzinfo=UTC))
    rebuild(con, "marts.cost_estimates")
    assert records(con, "select price_source, estimated_cost from marts.cost_estimates") == [
        {"price_source": "billing", "estimated_cost": D(6)}
    ]
    _previous_snapshot_with_todays_telemetry(con)
    for model_name in ("marginal", "fully_loaded"):
        con.execute(
            "insert into raw.previous_attempt_costs values "
            "('a1', 'e1', ?, 0, 7.5, 'estimated', 'USD')",
            [model_name],
        )
        con.execute(
            "insert into raw.previous_experiment_costs values ('e1', ?, 0, 7.5, 'estimated')",
            [model_name],
        )
    con.execute(
        "insert into raw.previous_cost_estimates values ('a1', 'i-2', ?, ?, 3, 2.5, 7.5, 'USD')",
        [at(11), at(14)],
    )
    con.execute(
        "insert into raw.previous_billing_periods values "
        "('aws', '111111111111', '2026-10', 'open', ['replaced-delivery'], ?, ?)",
        [at(11), at(11)],
    )
    for name in ("marts.estimate_errors", "marts.attempt_costs", "marts.experiment_costs"):
        rebuild(con, name)
    rebuild(con, "marts.cost_changes")
    assert records(con, "select * from marts.estimate_errors") == []  # no hour was billed
    assert records(
        con,
        "select coalesce(attempt_id, experiment_id) as name, previous_total, total, change, "
        "reasons from marts.cost_changes where allocation_model = 'marginal' "
        "order by change_level",
    ) == [
        {"name": "a1", "previous_total": D("7.5"), "total": D(6), "change": D("-1.5"),
         "reasons": "restated_delivery"},
        {"name": "e1", "previous_total": D("7.5"), "total": D(6), "change": D("-1.5"),
         "reasons": "restated_delivery"},
    ]  # fmt: skip


def test_late_rows_are_each_accounts_own(build) -> None:
    """A line is late against its own account's previous bill: two payer accounts share a
    period, the previous snapshot's bill reached 12:00 for one and 11:00 for the other, and only
    the second account's 11:00 line is late (the account is the line's profile's, contract v4)."""
    tagged = {"line_item_usage_type": "BoxUsage:g5.xlarge", "pricing_public_on_demand_cost": 0.0}
    lines = [
        cur_line(line_item_resource_id="i-1", line_item_unblended_cost=2.0,
                 resource_tags={"user_attempt_id": "a1"}, **tagged),
        cur_line(line_item_resource_id="i-1", line_item_unblended_cost=2.0,
                 line_item_usage_start_date=at(11), line_item_usage_end_date=at(12),
                 resource_tags={"user_attempt_id": "a1"}, **tagged),
        cur_line(bill_payer_account_id="999999999999", line_item_resource_id="i-2",
                 line_item_unblended_cost=5.0, line_item_usage_start_date=at(11),
                 line_item_usage_end_date=at(12), resource_tags={"user_attempt_id": "a2"},
                 **tagged),
    ]  # fmt: skip
    attempts = [
        {"attempt_id": name, "experiment_id": f"e{name[1]}", "started_at": at(10),
         "ended_at": at(12)}
        for name in ("a1", "a2")
    ]  # fmt: skip
    con, _report = build(lines, attempts)
    set_clock(con, datetime(2026, 11, 1, tzinfo=UTC))
    _previous_snapshot_with_todays_telemetry(con)
    # a1 was billed 3 before (its hours were restated in place: not late); a2 was not billed
    for model_name in ("marginal", "fully_loaded"):
        con.execute(
            "insert into raw.previous_attempt_costs values "
            "('a1', 'e1', ?, 3, 0, 'billed', 'USD'), ('a2', 'e2', ?, 0, 0, 'billed', 'USD')",
            [model_name, model_name],
        )
    # the same deliveries as now (none replaced); the bill reached 12:00 for the first account
    # and 11:00 for the second
    con.execute(
        "insert into raw.previous_billing_periods select provider, billing_account_id, "
        "billing_period, period_status, source_deliveries, last_charge_period_end, "
        "case billing_account_id when '111111111111' then ? else ? end "
        "from normalized.billing_periods",
        [at(12), at(11)],
    )
    rebuild(con, "marts.cost_changes")
    assert records(
        con,
        "select attempt_id, previous_total, total, reasons from marts.cost_changes "
        "where allocation_model = 'marginal' and change_level = 'attempt' order by attempt_id",
    ) == [
        {"attempt_id": "a1", "previous_total": D(3), "total": D(4), "reasons": "new_telemetry"},
        {"attempt_id": "a2", "previous_total": D(0), "total": D(5), "reasons": "late_rows"},
    ]
