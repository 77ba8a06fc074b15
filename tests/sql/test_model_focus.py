"""normalized.focus on given CUR 2.0 lines and Google Cloud rows: each FOCUS 1.2 rule the view
maps from a source, on the line that exercises it (FOCUS_Spec v1.2, specification/columns/*.md)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from builders import build_models, cur_line, records
from gcp_rows import credit, gcp_row, write_gcp

D = Decimal
SP_ARN = "arn:aws:savingsplans::111111111111:savingsplan/sp-1"
RI_ARN = "arn:aws:ec2:us-east-1:111111111111:reserved-instances/ri-1"
LINES = {
    "usage": cur_line(
        line_item_usage_amount=2.0,
        line_item_unblended_rate="0.5",
        line_item_unblended_cost=1.0,
        pricing_public_on_demand_rate="0.625",
        pricing_public_on_demand_cost=1.25,
    ),
    "sp-covered": cur_line(
        line_item_line_item_type="SavingsPlanCoveredUsage",
        line_item_usage_amount=4.0,
        line_item_unblended_rate="14.33801",
        line_item_unblended_cost=57.35204,
        pricing_public_on_demand_rate="14.33801",
        pricing_public_on_demand_cost=57.35204,
        savings_plan_savings_plan_a_r_n=SP_ARN,
        savings_plan_savings_plan_effective_cost=42.0,
    ),
    "sp-negation": cur_line(
        line_item_line_item_type="SavingsPlanNegation",
        line_item_usage_amount=4.0,
        line_item_unblended_rate="-14.33801",
        line_item_unblended_cost=-57.35204,
        pricing_public_on_demand_rate="14.33801",
        pricing_public_on_demand_cost=57.35204,
        savings_plan_savings_plan_a_r_n=SP_ARN,
    ),
    "sp-fee": cur_line(
        line_item_line_item_type="SavingsPlanRecurringFee",
        line_item_product_code="ComputeSavingsPlans",
        line_item_unblended_rate="50",
        line_item_unblended_cost=50.0,
        savings_plan_savings_plan_a_r_n=SP_ARN,
        savings_plan_total_commitment_to_date=50.0,
        savings_plan_used_commitment=42.0,
    ),
    "tax": cur_line(line_item_line_item_type="Tax", line_item_unblended_cost=28.75),
    "credit": cur_line(line_item_line_item_type="Credit", line_item_unblended_cost=-250.0),
    "marketplace": cur_line(
        bill_billing_entity="AWS Marketplace",
        bill_invoicing_entity="Amazon Web Services, Inc.",
        line_item_legal_entity="Red Hat, Inc.",
        line_item_product_code="prod-rhel",
        line_item_unblended_rate="0.13",
        line_item_unblended_cost=0.13,
    ),
    "bedrock": cur_line(
        line_item_product_code="AmazonBedrock",
        line_item_legal_entity="Amazon Web Services, Inc.",
        line_item_usage_amount=15000.0,
        pricing_unit="1K tokens",
        line_item_unblended_rate="0.00025",
        line_item_unblended_cost=3.75,
        pricing_public_on_demand_rate="0.00025",
        pricing_public_on_demand_cost=3.75,
    ),
    "ri-covered": cur_line(
        line_item_line_item_type="DiscountedUsage",
        line_item_usage_amount=1.0,
        line_item_unblended_rate="0",
        line_item_unblended_cost=0.0,
        pricing_public_on_demand_rate="0.8",
        pricing_public_on_demand_cost=0.8,
        reservation_reservation_a_r_n=RI_ARN,
        reservation_effective_cost=0.45,
    ),
    "ri-fee": cur_line(
        line_item_line_item_type="RIFee",
        line_item_usage_amount=10.0,
        line_item_unblended_rate="0.3",
        line_item_unblended_cost=3.0,
        reservation_reservation_a_r_n=RI_ARN,
        reservation_unused_quantity=2.0,
        reservation_unused_recurring_fee=0.6,
        reservation_unused_amortized_upfront_fee_for_billing_period=0.4,
    ),
}
NAMES = list(LINES)


@pytest.fixture(scope="module")
def focus(tmp_path_factory) -> dict[str, list[dict]]:
    folder = tmp_path_factory.mktemp("focus")
    promoted = gcp_row(
        cost=10.0,
        cost_at_list=12.0,
        usage={"amount": 7200.0, "unit": "seconds", "amount_in_pricing_units": 2.0},
        credits=[credit("SUSTAINED_USAGE_DISCOUNT", -2.0), credit("PROMOTION", -1.5)],
    )
    delivery = write_gcp(folder / "raw", [promoted])
    con, report = build_models(folder, list(LINES.values()), deliveries=[delivery])
    assert not report.check_failures
    rows = records(con, 'select * from normalized.focus order by "x_LineId", "ChargeCategory"')
    by_line: dict[int, list[dict]] = {}
    for row in rows:
        by_line.setdefault(row["x_LineId"], []).append(row)
    lines = list(by_line.values())
    return {**dict(zip([*NAMES, "gcp-promotion"], lines, strict=True))}


def test_negation_has_no_contracted_cost_of_its_own(focus) -> None:
    """contractedcost.md: ContractedCost = ContractedUnitPrice x PricingQuantity; a negation
    takes back covered usage's charge at price 0, so its ContractedCost is 0, never +57.35."""
    [row] = focus["sp-negation"]
    assert (row["BilledCost"], row["ContractedCost"], row["ContractedUnitPrice"]) == (
        D("-57.35204"),
        0,
        0,
    )
    assert (row["ListCost"], row["ListUnitPrice"], row["CommitmentDiscountStatus"]) == (
        0,
        0,
        "Used",
    )


def test_tax_and_credit_rows_cost_what_they_bill(focus) -> None:
    """listcost.md, contractedcost.md: a charge without a unit price that is its own charge
    (Credit) or levied on billed charges (Tax) has ListCost and ContractedCost = BilledCost;
    listunitprice.md, pricingquantity.md: prices and PricingQuantity are null on Tax."""
    [tax] = focus["tax"]
    [credit_row] = focus["credit"]
    assert (tax["ListCost"], tax["ContractedCost"]) == (D("28.75"), D("28.75"))
    assert (tax["ListUnitPrice"], tax["ContractedUnitPrice"], tax["PricingQuantity"]) == (None,) * 3
    assert (credit_row["ListCost"], credit_row["ContractedCost"]) == (D("-250"), D("-250"))
    assert credit_row["EffectiveCost"] == D("-250")


def test_usage_carries_cur_rates_as_decimal_unit_prices(focus) -> None:
    """listunitprice.md, contractedunitprice.md: not null on Usage; ListUnitPrice is the public
    on-demand rate, ContractedUnitPrice the rate charged, each times PricingQuantity its cost."""
    [usage] = focus["usage"]
    assert (usage["ListUnitPrice"], usage["ContractedUnitPrice"]) == (D("0.625"), D("0.5"))
    assert (usage["ListCost"], usage["ContractedCost"], usage["PricingQuantity"]) == (
        D("1.25"),
        D("1"),
        D("2"),
    )
    assert usage["PricingCurrency"] == "USD"
    assert usage["PricingCurrencyListUnitPrice"] == D("0.625")


def test_savings_plan_fee_is_a_purchase_of_no_effective_cost_and_its_unused_part_a_row(focus):
    """effectivecost.md: EffectiveCost is 0 on a Purchase that covers eligible charges; per
    commitment, Usage EffectiveCost (Used plus Unused) equals the Purchase's BilledCost."""
    purchase, unused = sorted(focus["sp-fee"], key=lambda row: row["ChargeCategory"])
    assert (purchase["ChargeCategory"], purchase["BilledCost"], purchase["EffectiveCost"]) == (
        "Purchase",
        D("50"),
        0,
    )
    assert (purchase["ListUnitPrice"], purchase["ListCost"], purchase["ChargeFrequency"]) == (
        D("50"),
        D("50"),
        "Recurring",
    )
    assert (unused["ChargeCategory"], unused["CommitmentDiscountStatus"]) == ("Usage", "Unused")
    assert (unused["BilledCost"], unused["EffectiveCost"], unused["ListCost"]) == (0, D("8"), 0)
    assert unused["ConsumedQuantity"] is None
    assert unused["x_ProviderLineType"] == "SavingsPlanRecurringFee:Unused"
    [covered] = focus["sp-covered"]
    assert covered["EffectiveCost"] + unused["EffectiveCost"] == purchase["BilledCost"]
    assert (covered["CommitmentDiscountQuantity"], covered["CommitmentDiscountUnit"]) == (
        D("42"),
        "USD",
    )


def test_marketplace_publisher_is_the_seller(focus) -> None:
    """publisher.md: PublisherName is who produced what was bought: a Marketplace line's
    seller (line_item_legal_entity), while AWS issues the invoice and provides."""
    [row] = focus["marketplace"]
    assert (row["PublisherName"], row["InvoiceIssuerName"], row["ProviderName"]) == (
        "Red Hat, Inc.",
        "Amazon Web Services, Inc.",
        "AWS",
    )


def test_service_category_follows_the_providers_service(focus) -> None:
    """servicecategory.md, servicesubcategory.md: Bedrock is AI and Machine Learning (Generative
    AI), whatever runcost's resource class of the line."""
    [row] = focus["bedrock"]
    assert (row["ServiceCategory"], row["ServiceSubcategory"]) == (
        "AI and Machine Learning",
        "Generative AI",
    )
    [unknown] = focus["marketplace"]
    assert (unknown["ServiceCategory"], unknown["ServiceSubcategory"]) == ("Other", "Other (Other)")


def test_google_cloud_effective_cost_includes_promotional_credits(focus) -> None:
    """effectivecost.md: EffectiveCost is after every discount and credit: a Google Cloud row's
    cost plus all its credits (promotions too), as its BilledCost and the invoice."""
    [row] = focus["gcp-promotion"]
    assert (row["BilledCost"], row["EffectiveCost"]) == (D("6.5"), D("6.5"))
    assert (row["ListCost"], row["ListUnitPrice"]) == (D("12"), D("6"))
    assert (row["ContractedCost"], row["ContractedUnitPrice"]) == (D("10"), D("5"))
    assert (row["ServiceCategory"], row["SubAccountType"]) == ("Compute", "Project")


def test_reservation_fee_is_a_purchase_and_its_unused_hours_a_row(focus) -> None:
    """effectivecost.md, commitmentdiscountquantity.md: a reservation fee is a Purchase of
    EffectiveCost 0 and of the hours bought; the unused hours are a Usage row of their own,
    Unused, whose EffectiveCost is CUR's unused fees; covered usage is Used, listed and
    contracted at the public rate (CUR charges it 0), its hours counted in Hours."""
    purchase, unused = sorted(focus["ri-fee"], key=lambda row: row["ChargeCategory"])
    assert (purchase["ChargeCategory"], purchase["BilledCost"], purchase["EffectiveCost"]) == (
        "Purchase",
        D("3"),
        0,
    )
    assert (purchase["ListUnitPrice"], purchase["PricingQuantity"], purchase["ListCost"]) == (
        D("0.3"),
        D("10"),
        D("3"),
    )
    assert (purchase["CommitmentDiscountQuantity"], purchase["CommitmentDiscountUnit"]) == (
        D("10"),
        "Hours",
    )
    assert (unused["ChargeCategory"], unused["CommitmentDiscountStatus"]) == ("Usage", "Unused")
    assert (unused["BilledCost"], unused["EffectiveCost"], unused["ListCost"]) == (0, D("1"), 0)
    assert (unused["CommitmentDiscountQuantity"], unused["CommitmentDiscountUnit"]) == (
        D("2"),
        "Hours",
    )
    [covered] = focus["ri-covered"]
    assert (covered["BilledCost"], covered["EffectiveCost"], covered["ListCost"]) == (
        0,
        D("0.45"),
        D("0.8"),
    )
    assert (covered["ContractedUnitPrice"], covered["ContractedCost"]) == (D("0.8"), D("0.8"))
    assert (covered["CommitmentDiscountStatus"], covered["CommitmentDiscountQuantity"]) == (
        "Used",
        D("1"),
    )
