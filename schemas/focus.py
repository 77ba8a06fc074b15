"""FOCUS 1.0-1.3 Cost and Usage columns: kinds, the version that added each, renames, required set.

Source: the FOCUS specification's column definitions and changelog (0.5 to 1.3). Kinds: `decimal`
(plain decimal text, kept exact), `datetime` (ISO 8601, UTC), `string`, `json` (a JSON object as
text). runcost requires only the columns it needs to build `normalized.cost_lines`; every other
FOCUS column is read when present and NULL when absent.
"""

from __future__ import annotations

# (column, kind, FOCUS version that introduced it under this name)
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("AllocatedMethodDetails", "json", "1.3"),
    ("AllocatedMethodId", "string", "1.3"),
    ("AllocatedResourceId", "string", "1.3"),
    ("AllocatedResourceName", "string", "1.3"),
    ("AllocatedTags", "json", "1.3"),
    ("AvailabilityZone", "string", "0.5"),
    ("BilledCost", "decimal", "0.5"),
    ("BillingAccountId", "string", "0.5"),
    ("BillingAccountName", "string", "0.5"),
    ("BillingAccountType", "string", "1.2"),
    ("BillingCurrency", "string", "0.5"),
    ("BillingPeriodEnd", "datetime", "0.5"),
    ("BillingPeriodStart", "datetime", "0.5"),
    ("CapacityReservationId", "string", "1.1"),
    ("CapacityReservationStatus", "string", "1.1"),
    ("ChargeCategory", "string", "1.0-preview"),
    ("ChargeClass", "string", "1.0"),
    ("ChargeDescription", "string", "1.0-preview"),
    ("ChargeFrequency", "string", "1.0-preview"),
    ("ChargePeriodEnd", "datetime", "0.5"),
    ("ChargePeriodStart", "datetime", "0.5"),
    ("CommitmentDiscountCategory", "string", "1.0-preview"),
    ("CommitmentDiscountId", "string", "1.0-preview"),
    ("CommitmentDiscountName", "string", "1.0-preview"),
    ("CommitmentDiscountQuantity", "decimal", "1.1"),
    ("CommitmentDiscountStatus", "string", "1.0"),
    ("CommitmentDiscountType", "string", "1.0-preview"),
    ("CommitmentDiscountUnit", "string", "1.1"),
    ("ConsumedQuantity", "decimal", "1.0"),
    ("ConsumedUnit", "string", "1.0"),
    ("ContractApplied", "json", "1.3"),
    ("ContractedCost", "decimal", "1.0"),
    ("ContractedUnitPrice", "decimal", "1.0"),
    ("EffectiveCost", "decimal", "1.0-preview"),
    ("HostProviderName", "string", "1.3"),
    ("InvoiceId", "string", "1.2"),
    ("InvoiceIssuerName", "string", "0.5"),
    ("ListCost", "decimal", "1.0-preview"),
    ("ListUnitPrice", "decimal", "1.0-preview"),
    ("PricingCategory", "string", "1.0-preview"),
    ("PricingCurrency", "string", "1.2"),
    ("PricingCurrencyContractedUnitPrice", "decimal", "1.2"),
    ("PricingCurrencyEffectiveCost", "decimal", "1.2"),
    ("PricingCurrencyListUnitPrice", "decimal", "1.2"),
    ("PricingQuantity", "decimal", "1.0-preview"),
    ("PricingUnit", "string", "1.0-preview"),
    ("ProviderName", "string", "0.5"),
    ("PublisherName", "string", "0.5"),
    ("RegionId", "string", "1.0"),
    ("RegionName", "string", "1.0"),
    ("ResourceId", "string", "0.5"),
    ("ResourceName", "string", "0.5"),
    ("ResourceType", "string", "1.0-preview"),
    ("ServiceCategory", "string", "0.5"),
    ("ServiceName", "string", "0.5"),
    ("ServiceProviderName", "string", "1.3"),
    ("ServiceSubcategory", "string", "1.1"),
    ("SkuId", "string", "1.0-preview"),
    ("SkuMeter", "string", "1.1"),
    ("SkuPriceDetails", "json", "1.1"),
    ("SkuPriceId", "string", "1.0-preview"),
    ("SubAccountId", "string", "0.5"),
    ("SubAccountName", "string", "0.5"),
    ("SubAccountType", "string", "1.2"),
    ("Tags", "json", "1.0-preview"),
)

# Provider extension columns runcost reads when present (AWS's FOCUS export writes them).
EXTENSIONS: tuple[tuple[str, str], ...] = (
    ("x_Operation", "string"),
    ("x_ServiceCode", "string"),
    ("x_UsageType", "string"),
)

# Older column ids and the current name they are read as.
RENAMES: dict[str, str] = {
    "AmortizedCost": "EffectiveCost",  # renamed in 1.0-preview
    "ChargeType": "ChargeCategory",  # renamed in 1.0-preview
    "Region": "RegionId",  # renamed in 1.0
    "UsageQuantity": "ConsumedQuantity",  # renamed in 1.0
    "UsageUnit": "ConsumedUnit",  # renamed in 1.0
}

# A column a file may lack, and the column it is then read from: 1.3 deprecates ProviderName for
# ServiceProviderName (the same entity), so a 1.3 file without ProviderName names its provider
# there. ServiceProviderName is read under its own name as well.
FALLBACKS: dict[str, str] = {"ProviderName": "ServiceProviderName"}

# Columns whose presence marks a version (the newest marker found wins).
VERSION_MARKERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("1.3", frozenset(name for name, _kind, since in COLUMNS if since == "1.3")),
    ("1.2", frozenset(name for name, _kind, since in COLUMNS if since == "1.2")),
    ("1.1", frozenset(name for name, _kind, since in COLUMNS if since == "1.1")),
    ("1.0", frozenset(name for name, _kind, since in COLUMNS if since == "1.0")),
    ("1.0-preview", frozenset({"UsageQuantity", "UsageUnit", "ChargeSubcategory"})),
    ("0.5", frozenset({"AmortizedCost", "ChargeType", "Region"})),
)
SUPPORTED_VERSIONS = ("1.0", "1.1", "1.2", "1.3")

# What runcost needs to build a cost line; each must be present (after renames) and not null.
REQUIRED: tuple[str, ...] = (
    "BilledCost",
    "EffectiveCost",
    "ListCost",
    "BillingAccountId",
    "BillingCurrency",
    "BillingPeriodStart",
    "BillingPeriodEnd",
    "ChargePeriodStart",
    "ChargePeriodEnd",
    "ChargeCategory",
    "ProviderName",
    "ServiceName",
)
NOT_NULL: tuple[str, ...] = tuple(name for name in REQUIRED if name != "ServiceName")

# A file is taken for FOCUS when it has at least this many of the columns every version shares.
CORE: frozenset[str] = frozenset(name for name, _kind, since in COLUMNS if since == "0.5")
RECOGNISED_AT = 4

KINDS: dict[str, str] = {name: kind for name, kind, _since in COLUMNS} | dict(EXTENSIONS)

# Raw Parquet types (DuckDB): money at scale 18 keeps every digit real files carry (they write
# up to 11-15 decimals); staging casts to the house DECIMAL(38, 10).
DUCKDB_TYPES: dict[str, str] = {
    "decimal": "decimal(38, 18)",
    "datetime": "timestamp with time zone",
    "string": "varchar",
    "json": "varchar",
}
