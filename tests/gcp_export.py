"""The Cloud Billing export table schemas (standard and detailed) and export rows for tests."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any


def _record(name: str, *children: str | dict[str, Any], mode: str = "NULLABLE") -> dict[str, Any]:
    fields = [
        child if isinstance(child, dict) else {"name": child, "type": "STRING"}
        for child in children
    ]
    return {"name": name, "type": "RECORD", "mode": mode, "fields": fields}


def _key_values(name: str) -> dict[str, Any]:
    return _record(name, "key", "value", mode="REPEATED")


def _scalar(name: str, kind: str = "STRING") -> dict[str, Any]:
    return {"name": name, "type": kind, "mode": "NULLABLE"}


# Column order and types as the export documents them (Google's "Structure of Detailed data
# export"): both exports share these; the detailed one adds `resource` (and `price` etc. over time).
STANDARD_SCHEMA: list[dict[str, Any]] = [
    _scalar("billing_account_id"),
    _record("service", "id", "description"),
    _record("sku", "id", "description"),
    _scalar("usage_start_time", "TIMESTAMP"),
    _scalar("usage_end_time", "TIMESTAMP"),
    _record(
        "project",
        "id",
        "number",
        "name",
        _key_values("labels"),
        "ancestry_numbers",
        _record("ancestors", "resource_name", "display_name", mode="REPEATED"),
    ),
    _key_values("labels"),
    _key_values("system_labels"),
    _record("location", "location", "country", "region", "zone"),
    _record("tags", "key", "value", _scalar("inherited", "BOOLEAN"), "namespace", mode="REPEATED"),
    _scalar("transaction_type"),
    _scalar("seller_name"),
    _scalar("export_time", "TIMESTAMP"),
    _scalar("cost", "FLOAT"),
    _scalar("currency"),
    _scalar("currency_conversion_rate", "FLOAT"),
    _record(
        "usage",
        _scalar("amount", "FLOAT"),
        "unit",
        _scalar("amount_in_pricing_units", "FLOAT"),
        "pricing_unit",
    ),
    _record(
        "credits", "name", _scalar("amount", "FLOAT"), "full_name", "id", "type", mode="REPEATED"
    ),
    _record("invoice", "month", "publisher_type"),
    _scalar("cost_type"),
    _record("adjustment_info", "id", "description", "mode", "type"),
    _scalar("cost_at_list", "FLOAT"),
]
DETAILED_SCHEMA: list[dict[str, Any]] = [
    *STANDARD_SCHEMA[:9],
    _record("resource", "name", "global_name"),
    *STANDARD_SCHEMA[9:],
    _record(
        "price",
        _scalar("effective_price", "NUMERIC"),
        _scalar("tier_start_amount", "NUMERIC"),
        "unit",
        _scalar("pricing_unit_quantity", "NUMERIC"),
    ),
    _record("subscription", "instance_id"),
]

ACCOUNT = "01338E_BE3FD6_363B4C"
STANDARD_TABLE = f"billing-proj.billing_export.gcp_billing_export_v1_{ACCOUNT}"
DETAILED_TABLE = f"billing-proj.billing_export.gcp_billing_export_resource_v1_{ACCOUNT}"


def without(schema: list[dict[str, Any]], *names: str) -> list[dict[str, Any]]:
    """The schema less some top-level columns."""
    return [item for item in schema if item["name"] not in names]


def export_row(
    day: date,
    hour: int,
    cost: str,
    *,
    sku: str = "N1 Predefined Instance Core running in Americas",
    resource: str | None = "trainer-1",
    labels: dict[str, str] | None = None,
    credits: list[tuple[str, str]] = (),  # (type, amount)
    exported_after: timedelta = timedelta(hours=5),
) -> dict[str, Any]:
    """One hourly export row, nested like the table (repeated records as lists of dicts)."""
    start = datetime(day.year, day.month, day.day, hour, tzinfo=UTC)
    return {
        "billing_account_id": ACCOUNT.replace("_", "-"),
        "service": {"id": "6F81-5844-456A", "description": "Compute Engine"},
        "sku": {"id": "2E27-4F75-95CD", "description": sku},
        "usage_start_time": start,
        "usage_end_time": start + timedelta(hours=1),
        "project": {
            "id": "ml-training",
            "number": "204187533293",
            "name": "ml-training",
            "labels": [{"key": "team", "value": "research"}],
            "ancestry_numbers": "/111/222/",
            "ancestors": [{"resource_name": "projects/204187533293", "display_name": "ml"}],
        },
        "labels": [{"key": key, "value": value} for key, value in (labels or {}).items()],
        "system_labels": [{"key": "compute.googleapis.com/machine_spec", "value": "n1-standard-8"}],
        "location": {"location": "us-central1", "country": "US", "region": "us-central1"},
        "resource": (
            None
            if resource is None
            else {
                "name": resource,
                "global_name": f"//compute.googleapis.com/projects/ml-training/zones/"
                f"us-central1-a/instances/{resource}",
            }
        ),
        "tags": [],
        "transaction_type": "GOOGLE",
        "export_time": start + timedelta(hours=1) + exported_after,
        "cost": cost,
        "currency": "USD",
        "currency_conversion_rate": 1.0,
        "usage": {
            "amount": 3600.0,
            "unit": "seconds",
            "amount_in_pricing_units": 1.0,
            "pricing_unit": "hour",
        },
        "credits": [
            {"name": kind, "amount": amount, "full_name": None, "id": kind, "type": kind}
            for kind, amount in credits
        ],
        "invoice": {"month": f"{day:%Y%m}", "publisher_type": "GOOGLE"},
        "cost_type": "regular",
        "adjustment_info": None,
        "cost_at_list": cost,
        "price": {
            "effective_price": "0.031611",
            "tier_start_amount": "0",
            "unit": "hour",
            "pricing_unit_quantity": "1",
        },
        "subscription": None,
    }
