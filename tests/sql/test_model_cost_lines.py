"""normalized.cost_lines: cost bases per line item type, categories, usage seconds, tags."""

from __future__ import annotations

from decimal import Decimal

import pytest
from builders import at, cur_line, line_id, records

D = Decimal


def cost_lines(con) -> list[dict]:
    return records(con, "select * from normalized.cost_lines order by line_id")


def indexed(cases: list) -> list:
    """pytest.param(index, *values) per case: case i reads line i of a build of all cases."""
    return [pytest.param(index, *case.values, id=case.id) for index, case in enumerate(cases)]


BASES_CASES = [
    pytest.param(
        {
            "line_item_line_item_type": "Usage",
            "line_item_unblended_cost": 10.5,
            "line_item_net_unblended_cost": 9.75,
            "pricing_public_on_demand_cost": 12.25,
        },
        ("10.5", "10.5", "12.25", "9.75"),
        id="usage",
    ),
    pytest.param(
        {"line_item_line_item_type": "Usage", "line_item_unblended_cost": 3.125},
        ("3.125", "3.125", "0", "3.125"),
        id="usage-net-and-list-null",
    ),
    pytest.param(
        {
            "line_item_line_item_type": "SavingsPlanCoveredUsage",
            "line_item_unblended_cost": 10.0,
            "pricing_public_on_demand_cost": 10.0,
            "savings_plan_savings_plan_effective_cost": 6.5,
            "savings_plan_net_savings_plan_effective_cost": 6.0,
        },
        ("10", "6.5", "10", "6"),
        id="sp-covered",
    ),
    pytest.param(
        {
            "line_item_line_item_type": "SavingsPlanCoveredUsage",
            "line_item_unblended_cost": 10.0,
            "savings_plan_savings_plan_effective_cost": 6.5,
        },
        ("10", "6.5", "0", "6.5"),
        id="sp-covered-net-null",
    ),
    pytest.param(
        {
            "line_item_line_item_type": "SavingsPlanNegation",
            "line_item_unblended_cost": -10.0,
            "line_item_net_unblended_cost": -9.0,
            "pricing_public_on_demand_cost": 10.0,
        },
        ("-10", "0", "0", "0"),
        id="sp-negation",
    ),
    pytest.param(
        {
            "line_item_line_item_type": "SavingsPlanRecurringFee",
            "line_item_unblended_cost": 100.0,
            "savings_plan_total_commitment_to_date": 100.0,
            "savings_plan_used_commitment": 70.25,
        },
        ("100", "29.75", "0", "29.75"),
        id="sp-recurring-fee",
    ),
    pytest.param(
        {
            "line_item_line_item_type": "SavingsPlanUpfrontFee",
            "line_item_unblended_cost": 8760.0,
        },
        ("8760", "0", "0", "0"),
        id="sp-upfront-fee",
    ),
    pytest.param(
        {
            "line_item_line_item_type": "DiscountedUsage",
            "line_item_unblended_cost": 0.0,
            "pricing_public_on_demand_cost": 6.0,
            "reservation_effective_cost": 4.2,
            "reservation_net_effective_cost": 3.9,
        },
        ("0", "4.2", "6", "3.9"),
        id="discounted-usage",
    ),
    pytest.param(
        {
            "line_item_line_item_type": "DiscountedUsage",
            "reservation_effective_cost": 4.2,
        },
        ("0", "4.2", "0", "4.2"),
        id="discounted-usage-net-null",
    ),
    pytest.param(
        {
            "line_item_line_item_type": "RIFee",
            "line_item_unblended_cost": 50.0,
            "reservation_unused_amortized_upfront_fee_for_billing_period": 1.5,
            "reservation_unused_recurring_fee": 2.25,
            "reservation_net_unused_amortized_upfront_fee_for_billing_period": 1.25,
        },
        ("50", "3.75", "0", "3.5"),
        id="ri-fee-one-net-null",
    ),
    pytest.param(
        {
            "line_item_line_item_type": "Fee",
            "line_item_unblended_cost": 500.0,
            "line_item_net_unblended_cost": 450.0,
            "reservation_reservation_a_r_n": "arn:aws:ec2:us-east-1:1:reserved-instances/r-1",
        },
        ("500", "0", "0", "0"),
        id="fee-ri-upfront",
    ),
    pytest.param(
        {
            "line_item_line_item_type": "Fee",
            "line_item_unblended_cost": 25.0,
            "line_item_net_unblended_cost": 24.0,
        },
        ("25", "25", "0", "24"),
        id="fee-without-arn",
    ),
    pytest.param(
        {
            "line_item_line_item_type": "Fee",
            "line_item_unblended_cost": 25.0,
            "reservation_reservation_a_r_n": "",
        },
        ("25", "25", "0", "25"),
        id="fee-empty-arn",
    ),
    pytest.param(
        {"line_item_line_item_type": "Tax", "line_item_unblended_cost": 7.0},
        ("7", "7", "0", "7"),
        id="tax",
    ),
    pytest.param(
        {
            "line_item_line_item_type": "EdpDiscount",
            "line_item_unblended_cost": -3.0,
            "line_item_net_unblended_cost": -3.0,
        },
        ("-3", "-3", "0", "0"),
        id="edp-discount",
    ),
    pytest.param(
        {"line_item_line_item_type": "PrivateRateDiscount", "line_item_unblended_cost": -2.0},
        ("-2", "-2", "0", "0"),
        id="private-rate-discount",
    ),
    pytest.param(
        {
            "line_item_line_item_type": "Credit",
            "line_item_unblended_cost": -40.0,
            "line_item_net_unblended_cost": -38.0,
        },
        ("-40", "-40", "0", "-38"),
        id="credit",
    ),
]


@pytest.fixture(scope="module")
def bases_lines(build_once) -> list[dict]:
    con, report = build_once([cur_line(**case.values[0]) for case in BASES_CASES])
    assert report.check_failures == []
    return cost_lines(con)


@pytest.mark.parametrize(("index", "columns", "expected"), indexed(BASES_CASES))
def test_cost_bases_per_line_item_type(bases_lines, index, columns, expected):
    line = bases_lines[index]

    assert line["provider_line_type"] == columns["line_item_line_item_type"]
    bases = (line["billed_cost"], line["effective_cost"], line["list_cost"], line["net_cost"])
    assert bases == tuple(D(value) for value in expected)


CATEGORIES = [
    pytest.param("Usage", "Usage", id="Usage"),
    pytest.param("DiscountedUsage", "Usage", id="DiscountedUsage"),
    pytest.param("SavingsPlanCoveredUsage", "Usage", id="SavingsPlanCoveredUsage"),
    pytest.param("SavingsPlanNegation", "Usage", id="SavingsPlanNegation"),
    pytest.param("Fee", "Purchase", id="Fee"),
    pytest.param("RIFee", "Purchase", id="RIFee"),
    pytest.param("SavingsPlanRecurringFee", "Purchase", id="SavingsPlanRecurringFee"),
    pytest.param("SavingsPlanUpfrontFee", "Purchase", id="SavingsPlanUpfrontFee"),
    pytest.param("Tax", "Tax", id="Tax"),
    pytest.param("Credit", "Credit", id="Credit"),
    pytest.param("BundledDiscount", "Credit", id="BundledDiscount"),
    pytest.param("EdpDiscount", "Credit", id="EdpDiscount"),
    pytest.param("PrivateRateDiscount", "Credit", id="PrivateRateDiscount"),
    pytest.param("Refund", "Adjustment", id="Refund"),
    pytest.param("SomethingNew", "Adjustment", id="SomethingNew"),
]


@pytest.fixture(scope="module")
def category_lines(build_once) -> list[dict]:
    con, _ = build_once([cur_line(line_item_line_item_type=case.values[0]) for case in CATEGORIES])
    return cost_lines(con)


@pytest.mark.parametrize(("index", "line_item_type", "category"), indexed(CATEGORIES))
def test_charge_category(category_lines, index, line_item_type, category):
    line = category_lines[index]

    assert line["charge_category"] == category
    assert line["provider_line_type"] == line_item_type


RESOURCE_CLASSES = [
    pytest.param({"line_item_line_item_type": "Tax"}, "tax", id="tax"),
    pytest.param({"line_item_line_item_type": "Refund"}, "credit", id="refund"),
    pytest.param({"line_item_line_item_type": "EdpDiscount"}, "credit", id="edp"),
    pytest.param(
        {"line_item_line_item_type": "SavingsPlanRecurringFee"}, "commitment", id="sp-fee"
    ),
    pytest.param(
        {"line_item_line_item_type": "Fee", "reservation_reservation_a_r_n": "arn:aws:ec2:ri/1"},
        "commitment",
        id="ri-upfront-fee",
    ),
    pytest.param({"line_item_line_item_type": "Fee"}, "other", id="other-fee"),
    pytest.param({"line_item_usage_type": "USE1-BoxUsage:p4d.24xlarge"}, "compute", id="box"),
    pytest.param({"line_item_usage_type": "USE1-SpotUsage:g5.xlarge"}, "compute", id="spot"),
    pytest.param({"line_item_usage_type": "USE1-EBS:VolumeUsage.gp3"}, "storage", id="ebs"),
    pytest.param(
        {"line_item_product_code": "AmazonS3", "line_item_usage_type": "TimedStorage-ByteHrs"},
        "storage",
        id="s3-storage",
    ),
    pytest.param(
        {"line_item_product_code": "AmazonS3", "line_item_usage_type": "Requests-Tier1"},
        "storage_operations",
        id="s3-put",
    ),
    pytest.param(
        {"line_item_usage_type": "USE1-DataTransfer-Regional-Bytes"}, "data_transfer", id="inter-az"
    ),
    pytest.param({"line_item_usage_type": "USE1-APN1-AWS-Out-Bytes"}, "data_transfer", id="egress"),
    pytest.param(
        {
            "line_item_product_code": "AmazonEKS",
            "line_item_usage_type": "AmazonEKS-Hours:perCluster",
        },
        "platform",
        id="eks",
    ),
    pytest.param(
        {"line_item_product_code": "AWSSupport", "line_item_usage_type": "Dollar"},
        "other",
        id="other",
    ),
]


@pytest.fixture(scope="module")
def class_lines(build_once) -> list[dict]:
    con, _ = build_once([cur_line(**case.values[0]) for case in RESOURCE_CLASSES])
    return cost_lines(con)


@pytest.mark.parametrize(("index", "overrides", "resource_class"), indexed(RESOURCE_CLASSES))
def test_resource_class(class_lines, index, overrides, resource_class):
    assert class_lines[index]["resource_class"] == resource_class


def test_money_cast_from_double_keeps_every_decimal(build):
    con, _ = build(
        [
            cur_line(line_item_unblended_cost=0.0000000001),
            cur_line(line_item_unblended_cost=-123.4567890123),
            cur_line(line_item_unblended_cost=9999999.123456),
        ]
    )

    billed = [line["billed_cost"] for line in cost_lines(con)]

    assert billed == [D("0.0000000001"), D("-123.4567890123"), D("9999999.123456")]


def test_money_cast_from_double_is_exact_for_large_amounts(build):
    # CUR money is DOUBLE; 1234567.123456 is stored as 1234567.12345599988..., whose shortest
    # repr is the billed value. A direct double -> DECIMAL(38, 10) cast gives 1234567.1234559998.
    con, _ = build([cur_line(line_item_unblended_cost=1234567.123456)])

    [line] = cost_lines(con)

    assert line["billed_cost"] == D("1234567.123456")


USAGE_CASES = [
    pytest.param("Hrs", 0.25, at(10), at(11), 900, id="quarter-hour"),
    pytest.param("Hrs", 1.0, at(10), at(11), 3600, id="full-hour"),
    pytest.param("Hrs", 2.5, at(10), at(11), 3600, id="capped-at-window"),
    pytest.param("Hrs", -1.0, at(10), at(11), 0, id="negative-usage"),
    pytest.param("Hrs", 30.0, at(0), at(0, day=2), 86400, id="daily-capped"),
    pytest.param("Hrs", 6.0, at(0), at(0, day=2), 21600, id="daily-six-hours"),
    pytest.param("GB-Mo", 5.0, at(10), at(11), 3600, id="storage-spans-window"),
    pytest.param(None, 1.0, at(10), at(12), 7200, id="no-unit"),
]


@pytest.fixture(scope="module")
def usage_lines(build_once) -> list[dict]:
    lines = []
    for case in USAGE_CASES:
        unit, amount, start, end, _ = case.values
        lines.append(
            cur_line(
                pricing_unit=unit,
                line_item_usage_amount=amount,
                line_item_usage_start_date=start,
                line_item_usage_end_date=end,
            )
        )
    con, _ = build_once(lines)
    return cost_lines(con)


@pytest.mark.parametrize(
    ("index", "unit", "amount", "start", "end", "seconds"), indexed(USAGE_CASES)
)
def test_usage_seconds(usage_lines, index, unit, amount, start, end, seconds):
    line = usage_lines[index]

    assert line["usage_seconds"] == seconds
    assert (line["pricing_unit"], line["consumed_quantity"]) == (unit, D(str(amount)))
    assert (line["charge_period_start"], line["charge_period_end"]) == (start, end)


def test_split_cost_rows_are_excluded(build):
    con, report = build(
        [
            cur_line(line_item_operation="RunInstances", line_item_unblended_cost=10.0),
            cur_line(line_item_operation="EKSPod-EC2", line_item_unblended_cost=4.0),
            cur_line(line_item_operation="ECSTask-EC2", line_item_unblended_cost=3.0),
            cur_line(line_item_operation=None, line_item_unblended_cost=1.0),
        ]
    )

    lines = cost_lines(con)

    assert [(line["line_id"], line["billed_cost"]) for line in lines] == [
        (line_id(0), 10),
        (line_id(3), 1),
    ]
    assert report.check_failures == []


def test_dimensions_and_provenance(build):
    con, _ = build(
        [
            cur_line(
                line_item_resource_id="  i-0abc  ",
                bill_invoice_id="",
                line_item_usage_type="USE1-BoxUsage:p5.48xlarge",
            ),
            cur_line(line_item_resource_id="   ", bill_invoice_id="INV-7"),
        ]
    )

    first, second = cost_lines(con)

    assert first["provider"] == "aws"
    assert first["billing_account_id"] == "111111111111"
    assert first["sub_account_id"] == "222222222222"
    assert first["billing_period"] == "2026-10"
    assert first["billing_currency"] == "USD"
    assert first["service_name"] == "AmazonEC2"
    assert first["resource_id"] == "i-0abc"
    assert first["invoice_id"] is None
    assert (first["source_delivery"], first["source_line"]) == ("delivery-1", 0)
    assert second["resource_id"] is None
    assert second["invoice_id"] == "INV-7"
    assert second["source_line"] == 1


def test_each_lines_account_and_currency_are_its_profiles(build):
    """The provider, payer account and currency are stored once per profile (contract version 4):
    two lines alike in every other profile source but their account or currency get a profile
    each, and every table keeps each line's own, down to the reconciliation."""
    con, report = build(
        [
            cur_line(line_item_unblended_cost=1.0),
            cur_line(bill_payer_account_id="999999999999", line_item_unblended_cost=2.0),
            cur_line(line_item_currency_code="EUR", line_item_unblended_cost=4.0),
        ]
    )

    assert report.check_failures == []
    assert [
        (line["billing_account_id"], line["billing_currency"], line["billed_cost"])
        for line in cost_lines(con)
    ] == [
        ("111111111111", "USD", Decimal(1)),
        ("999999999999", "USD", Decimal(2)),
        ("111111111111", "EUR", Decimal(4)),
    ]
    assert records(con, "select count(*) as n from normalized.cost_line_profiles")[0]["n"] == 3
    unattributed = records(
        con,
        "select billing_account_id, billing_currency, sum(billed_cost) as billed "
        "from allocation.cost_slices group by all order by all",
    )
    assert [tuple(row.values()) for row in unattributed] == [
        ("111111111111", "EUR", Decimal(4)),
        ("111111111111", "USD", Decimal(1)),
        ("999999999999", "USD", Decimal(2)),
    ]
    reconciled = records(
        con,
        "select billing_account_id, billing_currency, bill_total, unallocated, difference "
        "from marts.reconciliation where allocation_model = 'marginal' "
        "and cost_basis = 'billed_cost' order by all",
    )
    assert [tuple(row.values()) for row in reconciled] == [
        ("111111111111", "EUR", Decimal(4), Decimal(4), Decimal(0)),
        ("111111111111", "USD", Decimal(1), Decimal(1), Decimal(0)),
        ("999999999999", "USD", Decimal(2), Decimal(2), Decimal(0)),
    ]


def test_the_billing_period_is_the_deliverys(build):
    """A line's period is the BILLING_PERIOD its file was delivered under (2026-10 here), which
    ingest checks bill_billing_period_start_date against; a line without a start date keeps it."""
    con, _ = build([cur_line(), cur_line(bill_billing_period_start_date=None)])

    first, second = cost_lines(con)

    assert (first["billing_period"], second["billing_period"]) == ("2026-10", "2026-10")
    assert second["billing_period_start"] is None


DEFAULT_KEY_CASES = [
    pytest.param({"user_attempt_id": "a-1"}, "a-1", None, id="default-key"),
    pytest.param({"user_experiment_id": "e-1"}, None, "e-1", id="experiment-only"),
    pytest.param({"user_attempt_id": "a-2", "user_experiment_id": "e-2"}, "a-2", "e-2", id="both"),
    pytest.param({"user_attempt_id": ""}, None, None, id="empty-value"),
    pytest.param({"user_run": "a-9"}, None, None, id="other-key"),
    pytest.param({}, None, None, id="no-tags"),
]
CUSTOM_KEYS = {
    "attribution": {
        "attempt_tag_keys": ["user_run_id", "user_job_id"],
        "experiment_tag_keys": ["user_project", "user_sweep"],
    }
}
CUSTOM_KEY_CASES = [
    pytest.param({"user_run_id": "r-1", "user_job_id": "j-1"}, "r-1", None, id="first-key"),
    pytest.param({"user_run_id": "", "user_job_id": "j-1"}, "j-1", None, id="first-empty"),
    pytest.param({"user_job_id": "j-1"}, "j-1", None, id="second-key-only"),
    pytest.param({"user_attempt_id": "a-1"}, None, None, id="default-key-not-configured"),
    pytest.param(
        {"user_project": "", "user_sweep": "s-1", "user_experiment_id": "e-1"},
        None,
        "s-1",
        id="custom-experiment-key",
    ),
]


@pytest.fixture(scope="module")
def default_key_lines(build_once) -> list[dict]:
    con, _ = build_once([cur_line(resource_tags=case.values[0]) for case in DEFAULT_KEY_CASES])
    return cost_lines(con)


@pytest.fixture(scope="module")
def custom_key_lines(build_once) -> list[dict]:
    con, _ = build_once(
        [cur_line(resource_tags=case.values[0]) for case in CUSTOM_KEY_CASES], config=CUSTOM_KEYS
    )
    return cost_lines(con)


@pytest.mark.parametrize(
    ("index", "tags", "attempt_tag", "experiment_tag"), indexed(DEFAULT_KEY_CASES)
)
def test_tags_with_default_keys(default_key_lines, index, tags, attempt_tag, experiment_tag):
    line = default_key_lines[index]

    assert (line["attempt_tag"], line["experiment_tag"]) == (attempt_tag, experiment_tag)
    assert line["tags"] == tags


@pytest.mark.parametrize(
    ("index", "tags", "attempt_tag", "experiment_tag"), indexed(CUSTOM_KEY_CASES)
)
def test_tags_with_configured_keys(custom_key_lines, index, tags, attempt_tag, experiment_tag):
    line = custom_key_lines[index]

    assert (line["attempt_tag"], line["experiment_tag"]) == (attempt_tag, experiment_tag)
