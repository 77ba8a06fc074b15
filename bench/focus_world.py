"""The benchmark world's bill as FOCUS 1.2 files: one DuckDB projection of its CUR 2.0 Parquet.

Each FOCUS column is one rule over the CUR columns (COLUMNS below), as the FinOps Foundation's
converters write the mapping; the costs are:

- ``BilledCost`` is ``line_item_unblended_cost``.
- ``EffectiveCost`` is ``savings_plan_savings_plan_effective_cost`` on Savings Plan covered
  usage, 0 on its negation and on the Savings Plan fee (a commitment Purchase), and
  ``line_item_unblended_cost`` on every other line. The part of the commitment an hour left
  unused (``savings_plan_total_commitment_to_date - savings_plan_used_commitment``) is a Usage
  row of its own, ``CommitmentDiscountStatus`` Unused, billed 0, as FOCUS 1.2 requires.
- ``ListCost`` is ``pricing_public_on_demand_cost``; 0 on a negation (it only takes back the
  covered usage's charge); ``BilledCost`` where the CUR has no public price (Tax, the fee).
- ``ContractedCost`` is ``line_item_net_unblended_cost`` (the EDP accounts' 5 %), else
  ``line_item_unblended_cost``; 0 on a negation.

FOCUS has no net cost column: runcost publishes ``EffectiveCost`` as ``net_cost`` of a FOCUS
line, so expected.json names no ``net_cost`` and the benchmark does not compare it. ``Tags``
holds the CUR's user tags under the keys as written on the resources (``user_attempt_id`` is
``attempt-id``), which the FOCUS path looks up exactly as configured.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from bench.scale_sql import EXPORT_DIR
from bench.source_config import ATTEMPT_KEY, expected_bill, source_config_text

FORMATS = ("parquet", "csv")
MONEY = "decimal(38, 10)"
_TYPE = "line_item_line_item_type"
_UNBLENDED = f"line_item_unblended_cost::{MONEY}"

# FOCUS column -> SQL over one CUR 2.0 line (the table `cur`)
COLUMNS: dict[str, str] = {
    "AvailabilityZone": "nullif(line_item_availability_zone, '')",
    "BilledCost": _UNBLENDED,
    "BillingAccountId": "bill_payer_account_id",
    "BillingAccountName": "bill_payer_account_name",
    "BillingAccountType": "'Payer Account'",
    "BillingCurrency": "line_item_currency_code",
    "BillingPeriodEnd": "bill_billing_period_end_date",
    "BillingPeriodStart": "bill_billing_period_start_date",
    "ChargeCategory": f"""case
        when {_TYPE} in ('Usage', 'DiscountedUsage', 'SavingsPlanCoveredUsage',
            'SavingsPlanNegation') then 'Usage'
        when {_TYPE} in ('Fee', 'RIFee', 'SavingsPlanRecurringFee', 'SavingsPlanUpfrontFee')
            then 'Purchase'
        when {_TYPE} = 'Tax' then 'Tax'
        when {_TYPE} in ('Credit', 'BundledDiscount', 'EdpDiscount', 'PrivateRateDiscount')
            then 'Credit'
        else 'Adjustment' end""",
    "ChargeDescription": "line_item_line_item_description",
    "ChargeFrequency": f"""case
        when {_TYPE} in ('RIFee', 'SavingsPlanRecurringFee') then 'Recurring'
        when {_TYPE} in ('Usage', 'DiscountedUsage', 'SavingsPlanCoveredUsage') then 'Usage-Based'
        else 'One-Time' end""",
    "ChargePeriodEnd": "line_item_usage_end_date",
    "ChargePeriodStart": "line_item_usage_start_date",
    "CommitmentDiscountCategory": "case when savings_plan_savings_plan_a_r_n <> '' "
    "then 'Spend' end",
    "CommitmentDiscountId": "nullif(savings_plan_savings_plan_a_r_n, '')",
    "CommitmentDiscountStatus": f"case when {_TYPE} = 'SavingsPlanCoveredUsage' then 'Used' end",
    "CommitmentDiscountType": "case when savings_plan_savings_plan_a_r_n <> '' "
    "then 'Savings Plan' end",
    "ConsumedQuantity": f"case when {_TYPE} in ('Usage', 'SavingsPlanCoveredUsage') "
    f"then line_item_usage_amount::{MONEY} end",
    "ConsumedUnit": f"case when {_TYPE} in ('Usage', 'SavingsPlanCoveredUsage') "
    "then nullif(pricing_unit, '') end",
    "ContractedCost": f"""case when {_TYPE} = 'SavingsPlanNegation' then 0::{MONEY}
        else coalesce(line_item_net_unblended_cost::{MONEY}, {_UNBLENDED}) end""",
    "EffectiveCost": f"""case {_TYPE}
        when 'SavingsPlanCoveredUsage' then savings_plan_savings_plan_effective_cost::{MONEY}
        when 'SavingsPlanNegation' then 0::{MONEY}
        when 'SavingsPlanRecurringFee' then 0::{MONEY}
        else {_UNBLENDED} end""",
    "InvoiceId": "nullif(bill_invoice_id, '')",
    "InvoiceIssuerName": "bill_invoicing_entity",
    "ListCost": f"""case when {_TYPE} = 'SavingsPlanNegation' then 0::{MONEY}
        else coalesce(pricing_public_on_demand_cost::{MONEY}, {_UNBLENDED}) end""",
    "PricingCategory": f"""case when {_TYPE} = 'Tax' then null
        when {_TYPE} = 'SavingsPlanCoveredUsage' then 'Committed'
        when pricing_term = 'OnDemand' then 'Standard' else 'Other' end""",
    "PricingQuantity": f"case when {_TYPE} <> 'Tax' then line_item_usage_amount::{MONEY} end",
    "PricingUnit": "nullif(pricing_unit, '')",
    "ProviderName": "'AWS'",
    "PublisherName": "line_item_legal_entity",
    "RegionId": "product_region_code",
    "RegionName": "product_location",
    "ResourceId": "nullif(line_item_resource_id, '')",
    # the world's services by the product family the generator writes (a fee is compute)
    "ServiceCategory": f"""case
        when {_TYPE} = 'SavingsPlanRecurringFee' then 'Compute'
        when product_product_family in ('Compute Instance', 'Compute') then 'Compute'
        when product_product_family = 'Storage' then 'Storage'
        when product_product_family = 'Metric' then 'Management and Governance'
        else 'Networking' end""",
    "ServiceName": "line_item_product_code",
    "SkuId": "product_sku",
    "SubAccountId": "line_item_usage_account_id",
    "SubAccountName": "line_item_usage_account_name",
    "SubAccountType": "'Usage Account'",
    # CUR's user_ prefix off and _ back to -: the keys as on the resources
    "Tags": "to_json(map_from_entries(list_transform(list_filter(map_entries(resource_tags), "
    "lambda entry: starts_with(entry.key, 'user_')), lambda entry: {'key': "
    "replace(entry.key[6:], '_', '-'), 'value': entry.value})))::varchar",
    "x_Operation": "nullif(line_item_operation, '')",
    "x_UsageType": "nullif(line_item_usage_type, '')",
}
# the unused part of each Savings Plan fee hour: its own Usage row (FOCUS 1.2 effectivecost)
UNUSED: dict[str, str] = {
    "BilledCost": f"0::{MONEY}",
    "ChargeCategory": "'Usage'",
    "ChargeFrequency": "'Usage-Based'",
    "CommitmentDiscountStatus": "'Unused'",
    "ConsumedQuantity": f"null::{MONEY}",
    "ConsumedUnit": "null",
    "ContractedCost": f"0::{MONEY}",
    "EffectiveCost": f"savings_plan_total_commitment_to_date::{MONEY} "
    f"- savings_plan_used_commitment::{MONEY}",
    "ListCost": f"0::{MONEY}",
    "PricingCategory": "'Committed'",
}


def focus_sql(files: list[str]) -> str:
    """The FOCUS rows of the CUR data files `files`: one per CUR line, one per unused fee hour."""
    listed = "[" + ", ".join("'" + name.replace("'", "''") + "'" for name in files) + "]"
    used = ",\n".join(f"{rule} as {name}" for name, rule in COLUMNS.items())
    unused = ",\n".join(f"{UNUSED.get(name, rule)} as {name}" for name, rule in COLUMNS.items())
    return f"""
    with cur as (select * from read_parquet({listed}))
    select {used} from cur
    union all
    select {unused} from cur
    where {_TYPE} = 'SavingsPlanRecurringFee'
        and savings_plan_total_commitment_to_date > savings_plan_used_commitment
    """


def _csv_select(sql: str) -> str:
    """The rows as FOCUS CSV text: date-times in ISO 8601 UTC with a Z."""
    times = [name for name in COLUMNS if name.endswith(("PeriodStart", "PeriodEnd"))]
    iso = ", ".join(f"strftime({name}, '%Y-%m-%dT%H:%M:%SZ') as {name}" for name in times)
    return f"select * replace ({iso}) from ({sql})"


def write_focus(cur: Path, out_dir: Path, fmt: str, threads: int | None = None) -> dict:
    """FOCUS files of the CUR dataset `cur` under out_dir/focus, and out_dir/expected.json."""
    if fmt not in FORMATS:
        raise ValueError(f"FOCUS format {fmt!r}: choose one of {', '.join(FORMATS)}")
    data = sorted((cur / EXPORT_DIR / "data").rglob("*.parquet"))
    folder = out_dir / "focus"
    folder.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    con.execute("set enable_progress_bar = false")
    if threads:
        con.execute(f"set threads = {int(threads)}")
    written = []
    for number, path in enumerate(data, start=1):
        sql = focus_sql([str(path)])
        if fmt == "parquet":
            target = folder / f"focus-{number:05d}.parquet"
            options = "format parquet, compression snappy"
        else:
            target = folder / f"focus-{number:05d}.csv.gz"
            sql = _csv_select(sql)
            options = "format csv, header true, compression gzip"
        con.execute(f"copy ({sql}) to '{target}' ({options})")
        written.append(str(target))
    cur_expected = json.loads((cur / "expected.json").read_text(encoding="utf-8"))
    expected = _expected(con, focus_sql([str(path) for path in data]), cur_expected)
    con.close()
    expected |= {"source": "focus", "focus_format": fmt, "data_files": len(written)}
    # as bench.scale writes one beside the CUR world (bench/profile.py reads it): relative paths
    telemetry = Path("..") / cur.name / "telemetry"
    config = focus_config_text(Path("warehouse"), Path("focus"), telemetry)
    (out_dir / "runcost.toml").write_text(config, encoding="utf-8")
    (out_dir / "expected.json").write_text(json.dumps(expected, indent=2) + "\n", "utf-8")
    return expected


def _expected(con: duckdb.DuckDBPyConnection, sql: str, cur_expected: dict) -> dict:
    """The FOCUS bill's totals (exact decimals), the telemetry counts of the CUR world."""
    prefix = cur_expected["spec"].get("attempt_prefix", "")  # a world cached before prefixes
    tagged = f"json_extract_string(Tags, '$.\"{ATTEMPT_KEY}\"') like '{prefix}att-0%'"
    row = con.execute(
        f"""select count(*), sum(BilledCost), sum(EffectiveCost), sum(ListCost),
            count(*) filter (where {tagged}),
            coalesce(sum(BilledCost) filter (where {tagged}), 0)
        from ({sql})"""
    ).fetchall()[0]
    names = (
        "cost_lines", "billed_cost", "effective_cost", "list_cost", "tagged_lines",
        "tagged_billed_cost",
    )  # fmt: skip
    return expected_bill(cur_expected, names, row)


def focus_config_text(
    warehouse: Path, files: Path, telemetry: Path, memory_limit: str | None = None
) -> str:
    """A runcost.toml reading the FOCUS files, the world's telemetry, the world's EKS pool."""
    return source_config_text(
        writer="bench.focus_world: the generated world's bill as FOCUS files",
        warehouse=warehouse,
        bill=f'[focus]\nfiles = [{{ path = "{files}", name = "bench" }}]\n',
        telemetry=telemetry,
        pool=("eks-control-plane", "AmazonEKS"),
        memory_limit=memory_limit,
    )
