"""normalized.billing_periods (AWS and GCP rules) and marts.cost_estimates (prices, windows)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from builders import at, cur_line, model, rebuild, records

from pipeline.run.history import set_clock

D = Decimal


def _clock(day: int, month: int = 10) -> datetime:
    return datetime(2026, month, day, 12, tzinfo=UTC)


def _status(con, now: datetime) -> str:
    set_clock(con, now)
    rebuild(con, "normalized.billing_periods")
    (row,) = records(con, "select period_status from normalized.billing_periods")
    return row["period_status"]


@pytest.mark.parametrize(
    ("invoice", "now", "status"),
    [
        ("", _clock(20), "open"),
        ("", _clock(4, 11), "provisional"),
        ("INV-1", _clock(4, 11), "final"),
    ],
)
def test_aws_periods_are_final_when_every_line_has_an_invoice_id(build, invoice, now, status):
    con, _report = build([cur_line(bill_invoice_id=invoice), cur_line(bill_invoice_id=invoice)])
    assert _status(con, now) == status


def test_aws_period_with_one_line_not_invoiced_is_not_final(build):
    con, _report = build([cur_line(bill_invoice_id="INV-1"), cur_line(bill_invoice_id="")])
    assert _status(con, _clock(4, 11)) == "provisional"


@pytest.mark.parametrize(
    ("delivered", "now", "status"),
    [
        (_clock(31), _clock(20), "open"),  # the invoice month has not closed
        (_clock(31), _clock(2, 11), "provisional"),  # closed, but rows arrived 2 days ago
        (_clock(31), _clock(4, 11), "final"),  # closed, and nothing new for 3 days or more
        (_clock(3, 11), _clock(4, 11), "provisional"),  # a late row arrived yesterday
    ],
)
def test_gcp_invoice_months_settle_after_gcp_settle_days(build, delivered, now, status):
    con, _report = build([cur_line()])
    # a GCP line: no invoice id until the invoice exists, billing_period = the invoice month
    con.execute("update normalized.cost_line_profiles set provider = 'gcp'")
    con.execute(
        "insert into raw.billing_deliveries values "
        "('gcp', 'billing-export', '2026-10', 'delivery-1', ?, ?, false)",
        [delivered, delivered],
    )
    assert _status(con, now) == status


LINE = {
    "line_item_resource_id": "i-1",
    "line_item_usage_type": "BoxUsage:g5.xlarge",
    "product_instance_type": "g5.xlarge",
    "product_region_code": "us-east-1",
    "line_item_unblended_cost": 2.0,
    "pricing_public_on_demand_cost": 2.0,
}
ATTEMPTS = [
    {"attempt_id": "a1", "experiment_id": "e1", "instance_type": "g5.xlarge",
     "region": "us-east-1", "started_at": at(10), "ended_at": at(14)},
    {"attempt_id": "a2", "experiment_id": "e1", "instance_type": "trn1.2xlarge",
     "region": "us-east-1", "account_id": "222222222222", "started_at": at(10),
     "ended_at": at(12)},
    {"attempt_id": "a3", "experiment_id": "e1", "instance_type": "g5.xlarge",
     "region": "us-east-1", "started_at": at(10), "ended_at": at(12)},
]  # fmt: skip
RESOURCES = [
    {"attempt_id": "a1", "resource_id": "i-1", "resource_kind": "ec2_instance"},
    {"attempt_id": "a2", "resource_id": "i-2", "resource_kind": "ec2_instance"},
    {"attempt_id": "a3", "resource_id": "vol-3", "resource_kind": "ebs_volume"},
]


def test_estimates_price_unbilled_hours_from_the_bill_or_config(build):
    con, _report = build([cur_line(**LINE)], ATTEMPTS, RESOURCES)
    set_clock(con, _clock(1, 11))
    rebuild(con, "marts.cost_estimates")
    rows = records(
        con,
        "select attempt_id, estimate_start, estimate_end, estimated_hours, price_per_hour, "
        "price_source, estimated_cost from marts.cost_estimates order by attempt_id",
    )
    # a1's instance is billed 10:00-11:00: 11:00-14:00 is estimated at the bill's list price.
    # a2's instance has no line: the account's bill reaches 11:00, so 11:00-12:00 is estimated,
    # with no price known. a3 holds a volume only: not estimated.
    assert rows == [
        {"attempt_id": "a1", "estimate_start": at(11), "estimate_end": at(14),
         "estimated_hours": 3.0, "price_per_hour": D(2), "price_source": "billing",
         "estimated_cost": D(6)},
        {"attempt_id": "a2", "estimate_start": at(11), "estimate_end": at(12),
         "estimated_hours": 1.0, "price_per_hour": None, "price_source": None,
         "estimated_cost": None},
    ]  # fmt: skip


def test_a_config_price_wins_over_the_bill(build):
    config = {
        "estimates": {
            "prices": [
                {
                    "instance_type": "g5.xlarge",
                    "region": "us-east-1",
                    "price_per_hour": "1.5",
                    "currency": "USD",
                }
            ]
        }
    }
    con, _report = build([cur_line(**LINE)], ATTEMPTS[:1], RESOURCES[:1], config=config)
    set_clock(con, at(12, 30))  # the attempt runs until 14:00: estimate up to now only
    rebuild(con, "marts.cost_estimates")
    rebuild(con, "marts.attempt_costs")
    assert records(
        con,
        "select estimate_end, estimated_hours, price_source, estimated_cost "
        "from marts.cost_estimates",
    ) == [
        {"estimate_end": at(12, 30), "estimated_hours": 1.5, "price_source": "config",
         "estimated_cost": D("2.25")},
    ]  # fmt: skip
    assert records(
        con,
        "select billed_cost, unbilled_hours, unbilled_estimate, cost_status, is_final "
        "from marts.attempt_costs where allocation_model = 'marginal'",
    ) == [
        {"billed_cost": D(2), "unbilled_hours": 1.5, "unbilled_estimate": D("2.25"),
         "cost_status": "estimated", "is_final": False},
    ]  # fmt: skip


def test_invoice_totals_follow_each_invoice_when_a_period_has_several(build):
    lines = [
        cur_line(bill_invoice_id="INV-A", line_item_unblended_cost=3.0, **{
            "resource_tags": {"user_attempt_id": "a1"}}),
        cur_line(bill_invoice_id="INV-A", line_item_unblended_cost=1.5),
        cur_line(bill_invoice_id="INV-MP", line_item_unblended_cost=7.25),
    ]  # fmt: skip
    con, report = build(lines, ATTEMPTS[:1], ())
    assert report.check_failures == []
    assert records(
        con,
        "select invoice_id, period_status, cost_lines, export_total, marginal_total, "
        "fully_loaded_total from marts.invoice_totals order by invoice_id",
    ) == [
        {"invoice_id": "INV-A", "period_status": "final", "cost_lines": 2,
         "export_total": D("4.5"), "marginal_total": D("4.5"), "fully_loaded_total": D("4.5")},
        {"invoice_id": "INV-MP", "period_status": "final", "cost_lines": 1,
         "export_total": D("7.25"), "marginal_total": D("7.25"), "fully_loaded_total": D("7.25")},
    ]  # fmt: skip


def test_invoice_tie_out_fails_on_an_invoice_file_amount(build):
    con, _report = build([cur_line(bill_invoice_id="INV-A", line_item_unblended_cost=3.0)])
    con.execute("insert into raw.invoices values ('INV-A', 3.01, 'USD', 2)")
    rebuild(con, "marts.invoice_totals")
    rows = records(con, f"select * from ({model('checks.invoice_tie_out').sql})")
    assert [(row["invoice_id"], row["export_total"], row["invoice_amount"]) for row in rows] == [
        ("INV-A", D("3"), D("3.01"))
    ]
    assert rows[0]["invoice_difference"] == D("-0.01")
