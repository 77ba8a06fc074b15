"""Legacy CUR (lineItem/UnblendedCost headers, or snake_case in Parquet) onto CUR 2.0 names."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pipeline.ingest.tag_keys import aws_tag_cur_key
from schemas import aws_cur2

# One entry per legacy column that has a CUR 2.0 column of its own: (legacy CSV header, CUR 2.0
# name). Legacy Parquet exports write the same columns in snake_case (line_item_unblended_cost),
# which is the CUR 2.0 name itself. Every other product/<attr> goes into the `product` map as
# <attr> in snake_case, resourceTags/<key> into `resource_tags`, costCategory/<name> into
# `cost_category`; anything else is kept in raw/ and ignored.
LEGACY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("bill/BillType", "bill_bill_type"),
    ("bill/BillingEntity", "bill_billing_entity"),
    ("bill/BillingPeriodStartDate", "bill_billing_period_start_date"),
    ("bill/BillingPeriodEndDate", "bill_billing_period_end_date"),
    ("bill/InvoiceId", "bill_invoice_id"),
    ("bill/InvoicingEntity", "bill_invoicing_entity"),
    ("bill/PayerAccountId", "bill_payer_account_id"),
    ("bill/PayerAccountName", "bill_payer_account_name"),
    ("discount/BundledDiscount", "discount_bundled_discount"),
    ("discount/TotalDiscount", "discount_total_discount"),
    ("identity/LineItemId", "identity_line_item_id"),
    ("identity/TimeInterval", "identity_time_interval"),
    ("lineItem/AvailabilityZone", "line_item_availability_zone"),
    ("lineItem/BlendedCost", "line_item_blended_cost"),
    ("lineItem/BlendedRate", "line_item_blended_rate"),
    ("lineItem/CurrencyCode", "line_item_currency_code"),
    ("lineItem/LegalEntity", "line_item_legal_entity"),
    ("lineItem/LineItemDescription", "line_item_line_item_description"),
    ("lineItem/LineItemType", "line_item_line_item_type"),
    ("lineItem/NetUnblendedCost", "line_item_net_unblended_cost"),
    ("lineItem/NetUnblendedRate", "line_item_net_unblended_rate"),
    ("lineItem/NormalizationFactor", "line_item_normalization_factor"),
    ("lineItem/NormalizedUsageAmount", "line_item_normalized_usage_amount"),
    ("lineItem/Operation", "line_item_operation"),
    ("lineItem/ProductCode", "line_item_product_code"),
    ("lineItem/ResourceId", "line_item_resource_id"),
    ("lineItem/TaxType", "line_item_tax_type"),
    ("lineItem/UnblendedCost", "line_item_unblended_cost"),
    ("lineItem/UnblendedRate", "line_item_unblended_rate"),
    ("lineItem/UsageAccountId", "line_item_usage_account_id"),
    ("lineItem/UsageAccountName", "line_item_usage_account_name"),
    ("lineItem/UsageAmount", "line_item_usage_amount"),
    ("lineItem/UsageStartDate", "line_item_usage_start_date"),
    ("lineItem/UsageEndDate", "line_item_usage_end_date"),
    ("lineItem/UsageType", "line_item_usage_type"),
    ("pricing/currency", "pricing_currency"),
    ("pricing/LeaseContractLength", "pricing_lease_contract_length"),
    ("pricing/OfferingClass", "pricing_offering_class"),
    ("pricing/publicOnDemandCost", "pricing_public_on_demand_cost"),
    ("pricing/publicOnDemandRate", "pricing_public_on_demand_rate"),
    ("pricing/PurchaseOption", "pricing_purchase_option"),
    ("pricing/RateCode", "pricing_rate_code"),
    ("pricing/RateId", "pricing_rate_id"),
    ("pricing/term", "pricing_term"),
    ("pricing/unit", "pricing_unit"),
    ("product/comment", "product_comment"),
    ("product/feeCode", "product_fee_code"),
    ("product/feeDescription", "product_fee_description"),
    ("product/fromLocation", "product_from_location"),
    ("product/fromLocationType", "product_from_location_type"),
    ("product/fromRegionCode", "product_from_region_code"),
    ("product/instanceFamily", "product_instance_family"),
    ("product/instanceType", "product_instance_type"),
    ("product/instancesku", "product_instancesku"),
    ("product/location", "product_location"),
    ("product/locationType", "product_location_type"),
    ("product/operation", "product_operation"),
    ("product/pricingUnit", "product_pricing_unit"),
    ("product/productFamily", "product_product_family"),
    ("product/regionCode", "product_region_code"),
    ("product/servicecode", "product_servicecode"),
    ("product/sku", "product_sku"),
    ("product/toLocation", "product_to_location"),
    ("product/toLocationType", "product_to_location_type"),
    ("product/toRegionCode", "product_to_region_code"),
    ("product/usagetype", "product_usagetype"),
    ("reservation/AmortizedUpfrontCostForUsage", "reservation_amortized_upfront_cost_for_usage"),
    (
        "reservation/AmortizedUpfrontFeeForBillingPeriod",
        "reservation_amortized_upfront_fee_for_billing_period",
    ),
    ("reservation/AvailabilityZone", "reservation_availability_zone"),
    ("reservation/EffectiveCost", "reservation_effective_cost"),
    ("reservation/EndTime", "reservation_end_time"),
    ("reservation/ModificationStatus", "reservation_modification_status"),
    (
        "reservation/NetAmortizedUpfrontCostForUsage",
        "reservation_net_amortized_upfront_cost_for_usage",
    ),
    (
        "reservation/NetAmortizedUpfrontFeeForBillingPeriod",
        "reservation_net_amortized_upfront_fee_for_billing_period",
    ),
    ("reservation/NetEffectiveCost", "reservation_net_effective_cost"),
    ("reservation/NetRecurringFeeForUsage", "reservation_net_recurring_fee_for_usage"),
    (
        "reservation/NetUnusedAmortizedUpfrontFeeForBillingPeriod",
        "reservation_net_unused_amortized_upfront_fee_for_billing_period",
    ),
    ("reservation/NetUnusedRecurringFee", "reservation_net_unused_recurring_fee"),
    ("reservation/NetUpfrontValue", "reservation_net_upfront_value"),
    ("reservation/NormalizedUnitsPerReservation", "reservation_normalized_units_per_reservation"),
    ("reservation/NumberOfReservations", "reservation_number_of_reservations"),
    ("reservation/RecurringFeeForUsage", "reservation_recurring_fee_for_usage"),
    ("reservation/ReservationARN", "reservation_reservation_a_r_n"),
    ("reservation/StartTime", "reservation_start_time"),
    ("reservation/SubscriptionId", "reservation_subscription_id"),
    ("reservation/TotalReservedNormalizedUnits", "reservation_total_reserved_normalized_units"),
    ("reservation/TotalReservedUnits", "reservation_total_reserved_units"),
    ("reservation/UnitsPerReservation", "reservation_units_per_reservation"),
    (
        "reservation/UnusedAmortizedUpfrontFeeForBillingPeriod",
        "reservation_unused_amortized_upfront_fee_for_billing_period",
    ),
    ("reservation/UnusedNormalizedUnitQuantity", "reservation_unused_normalized_unit_quantity"),
    ("reservation/UnusedQuantity", "reservation_unused_quantity"),
    ("reservation/UnusedRecurringFee", "reservation_unused_recurring_fee"),
    ("reservation/UpfrontValue", "reservation_upfront_value"),
    (
        "savingsPlan/AmortizedUpfrontCommitmentForBillingPeriod",
        "savings_plan_amortized_upfront_commitment_for_billing_period",
    ),
    ("savingsPlan/EndTime", "savings_plan_end_time"),
    ("savingsPlan/InstanceTypeFamily", "savings_plan_instance_type_family"),
    (
        "savingsPlan/NetAmortizedUpfrontCommitmentForBillingPeriod",
        "savings_plan_net_amortized_upfront_commitment_for_billing_period",
    ),
    (
        "savingsPlan/NetRecurringCommitmentForBillingPeriod",
        "savings_plan_net_recurring_commitment_for_billing_period",
    ),
    ("savingsPlan/NetSavingsPlanEffectiveCost", "savings_plan_net_savings_plan_effective_cost"),
    ("savingsPlan/OfferingType", "savings_plan_offering_type"),
    ("savingsPlan/PaymentOption", "savings_plan_payment_option"),
    ("savingsPlan/PurchaseTerm", "savings_plan_purchase_term"),
    (
        "savingsPlan/RecurringCommitmentForBillingPeriod",
        "savings_plan_recurring_commitment_for_billing_period",
    ),
    ("savingsPlan/Region", "savings_plan_region"),
    ("savingsPlan/SavingsPlanARN", "savings_plan_savings_plan_a_r_n"),
    ("savingsPlan/SavingsPlanEffectiveCost", "savings_plan_savings_plan_effective_cost"),
    ("savingsPlan/SavingsPlanRate", "savings_plan_savings_plan_rate"),
    ("savingsPlan/StartTime", "savings_plan_start_time"),
    ("savingsPlan/TotalCommitmentToDate", "savings_plan_total_commitment_to_date"),
    ("savingsPlan/UsedCommitment", "savings_plan_used_commitment"),
    ("splitLineItem/ActualUsage", "split_line_item_actual_usage"),
    ("splitLineItem/NetSplitCost", "split_line_item_net_split_cost"),
    ("splitLineItem/NetUnusedCost", "split_line_item_net_unused_cost"),
    ("splitLineItem/ParentResourceId", "split_line_item_parent_resource_id"),
    ("splitLineItem/PublicOnDemandSplitCost", "split_line_item_public_on_demand_split_cost"),
    ("splitLineItem/PublicOnDemandUnusedCost", "split_line_item_public_on_demand_unused_cost"),
    ("splitLineItem/ReservedUsage", "split_line_item_reserved_usage"),
    ("splitLineItem/SplitCost", "split_line_item_split_cost"),
    ("splitLineItem/SplitUsage", "split_line_item_split_usage"),
    ("splitLineItem/SplitUsageRatio", "split_line_item_split_usage_ratio"),
    ("splitLineItem/UnusedCost", "split_line_item_unused_cost"),
)

LEGACY_TO_CUR2: dict[str, str] = dict(LEGACY_COLUMNS)
_CONTRACT = {name for name, _kind in aws_cur2.ALL_COLUMNS}
_NOT_WORD = re.compile(r"[^a-z0-9]")
_MAP_PREFIXES = (
    ("resourceTags/", "resource_tags_", "resource_tags"),
    ("costCategory/", "cost_category_", "cost_category"),
    ("product/", "product_", "product"),
)


@dataclass
class LegacyHeader:
    """How each column of a legacy file maps: to a CUR 2.0 column, into a map, or nowhere."""

    columns: dict[str, int] = field(default_factory=dict)  # CUR 2.0 name -> source position
    maps: dict[str, list[tuple[str, int]]] = field(default_factory=dict)  # map -> [(key, pos)]
    extras: list[str] = field(default_factory=list)  # kept in raw/, not read


def is_legacy_header(names: list[str]) -> bool:
    """Legacy CUR writes category/Name headers (CSV) or has no resource_tags map (Parquet)."""
    if any("/" in name for name in names):
        return True
    return "resource_tags" not in names and any(
        name.startswith(("resource_tags_", "product_product_name")) for name in names
    )


def snake(text: str) -> str:
    """lineItem/UnblendedCost -> line_item_unblended_cost; .../ReservationARN -> ..._a_r_n."""
    category, _, rest = text.rpartition("/")
    words = [_snake_word(part) for part in (category, rest) if part]
    return "_".join(words)


def cur_tag_key(raw: str) -> str:
    """A legacy tag column's key as CUR 2.0 writes it: user:attempt-id -> user_attempt_id."""
    prefix, sep, key = raw.partition(":")
    if not sep:
        return _snake_word(raw)
    return aws_tag_cur_key(key, aws_generated=prefix.lower() == "aws")


def map_header(names: list[str]) -> LegacyHeader:
    """Map a legacy header (CSV or Parquet names, in file order)."""
    header = LegacyHeader()
    for position, raw in enumerate(names):
        name = raw.strip()
        target = LEGACY_TO_CUR2.get(name) or (snake(name) if "/" in name else name)
        mapped = target in _CONTRACT and not target.startswith(("resource_tags_", "cost_category_"))
        if mapped and target not in header.columns:
            header.columns[target] = position
            continue
        placed = _map_entry(name)
        if placed is None:
            header.extras.append(name)
            continue
        column, key = placed
        header.maps.setdefault(column, []).append((key, position))
    for column in ("resource_tags", "product", "cost_category"):
        header.maps.setdefault(column, [])
    return header


def _map_entry(name: str) -> tuple[str, str] | None:
    for csv_prefix, parquet_prefix, column in _MAP_PREFIXES:
        if name.startswith(csv_prefix):
            rest = name[len(csv_prefix) :]
        elif name.startswith(parquet_prefix):
            rest = name[len(parquet_prefix) :]
        else:
            continue
        if not rest:
            return None
        if column == "resource_tags":
            return column, cur_tag_key(rest)
        if column == "cost_category":
            return column, rest
        return column, _snake_word(rest)
    return None


def _snake_word(text: str) -> str:
    # Each capital starts a word, as AWS's own legacy-to-Parquet names do (ReservationARN ->
    # reservation_a_r_n); runs of non-word characters become one underscore.
    spaced = re.sub(r"(?<!^)(?=[A-Z])", "_", text).lower()
    return re.sub(r"_+", "_", _NOT_WORD.sub("_", spaced)).strip("_")
