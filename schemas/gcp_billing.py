"""Google Cloud billing export (BigQuery standard and detailed tables): the columns runcost reads.

Names, nesting and order follow the export tables (docs/gcp.md). Types are as BigQuery's client
returns them in Arrow: STRING -> string, TIMESTAMP -> timestamp[us, UTC], FLOAT -> float64,
NUMERIC -> decimal128(38, 9), BOOLEAN -> bool, RECORD -> struct, REPEATED -> list.
"""

from __future__ import annotations

import pyarrow as pa

STRING = pa.string()
FLOAT = pa.float64()
NUMERIC = pa.decimal128(38, 9)
TIMESTAMP = pa.timestamp("us", tz="UTC")
BOOLEAN = pa.bool_()


def _record(*fields: tuple[str, pa.DataType]) -> pa.DataType:
    return pa.struct([pa.field(name, kind) for name, kind in fields])


def _repeated(*fields: tuple[str, pa.DataType]) -> pa.DataType:
    return pa.list_(_record(*fields))


KEY_VALUE = _repeated(("key", STRING), ("value", STRING))

# (column, Arrow type) of the standard export, in the table's order.
STANDARD: tuple[tuple[str, pa.DataType], ...] = (
    ("billing_account_id", STRING),
    ("service", _record(("id", STRING), ("description", STRING))),
    ("sku", _record(("id", STRING), ("description", STRING))),
    ("usage_start_time", TIMESTAMP),
    ("usage_end_time", TIMESTAMP),
    (
        "project",
        _record(
            ("id", STRING),
            ("number", STRING),
            ("name", STRING),
            ("labels", KEY_VALUE),
            ("ancestry_numbers", STRING),
            ("ancestors", _repeated(("resource_name", STRING), ("display_name", STRING))),
        ),
    ),
    ("labels", KEY_VALUE),
    ("system_labels", KEY_VALUE),
    (
        "location",
        _record(("location", STRING), ("country", STRING), ("region", STRING), ("zone", STRING)),
    ),
    (
        "tags",
        _repeated(
            ("key", STRING), ("value", STRING), ("inherited", BOOLEAN), ("namespace", STRING)
        ),
    ),
    ("transaction_type", STRING),
    ("seller_name", STRING),
    ("export_time", TIMESTAMP),
    ("cost", FLOAT),
    ("currency", STRING),
    ("currency_conversion_rate", FLOAT),
    (
        "usage",
        _record(
            ("amount", FLOAT),
            ("unit", STRING),
            ("amount_in_pricing_units", FLOAT),
            ("pricing_unit", STRING),
        ),
    ),
    (
        "credits",
        _repeated(
            ("name", STRING),
            ("amount", FLOAT),
            ("full_name", STRING),
            ("id", STRING),
            ("type", STRING),
        ),
    ),
    ("invoice", _record(("month", STRING), ("publisher_type", STRING))),
    ("cost_type", STRING),
    (
        "adjustment_info",
        _record(("id", STRING), ("description", STRING), ("mode", STRING), ("type", STRING)),
    ),
    ("cost_at_list", FLOAT),
)

# Only in the detailed (resource-level) export, or added to tables created after 2025-07-15.
DETAILED_ONLY: tuple[tuple[str, pa.DataType], ...] = (
    ("resource", _record(("name", STRING), ("global_name", STRING))),
    (
        "price",
        _record(
            ("effective_price", NUMERIC),
            ("tier_start_amount", NUMERIC),
            ("unit", STRING),
            ("pricing_unit_quantity", NUMERIC),
            ("list_price", NUMERIC),
            ("effective_price_default", NUMERIC),
            ("list_price_consumption_model", NUMERIC),
        ),
    ),
    ("subscription", _record(("instance_id", STRING))),
    (
        "consumption_model",
        _record(
            ("id", STRING), ("description", STRING), ("applied_subscription_instance_id", STRING)
        ),
    ),
    ("cost_at_effective_price_default", FLOAT),
    ("cost_at_list_consumption_model", FLOAT),
)

# Every column runcost knows, standard first (raw.gcp_billing has all of them; absent ones NULL).
DETAILED: tuple[tuple[str, pa.DataType], ...] = STANDARD + DETAILED_ONLY
TYPES: dict[str, pa.DataType] = dict(DETAILED)

# Without these a table cannot be costed or reconciled; each says how to fix its absence.
_EXPORT = "point at the Cloud Billing export table (standard or detailed usage cost)"
REQUIRED: dict[str, str] = {
    "billing_account_id": _EXPORT,
    "service": _EXPORT,
    "sku": _EXPORT,
    "usage_start_time": _EXPORT,
    "usage_end_time": _EXPORT,
    "cost": _EXPORT,
    "currency": _EXPORT,
    "credits": _EXPORT,
    "invoice": _EXPORT,
    "cost_type": _EXPORT,
}

# Leaves holding money or quantities: read as DECIMAL(38, 10) whether they arrive as FLOAT64,
# NUMERIC (decimal128) or text, always through their exact text.
DECIMAL_LEAVES = frozenset(
    {
        "cost",
        "cost_at_list",
        "currency_conversion_rate",
        "cost_at_effective_price_default",
        "cost_at_list_consumption_model",
        "credits.amount",
        "usage.amount",
        "usage.amount_in_pricing_units",
        "price.effective_price",
        "price.tier_start_amount",
        "price.pricing_unit_quantity",
        "price.list_price",
        "price.effective_price_default",
        "price.list_price_consumption_model",
    }
)

# The credit types Google documents; any other type still counts in net_cost (docs/gcp.md).
CREDIT_TYPES = (
    "SUSTAINED_USAGE_DISCOUNT",
    "COMMITTED_USAGE_DISCOUNT",
    "COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE",
    "FEE_UTILIZATION_OFFSET",
    "DISCOUNT",
    "FREE_TIER",
    "PROMOTION",
    "RESELLER_MARGIN",
    "SUBSCRIPTION_BENEFIT",
)
# Credits that make the usage price (effective_cost); the rest are discounts and payments that
# only net_cost subtracts (the split AWS makes between effective and net).
EFFECTIVE_CREDIT_TYPES = (
    "SUSTAINED_USAGE_DISCOUNT",
    "COMMITTED_USAGE_DISCOUNT",
    "COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE",
    "FEE_UTILIZATION_OFFSET",
    "FREE_TIER",
    "SUBSCRIPTION_BENEFIT",
)


def arrow_schema(columns: tuple[tuple[str, pa.DataType], ...] = DETAILED) -> pa.Schema:
    """The Arrow schema of an export with these columns (detailed by default)."""
    return pa.schema([pa.field(name, kind) for name, kind in columns])


def is_detailed(names: list[str] | tuple[str, ...]) -> bool:
    """A table with resource.name is the detailed (resource-level) export."""
    return "resource" in names
