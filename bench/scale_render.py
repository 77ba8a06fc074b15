"""The large benchmark world's semantic rows as the 125 CUR 2.0 columns, and their totals."""

from __future__ import annotations

from bench.scale_sql import ScaleSpec
from schemas.aws_cur2 import COLUMNS


def _money(column: str) -> str:
    return f"({column}) / 1000000.0"


def _render_columns(spec: ScaleSpec) -> dict[str, str]:
    """CUR 2.0 column -> SQL over the semantic columns; columns not named here are empty."""
    start = f"timestamptz '{spec.start}'"
    iso = "'%Y-%m-%dT%H:%M:%SZ'"
    family = (
        "case product_code when 'AmazonS3' then 'Storage' when 'AmazonEKS' then 'Compute' "
        "when 'AmazonCloudWatch' then 'Metric' else case when usage_type like 'BoxUsage%' "
        "then 'Compute Instance' when usage_type like 'EBS%' then 'Storage' "
        "else 'Data Transfer' end end"
    )
    tags = (
        "map_from_entries(list_filter(["
        "{'key': 'user_attempt_id', 'value': attempt_tag}, "
        "{'key': 'user_env', 'value': 'prod'}, "
        "{'key': 'user_experiment_id', 'value': experiment_tag}, "
        "{'key': 'user_team', 'value': team}], lambda entry: entry.value is not null))"
    )
    # a closed month: AWS writes the invoice id on every line once the month is invoiced
    invoice = {"bill_invoice_id": f"'{spec.invoice_id}'"} if spec.invoice_id else {}
    return invoice | {
        "bill_bill_type": "'Anniversary'",
        "bill_billing_entity": "'AWS'",
        "bill_billing_period_start_date": start,
        "bill_billing_period_end_date": f"{start} + to_hours({spec.hours})",
        "bill_invoicing_entity": "'Amazon Web Services, Inc.'",
        "bill_payer_account_id": "'100000000000'",
        "bill_payer_account_name": "'runcost-bench-payer'",
        "cost_category": "map(['project'], ['ml-platform'])",
        "identity_line_item_id": "printf('%016x', (i * 2654435761) % 2305843009213693951)",
        "identity_time_interval": f"strftime(usage_start, {iso}) || '/' || "
        f"strftime(usage_end, {iso})",
        "line_item_availability_zone": "availability_zone",
        "line_item_blended_cost": _money("unblended_micro"),
        "line_item_currency_code": "'USD'",
        "line_item_legal_entity": "'Amazon Web Services, Inc.'",
        "line_item_line_item_description": "line_type || ' ' || usage_type",
        "line_item_line_item_type": "line_type",
        "line_item_net_unblended_cost": _money("net_unblended_micro"),
        "line_item_operation": "operation",
        "line_item_product_code": "product_code",
        "line_item_resource_id": "resource_id",
        "line_item_unblended_cost": _money("unblended_micro"),
        "line_item_usage_account_id": "printf('%012d', 200000000000 + account)",
        "line_item_usage_account_name": "'ml-account-' || account",
        "line_item_usage_amount": "usage_amount",
        "line_item_usage_start_date": "usage_start",
        "line_item_usage_end_date": "usage_end",
        "line_item_usage_type": "usage_type",
        "pricing_currency": "'USD'",
        "pricing_public_on_demand_cost": _money("on_demand_micro"),
        "pricing_term": "case when line_type = 'Tax' then '' else 'OnDemand' end",
        "pricing_unit": "pricing_unit",
        "product": "map(['product_family', 'region', 'servicecode', 'usagetype'], "
        f"[{family}, 'us-east-1', product_code, usage_type])",
        "product_instance_type": "instance_type",
        "product_location": "'US East (N. Virginia)'",
        "product_location_type": "'AWS Region'",
        "product_operation": "operation",
        "product_pricing_unit": "pricing_unit",
        "product_product_family": family,
        "product_region_code": "'us-east-1'",
        "product_servicecode": "product_code",
        "product_sku": "upper(left(md5(product_code || usage_type), 16))",
        "product_usagetype": "usage_type",
        "resource_tags": tags,
        "savings_plan_savings_plan_a_r_n": "sp_arn",
        "savings_plan_savings_plan_effective_cost": _money("sp_effective_micro"),
        "savings_plan_net_savings_plan_effective_cost": _money("sp_net_effective_micro"),
        "savings_plan_total_commitment_to_date": _money("sp_commitment_micro"),
        "savings_plan_used_commitment": _money("sp_used_micro"),
        "savings_plan_recurring_commitment_for_billing_period": _money("sp_commitment_micro"),
    }


def render_sql(semantic: str, spec: ScaleSpec) -> str:
    """The 125 CUR 2.0 columns, in export order, over a query of semantic columns."""
    given = _render_columns(spec)
    empty = {"string": "''", "double": "null::double", "timestamp": "null::timestamptz"}
    empty |= {"map_string": "map()::map(varchar, varchar)", "map_double": "null"}
    select = ",\n".join(f"{given.get(name, empty[kind])} as {name}" for name, kind in COLUMNS)
    return f"select\n{select}\nfrom ({semantic}) as semantic"


def expected_sql(semantic: str, spec: ScaleSpec) -> str:
    """The bill per basis in micro-USD, from the generator's own integer amounts."""
    attempts = f"'{spec.attempt_prefix}att-0%'"  # tags of attempts the telemetry holds
    effective = (
        "case line_type when 'SavingsPlanCoveredUsage' then sp_effective_micro "
        "when 'SavingsPlanRecurringFee' then sp_commitment_micro - sp_used_micro "
        "when 'SavingsPlanNegation' then 0 else unblended_micro end"
    )
    net = (
        "case line_type when 'SavingsPlanCoveredUsage' "
        "then coalesce(sp_net_effective_micro, sp_effective_micro) "
        "when 'SavingsPlanRecurringFee' then sp_commitment_micro - sp_used_micro "
        "when 'SavingsPlanNegation' then 0 else coalesce(net_unblended_micro, unblended_micro) end"
    )
    return f"""
    select count(*)::bigint, sum(unblended_micro)::hugeint,
        sum(case when line_type = 'SavingsPlanNegation' then 0
                 else coalesce(on_demand_micro, 0) end)::hugeint,
        sum({effective})::hugeint, sum({net})::hugeint,
        count(*) filter (where attempt_tag like {attempts})::bigint,
        coalesce(sum(unblended_micro) filter (where attempt_tag like {attempts}), 0)::hugeint
    from ({semantic}) as semantic
    """
