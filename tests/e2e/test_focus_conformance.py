"""normalized.focus is a FOCUS 1.2 Cost and Usage dataset, checked rule by rule on every scenario
world (AWS CUR 2.0, Google Cloud billing export, FOCUS files, and the mixed world).

Each test names the FOCUS 1.2 rule it checks (FOCUS_Spec v1.2, specification/columns/*.md and
attributes/*.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from focus_world import write_focus_world
from mixed_world import write_world

from pipeline import scenario
from pipeline.config.loader import load_config
from pipeline.run.nightly import run_pipeline
from pipeline.scenario import write_gcp_scenario
from pipeline.warehouse.snapshots import open_database

MANDATORY = [
    "BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency", "BillingPeriodEnd",
    "BillingPeriodStart", "ChargeCategory", "ChargeClass", "ChargeDescription", "ChargePeriodEnd",
    "ChargePeriodStart", "ContractedCost", "EffectiveCost", "InvoiceIssuerName", "ListCost",
    "PricingQuantity", "PricingUnit", "ProviderName", "PublisherName", "ServiceCategory",
    "ServiceName",
]  # fmt: skip
CONDITIONAL = [
    "AvailabilityZone", "ChargeFrequency", "CommitmentDiscountCategory", "CommitmentDiscountId",
    "CommitmentDiscountName", "CommitmentDiscountStatus", "CommitmentDiscountType",
    "ConsumedQuantity", "ConsumedUnit", "ContractedUnitPrice", "InvoiceId", "ListUnitPrice",
    "PricingCategory", "RegionId", "RegionName", "ResourceId", "ResourceName", "ResourceType",
    "SkuId", "SkuPriceId", "SubAccountId", "SubAccountName", "Tags",
]  # fmt: skip
SERVICE_CATEGORIES = {
    "AI and Machine Learning", "Analytics", "Business Applications", "Compute", "Databases",
    "Developer Tools", "Multicloud", "Identity", "Integration", "Internet of Things",
    "Management and Governance", "Media", "Migration", "Mobile", "Networking", "Security",
    "Storage", "Web", "Other",
}  # fmt: skip
WORLDS = {
    "aws": lambda folder: scenario.write_scenario(folder),
    "gcp": lambda folder: write_gcp_scenario(folder),
    "focus": lambda folder: write_focus_world(folder),
    "mixed": lambda folder: write_world(folder),
}


@pytest.fixture(scope="module", params=list(WORLDS))
def con(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[duckdb.DuckDBPyConnection]:
    folder: Path = tmp_path_factory.mktemp(request.param)
    result = run_pipeline(load_config(WORLDS[request.param](folder)))
    con = open_database(result.database)
    yield con
    con.close()


def _count(con: duckdb.DuckDBPyConnection, where: str) -> int:
    return con.execute(f"select count(*) from normalized.focus where {where}").fetchone()[0]


def test_column_presence_and_order(con) -> None:
    """column_handling.md: every Mandatory column is present; custom columns are x_-prefixed and
    follow the FOCUS columns."""
    names = [row[0] for row in con.execute("describe normalized.focus").fetchall()]
    assert set(MANDATORY) <= set(names)
    assert set(CONDITIONAL) <= set(names)
    focus = [name for name in names if not name.startswith("x_")]
    assert names[: len(focus)] == focus and set(focus) == set(MANDATORY) | set(CONDITIONAL)


def test_types(con) -> None:
    """Cost metrics are Decimal; quantities and unit prices numeric; periods Date/Time."""
    types = dict((row[0], row[1]) for row in con.execute("describe normalized.focus").fetchall())
    for name in ("BilledCost", "EffectiveCost", "ListCost", "ContractedCost"):
        assert types[name] == "DECIMAL(38,10)", name
    for name in ("PricingQuantity", "ListUnitPrice", "ContractedUnitPrice"):
        assert types[name] in ("DOUBLE", "DECIMAL(38,10)"), name
    for name in ("BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd"):
        assert types[name] == "TIMESTAMP WITH TIME ZONE", name


def test_cost_metrics_and_names_are_never_null(con) -> None:
    """billedcost.md, effectivecost.md, listcost.md, contractedcost.md: not null;
    providername.md, publishername.md, invoiceissuername.md, servicename.md,
    servicecategory.md, billingcurrency.md, chargecategory.md: not null."""
    for name in (
        "BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "ProviderName",
        "PublisherName", "InvoiceIssuerName", "ServiceCategory", "BillingCurrency",
        "ChargeCategory", "BillingAccountId", "ChargePeriodStart", "ChargePeriodEnd",
    ):  # fmt: skip
        assert _count(con, f"{name} is null") == 0, name
    assert _count(con, "ProviderName in ('aws', 'gcp', 'microsoft', 'oracle')") == 0


def test_allowed_values(con) -> None:
    """chargecategory.md, chargeclass.md, chargefrequency.md, commitmentdiscountstatus.md,
    pricingcategory.md, servicecategory.md: values from the spec's lists."""
    assert _count(con, "ChargeCategory not in ('Usage', 'Purchase', 'Tax', 'Credit', "
                       "'Adjustment')") == 0  # fmt: skip
    assert _count(con, "ChargeClass is not null and ChargeClass <> 'Correction'") == 0
    assert _count(con, "ChargeFrequency not in ('One-Time', 'Recurring', 'Usage-Based')") == 0
    assert _count(con, "CommitmentDiscountStatus not in ('Used', 'Unused')") == 0
    assert _count(con, "PricingCategory not in ('Standard', 'Dynamic', 'Committed', 'Other')") == 0
    categories = {row[0] for row in con.execute(
        "select distinct ServiceCategory from normalized.focus").fetchall()}  # fmt: skip
    assert categories <= SERVICE_CATEGORIES


def test_pricing_category_is_null_for_tax_and_consumed_columns_only_on_usage(con) -> None:
    """pricingcategory.md: null when ChargeCategory is Tax; consumedquantity.md,
    consumedunit.md: null when ChargeCategory is not Usage."""
    assert _count(con, "ChargeCategory = 'Tax' and PricingCategory is not null") == 0
    assert _count(
        con, "ChargeCategory <> 'Usage' and (ConsumedQuantity is not null or ConsumedUnit "
             "is not null)"
    ) == 0  # fmt: skip


def test_commitment_discount_columns_go_together(con) -> None:
    """commitmentdiscountcategory.md, commitmentdiscounttype.md: null when
    CommitmentDiscountId is null."""
    assert _count(
        con, "CommitmentDiscountId is null and (CommitmentDiscountCategory is not null "
             "or CommitmentDiscountType is not null or CommitmentDiscountStatus is not null)"
    ) == 0  # fmt: skip


def test_unit_price_identities(con) -> None:
    """listcost.md, contractedcost.md: ListCost = ListUnitPrice x PricingQuantity and
    ContractedCost = ContractedUnitPrice x PricingQuantity where both are set, except on
    corrections (ChargeClass 'Correction'); compared to a cent's millionth."""
    for cost, price in (("ListCost", "ListUnitPrice"), ("ContractedCost", "ContractedUnitPrice")):
        bad = _count(
            con,
            f"{price} is not null and PricingQuantity is not null "
            "and ChargeCategory = 'Usage' and coalesce(ChargeClass, '') <> 'Correction' "
            f"and abs(cast({cost} as double) - {price} * PricingQuantity) > 0.00000001 "
            f"+ 0.000001 * abs(cast({cost} as double))",
        )
        assert bad == 0, cost


def test_billed_cost_is_the_invoice(con) -> None:
    """billedcost.md: BilledCost is the invoice's basis: per billing period and provider it sums
    to what the provider invoices (GCP: cost plus credits)."""
    rows = con.execute(
        "select focus.x_SourceFormat, sum(focus.BilledCost), "
        "sum(case when lines.source_format = 'gcp_billing_export' then lines.net_cost "
        "else lines.billed_cost end) "
        "from normalized.focus as focus join normalized.cost_lines as lines "
        "on focus.x_LineId = lines.line_id group by 1"
    ).fetchall()
    assert rows
    for _source, billed, invoice in rows:
        assert billed == invoice
    total = con.execute("select sum(BilledCost) from normalized.focus").fetchone()[0]
    lines = con.execute(
        "select sum(case when source_format = 'gcp_billing_export' then net_cost "
        "else billed_cost end) from normalized.cost_lines"
    ).fetchone()[0]
    assert Decimal(total) == Decimal(lines)
