"""normalized.focus is a FOCUS 1.2 Cost and Usage dataset, checked rule by rule on every scenario
world (AWS CUR 2.0, Google Cloud billing export, FOCUS files, and the mixed world).

Each test names the FOCUS 1.2 rule it checks (FOCUS_Spec v1.2, specification/columns/*.md and
attributes/*.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest
from focus_world import write_focus_world
from mixed_world import write_world

from pipeline import scenario
from pipeline.config.loader import load_config
from pipeline.dag.service_categories import PARENTS
from pipeline.run.nightly import run_pipeline
from pipeline.scenario import write_gcp_scenario
from pipeline.warehouse.snapshots import open_database

# the 57 columns of FOCUS 1.2 (specification/columns/*.md), by feature level
MANDATORY = [
    "BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency", "BillingPeriodEnd",
    "BillingPeriodStart", "ChargeCategory", "ChargeClass", "ChargeDescription", "ChargePeriodEnd",
    "ChargePeriodStart", "ContractedCost", "EffectiveCost", "InvoiceIssuerName", "ListCost",
    "PricingQuantity", "PricingUnit", "ProviderName", "PublisherName", "ServiceCategory",
    "ServiceName",
]  # fmt: skip
CONDITIONAL = [
    "AvailabilityZone", "BillingAccountType", "CapacityReservationId", "CapacityReservationStatus",
    "ChargeFrequency", "CommitmentDiscountCategory", "CommitmentDiscountId",
    "CommitmentDiscountName", "CommitmentDiscountQuantity", "CommitmentDiscountStatus",
    "CommitmentDiscountType", "CommitmentDiscountUnit", "ConsumedQuantity", "ConsumedUnit",
    "ContractedUnitPrice", "InvoiceId", "ListUnitPrice", "PricingCategory", "PricingCurrency",
    "PricingCurrencyContractedUnitPrice", "PricingCurrencyEffectiveCost",
    "PricingCurrencyListUnitPrice", "RegionId", "RegionName", "ResourceId", "ResourceName",
    "ResourceType", "ServiceSubcategory", "SkuId", "SkuMeter", "SkuPriceDetails", "SkuPriceId",
    "SubAccountId", "SubAccountName", "SubAccountType", "Tags",
]  # fmt: skip
# the columns FOCUS 1.3 adds, published as a 1.3 file delivers them (NULL on other lines)
FOCUS_1_3 = [
    "AllocatedMethodDetails", "AllocatedMethodId", "AllocatedResourceId", "AllocatedResourceName",
    "AllocatedTags", "ContractApplied", "HostProviderName", "ServiceProviderName",
]  # fmt: skip
SERVICE_CATEGORIES = {
    "AI and Machine Learning", "Analytics", "Business Applications", "Compute", "Databases",
    "Developer Tools", "Multicloud", "Identity", "Integration", "Internet of Things",
    "Management and Governance", "Media", "Migration", "Mobile", "Networking", "Security",
    "Storage", "Web", "Other",
}  # fmt: skip
# rows runcost maps from a provider's export; a FOCUS file's rows pass their columns through
MAPPED = "x_SourceFormat in ('aws_cur', 'gcp_billing_export')"
PRICED = "ChargeCategory in ('Usage', 'Purchase') and ChargeClass is null"
# a cost and its unit price times the quantity agree to a millionth of the currency unit (the
# precision of a provider's rounded line cost) plus the unit price's own rounding to 10 places
MATCHES = (
    "abs({cost} - {price} * PricingQuantity) <= 0.000001 + 0.0000000001 * abs(PricingQuantity)"
)


@dataclass(frozen=True)
class Rule:
    """A FOCUS 1.2 rule as SQL over normalized.focus: the rows it concerns and, among them, the
    rows that break it (none may)."""

    name: str
    concerns: str
    breaks: str


RULES = [
    Rule("ListCost of a Credit row without ListUnitPrice equals BilledCost (listcost.md)",
         f"{MAPPED} and ChargeCategory in ('Credit', 'Adjustment') and ListUnitPrice is null",
         "ListCost <> BilledCost"),
    Rule("ContractedCost of a Credit row without ContractedUnitPrice equals BilledCost "
         "(contractedcost.md)",
         f"{MAPPED} and ChargeCategory in ('Credit', 'Adjustment') and ContractedUnitPrice is null",
         "ContractedCost <> BilledCost"),
    Rule("ListCost and ContractedCost of a Tax row are those of what it taxes: what it bills "
         "(listcost.md, contractedcost.md)",
         f"{MAPPED} and ChargeCategory = 'Tax'",
         "ListCost <> BilledCost or ContractedCost <> BilledCost"),
    Rule("ListUnitPrice, ContractedUnitPrice and PricingQuantity are not null on Usage and "
         "Purchase rows that are not corrections (listunitprice.md, contractedunitprice.md, "
         "pricingquantity.md)",
         f"{MAPPED} and {PRICED}",
         "ListUnitPrice is null or ContractedUnitPrice is null or PricingQuantity is null"),
    Rule("ListUnitPrice, ContractedUnitPrice and PricingQuantity are null on Tax rows",
         "ChargeCategory = 'Tax'",
         "ListUnitPrice is not null or ContractedUnitPrice is not null "
         "or PricingQuantity is not null"),
    Rule("ListUnitPrice and ContractedUnitPrice are non-negative",
         "ListUnitPrice is not null or ContractedUnitPrice is not null",
         "ListUnitPrice < 0 or ContractedUnitPrice < 0"),
    Rule("ListCost = ListUnitPrice x PricingQuantity, corrections excepted (listcost.md)",
         "ListUnitPrice is not null and PricingQuantity is not null and ChargeClass is null",
         "not " + MATCHES.format(cost="ListCost", price="ListUnitPrice")),
    Rule("ContractedCost = ContractedUnitPrice x PricingQuantity, corrections excepted "
         "(contractedcost.md)",
         "ContractedUnitPrice is not null and PricingQuantity is not null and ChargeClass is null",
         "not " + MATCHES.format(cost="ContractedCost", price="ContractedUnitPrice")),
    Rule("EffectiveCost is 0 on a commitment Purchase (effectivecost.md)",
         f"{MAPPED} and ChargeCategory = 'Purchase' and CommitmentDiscountId is not null",
         "EffectiveCost <> 0"),
    Rule("EffectiveCost of a row that is not Usage or Purchase equals its BilledCost "
         "(effectivecost.md)",
         f"{MAPPED} and ChargeCategory not in ('Usage', 'Purchase')",
         "EffectiveCost <> BilledCost"),
    Rule("CommitmentDiscountStatus is Used or Unused on Usage rows of a commitment, null "
         "without one (commitmentdiscountstatus.md)",
         "CommitmentDiscountId is not null and ChargeCategory = 'Usage' "
         "or CommitmentDiscountId is null",
         "(CommitmentDiscountId is null) <> (CommitmentDiscountStatus is null) "
         "or CommitmentDiscountStatus not in ('Used', 'Unused')"),
    Rule("CommitmentDiscountQuantity is set on Usage and Purchase rows of a commitment (not "
         "corrections), null on others; CommitmentDiscountUnit with it "
         "(commitmentdiscountquantity.md, commitmentdiscountunit.md)",
         MAPPED,
         f"(CommitmentDiscountId is not null and {PRICED}) <> "
         "(CommitmentDiscountQuantity is not null) "
         "or (CommitmentDiscountQuantity is null) <> (CommitmentDiscountUnit is null)"),
    Rule("ConsumedQuantity and ConsumedUnit are null but on Usage rows that are not a "
         "commitment's unused part (consumedquantity.md, consumedunit.md)",
         "ChargeCategory <> 'Usage' or CommitmentDiscountStatus = 'Unused'",
         "ConsumedQuantity is not null or ConsumedUnit is not null"),
    Rule("PricingCategory is null on Tax rows (pricingcategory.md)",
         "ChargeCategory = 'Tax'", "PricingCategory is not null"),
    Rule("ChargeFrequency is One-Time, Recurring or Usage-Based, in that case "
         "(chargefrequency.md)",
         "ChargeFrequency is not null",
         "ChargeFrequency not in ('One-Time', 'Recurring', 'Usage-Based')"),
    Rule("ChargeFrequency of AWS and Google Cloud rows is never null (chargefrequency.md)",
         MAPPED, "ChargeFrequency is null"),
    Rule("ServiceSubcategory is an allowed value whose one parent is the row's ServiceCategory "
         "(servicesubcategory.md)",
         "true",
         "ServiceSubcategory is null or (ServiceSubcategory not in "
         "(select subcategory from subcategory_parents) and ServiceSubcategory <> "
         "'Other (' || ServiceCategory || ')') or ServiceCategory <> coalesce((select category "
         "from subcategory_parents where subcategory = ServiceSubcategory), ServiceCategory)"),
    Rule("PricingCurrency and PricingCurrencyEffectiveCost are never null (pricingcurrency.md, "
         "pricingcurrencyeffectivecost.md)",
         "true", "PricingCurrency is null or PricingCurrencyEffectiveCost is null"),
    Rule("PricingCurrency unit prices are null on Tax and set on priced AWS and Google Cloud "
         "rows (pricingcurrencylistunitprice.md, pricingcurrencycontractedunitprice.md)",
         f"ChargeCategory = 'Tax' or {MAPPED} and {PRICED}",
         "(ChargeCategory = 'Tax') = (PricingCurrencyListUnitPrice is not null "
         "or PricingCurrencyContractedUnitPrice is not null)"),
    Rule("BillingAccountType and SubAccountType are set exactly when their ids are "
         "(billingaccounttype.md, subaccounttype.md)",
         "true",
         "(BillingAccountId is null) <> (BillingAccountType is null) "
         "or (SubAccountId is null) <> (SubAccountType is null)"),
    Rule("SkuMeter is null without SkuId; SkuPriceDetails null without SkuPriceId; "
         "CapacityReservationStatus null without CapacityReservationId (skumeter.md, "
         "skupricedetails.md, capacityreservationstatus.md)",
         "SkuId is null or SkuPriceId is null or CapacityReservationId is null",
         "(SkuId is null and SkuMeter is not null) or (SkuPriceId is null and SkuPriceDetails "
         "is not null) or (CapacityReservationId is null and CapacityReservationStatus "
         "is not null)"),
    Rule("PublisherName, ProviderName, InvoiceIssuerName, ServiceCategory, cost metrics and "
         "periods are never null (the Mandatory columns' nullability)",
         "true",
         " or ".join(f"{name} is null" for name in (
             "BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "ProviderName",
             "PublisherName", "InvoiceIssuerName", "ServiceCategory", "BillingCurrency",
             "ChargeCategory", "BillingAccountId", "ChargePeriodStart", "ChargePeriodEnd",
         ))),
]  # fmt: skip
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


def _parents() -> str:
    """FOCUS 1.2's allowed subcategories with their category, as a CTE a rule can read."""
    values = ", ".join(f"('{sub}', '{category}')" for sub, category in sorted(PARENTS.items()))
    return f"subcategory_parents (subcategory, category) as (values {values})"


@pytest.mark.parametrize("rule", RULES, ids=[rule.name for rule in RULES])
def test_rule(con, rule: Rule) -> None:
    """Each FOCUS 1.2 rule runcost guarantees (docs/focus.md): no row it concerns breaks it."""
    concerned, broken = con.execute(
        f"with {_parents()} select count(*) filter (where {rule.concerns}), "
        f"count(*) filter (where ({rule.concerns}) and ({rule.breaks})) from normalized.focus"
    ).fetchone()
    if concerned == 0:
        pytest.skip(f"no row of this world is concerned by: {rule.name}")
    assert broken == 0, rule.name


def test_column_presence_and_order(con) -> None:
    """column_handling.md: all 57 FOCUS 1.2 columns are present, with FOCUS 1.3's, in
    alphabetical order; custom columns are x_-prefixed and follow the FOCUS columns."""
    names = [row[0] for row in con.execute("describe normalized.focus").fetchall()]
    focus = [name for name in names if not name.startswith("x_")]
    assert len(set(MANDATORY) | set(CONDITIONAL)) == 57
    assert names[: len(focus)] == focus == sorted(MANDATORY + CONDITIONAL + FOCUS_1_3)


def test_types(con) -> None:
    """Cost metrics, unit prices and quantities are Decimal (billedcost.md, listunitprice.md,
    pricingquantity.md, ...); periods Date/Time; Tags and SkuPriceDetails key-value JSON."""
    types = dict((row[0], row[1]) for row in con.execute("describe normalized.focus").fetchall())
    for name in (
        "BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "PricingQuantity",
        "ListUnitPrice", "ContractedUnitPrice", "ConsumedQuantity", "CommitmentDiscountQuantity",
        "PricingCurrencyContractedUnitPrice", "PricingCurrencyEffectiveCost",
        "PricingCurrencyListUnitPrice",
    ):  # fmt: skip
        assert types[name] == "DECIMAL(38,10)", name
    for name in ("BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd"):
        assert types[name] == "TIMESTAMP WITH TIME ZONE", name
    assert (types["Tags"], types["SkuPriceDetails"]) == ("JSON", "JSON")
    for name in ("AllocatedTags", "AllocatedMethodDetails", "ContractApplied"):  # 1.3
        assert types[name] == "JSON", name


def test_allowed_values(con) -> None:
    """chargecategory.md, chargeclass.md, commitmentdiscountstatus.md, pricingcategory.md,
    servicecategory.md: values from the spec's lists; ProviderName is a name, not runcost's id."""
    assert _count(con, "ChargeCategory not in ('Usage', 'Purchase', 'Tax', 'Credit', "
                       "'Adjustment')") == 0  # fmt: skip
    assert _count(con, "ChargeClass is not null and ChargeClass <> 'Correction'") == 0
    assert _count(con, "CommitmentDiscountStatus not in ('Used', 'Unused')") == 0
    assert _count(con, "PricingCategory not in ('Standard', 'Dynamic', 'Committed', 'Other')") == 0
    assert _count(con, "ProviderName in ('aws', 'gcp', 'microsoft', 'oracle')") == 0
    categories = {row[0] for row in con.execute(
        "select distinct ServiceCategory from normalized.focus").fetchall()}  # fmt: skip
    assert categories <= SERVICE_CATEGORIES


def test_billed_cost_is_the_invoice(con) -> None:
    """billedcost.md: BilledCost is the invoice's basis: per source it sums to what the provider
    invoices (Google Cloud: cost plus credits); an unused commitment's row bills nothing."""
    rows = con.execute(
        "with focus as (select x_SourceFormat, sum(BilledCost) as billed from normalized.focus "
        "group by all), lines as (select source_format, sum(case when source_format = "
        "'gcp_billing_export' then net_cost else billed_cost end) as invoice "
        "from normalized.cost_lines group by all) "
        "select focus.billed, lines.invoice from focus join lines "
        "on focus.x_SourceFormat = lines.source_format"
    ).fetchall()
    assert rows
    assert [billed for billed, _ in rows] == [invoice for _, invoice in rows]
    assert _count(con, "CommitmentDiscountStatus = 'Unused' and BilledCost <> 0") == 0


def test_rows_are_the_cost_lines_and_each_unused_commitment(con) -> None:
    """One row per cost line, and one more per AWS commitment fee line with an unused part."""
    lines = con.execute("select count(*) from normalized.cost_lines").fetchone()[0]
    fees = con.execute(
        "select count(*) from normalized.cost_lines where source_format = 'aws_cur' "
        "and charge_category = 'Purchase' and commitment_discount_id is not null "
        "and effective_cost <> 0"
    ).fetchone()[0]
    assert _count(con, "true") == lines + fees
    assert _count(con, "x_ProviderLineType like '%:Unused'") == fees


def test_effective_cost_ties_to_the_lines(con) -> None:
    """effectivecost.md: EffectiveCost is after every discount and credit: a Google Cloud row's
    is cost plus all its credits (promotions too, so it ties to the invoice); AWS's and FOCUS
    files' are the lines' amortized cost, an AWS commitment fee's unused part on its own row."""
    rows = con.execute(
        "with focus as (select x_SourceFormat, sum(EffectiveCost) as effective "
        "from normalized.focus group by all), lines as (select source_format, "
        "sum(case when source_format = 'gcp_billing_export' then net_cost "
        "else effective_cost end) as effective from normalized.cost_lines group by all) "
        "select focus.effective, lines.effective from focus join lines "
        "on focus.x_SourceFormat = lines.source_format"
    ).fetchall()
    assert rows
    assert [found for found, _ in rows] == [expected for _, expected in rows]


def test_focus_files_pass_their_columns_through(con) -> None:
    """A FOCUS file's delivered costs, prices and quantities are published as delivered (prices
    and PricingQuantity on Tax excepted: FOCUS has them null)."""
    if _count(con, "x_SourceFormat = 'focus'") == 0:
        pytest.skip("this world has no FOCUS file")
    changed = con.execute(
        "select count(*) from normalized.focus as focus join normalized.cost_lines as lines "
        "on focus.x_LineId = lines.line_id where focus.x_SourceFormat = 'focus' and ("
        "focus.BilledCost <> lines.billed_cost or focus.EffectiveCost <> lines.effective_cost "
        "or focus.ListCost <> lines.list_cost "
        "or focus.ContractedCost <> coalesce(lines.contracted_cost, lines.list_cost) "
        "or focus.ChargeCategory = 'Tax' and focus.ListUnitPrice is not null "
        "or focus.ChargeCategory <> 'Tax' and focus.ListUnitPrice is distinct from "
        "lines.list_unit_price "
        "or focus.ChargeCategory <> 'Tax' and focus.PricingQuantity is distinct from "
        "lines.pricing_quantity)"
    ).fetchone()[0]
    assert changed == 0
