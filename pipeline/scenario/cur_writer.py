"""CUR 2.0 line items written as the export writes them: 125 columns of Parquet plus a manifest."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.ingest.aws.manifest import write_manifest
from pipeline.scenario.catalog import INSTANCES, LOCATION, product_attributes
from schemas.aws_cur2 import COLUMNS, arrow_schema

Money = Decimal | int | float | str
MONEY_PLACES = Decimal("0.000001")
MANIFEST_BUCKET = "runcost-demo-billing"
_MANIFEST_TYPES = {
    "string": "string",
    "double": "double",
    "timestamp": "timestamp",
    "map_string": "map<string,string>",
    "map_double": "map<string,double>",
}


def money(value: Money) -> Decimal:
    """Money as written: a Decimal of at most 6 places, so DECIMAL(38,10) casts are exact."""
    return Decimal(str(value)).quantize(MONEY_PLACES)


def period_bounds(billing_period: str) -> tuple[datetime, datetime]:
    """[start, end) of a billing period given as YYYY-MM, in UTC."""
    start = datetime.strptime(billing_period + "-01", "%Y-%m-%d").replace(tzinfo=UTC)
    end = (start + timedelta(days=32)).replace(day=1)
    return start, end


@dataclass
class CurLine:
    """One CUR 2.0 line item; unset money is NULL, unset strings are empty, as in real exports."""

    line_item_type: str = "Usage"
    usage_start: datetime = datetime(2026, 10, 1, tzinfo=UTC)
    usage_end: datetime = datetime(2026, 10, 1, 1, tzinfo=UTC)
    product_code: str = "AmazonEC2"
    usage_type: str = ""
    operation: str = ""
    resource_id: str = ""
    usage_amount: Decimal | float = Decimal(0)
    pricing_unit: str = "Hrs"
    pricing_term: str = "OnDemand"
    unblended_rate: Decimal | None = None
    unblended_cost: Money = Decimal(0)
    net_unblended_cost: Money | None = None
    public_on_demand_rate: Decimal | None = None
    public_on_demand_cost: Money | None = None
    savings_plan_arn: str = ""
    savings_plan_rate: Money | None = None
    savings_plan_effective_cost: Money | None = None
    savings_plan_net_effective_cost: Money | None = None
    savings_plan_total_commitment_to_date: Money | None = None
    savings_plan_used_commitment: Money | None = None
    savings_plan_recurring_commitment: Money | None = None
    reservation_arn: str = ""
    reservation_effective_cost: Money | None = None
    reservation_net_effective_cost: Money | None = None
    reservation_unused_amortized_upfront_fee: Money | None = None
    reservation_net_unused_amortized_upfront_fee: Money | None = None
    reservation_unused_recurring_fee: Money | None = None
    reservation_net_unused_recurring_fee: Money | None = None
    resource_tags: dict[str, str] = field(default_factory=dict)
    cost_category: dict[str, str] = field(default_factory=dict)
    billing_period: str = "2026-10"
    payer_account_id: str = "111111111111"
    usage_account_id: str = "222222222222"
    currency: str = "USD"
    invoice_id: str = ""
    description: str = ""
    region: str = "us-east-1"
    availability_zone: str = ""
    instance_type: str = ""
    product_family: str = ""
    product: dict[str, str] = field(default_factory=dict)  # extra keys of the product map
    tax_type: str = ""
    columns: dict[str, Any] = field(default_factory=dict)  # any other column, by its CUR name


def write_cur_parquet(path: Path, lines: list[CurLine]) -> None:
    """Write lines as one snappy Parquet file with all 125 columns of the CUR 2.0 export."""
    rows = [_row(line, index) for index, line in enumerate(lines, start=1)]
    table = pa.Table.from_pylist(rows, schema=arrow_schema())
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="snappy")


def write_cur_delivery(
    export_root: Path,
    export_name: str,
    billing_period: str,
    lines: list[CurLine],
    execution_id: str,
    files: int = 1,
) -> list[Path]:
    """Write one delivery in the Data Exports layout (data files, then the manifest last)."""
    partition = f"BILLING_PERIOD={billing_period}"
    size = -(-len(lines) // files) if lines else 0
    keys: list[str] = []
    paths: list[Path] = []
    for number in range(1, files + 1):
        key = f"data/{partition}/{export_name}-{number:05d}.snappy.parquet"
        chunk = lines[(number - 1) * size : number * size]
        write_cur_parquet(export_root / key, chunk)
        keys.append(key)
        paths.append(export_root / key)
    manifest = export_root / "metadata" / partition / f"{export_name}-Manifest.json"
    write_manifest(
        manifest,
        export_name=export_name,
        bucket=MANIFEST_BUCKET,
        prefix=f"exports/{export_name}",
        billing_period=billing_period,
        execution_id=execution_id,
        data_keys=keys,
        columns=[(name, _MANIFEST_TYPES[kind]) for name, kind in COLUMNS],
    )
    return [*paths, manifest]


def _money_or_none(value: Money | None) -> float | None:
    return None if value is None else float(money(value))


def _rate(value: Money | None) -> str:
    return "" if value is None else format(Decimal(str(value)).normalize(), "f")


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _line_item_id(line: CurLine, index: int) -> str:
    seed = f"{index}|{line.line_item_type}|{line.resource_id}|{line.usage_type}|{line.usage_start}"
    digest = hashlib.sha256(seed.encode()).digest()
    return base64.b32encode(digest).decode().lower().rstrip("=")[:52]


def _sku(line: CurLine) -> str:
    digest = hashlib.sha256(f"{line.product_code}|{line.usage_type}".encode()).digest()
    return base64.b32encode(digest).decode()[:16]


def _row(line: CurLine, index: int) -> dict[str, Any]:
    period_start, period_end = period_bounds(line.billing_period)
    spec = INSTANCES.get(line.instance_type)
    usage = float(line.usage_amount)
    factor = spec.normalization_factor if spec else None
    product = product_attributes(line.product_code, line.instance_type, line.region)
    product.update(line.product)
    unblended = _money_or_none(line.unblended_cost)
    sp_row = bool(line.savings_plan_arn)
    row: dict[str, Any] = {name: ("" if kind == "string" else None) for name, kind in COLUMNS}
    row.update(
        {
            "bill_bill_type": "Anniversary",
            "bill_billing_entity": "AWS",
            "bill_billing_period_start_date": period_start,
            "bill_billing_period_end_date": period_end,
            "bill_invoice_id": line.invoice_id,
            "bill_invoicing_entity": "Amazon Web Services, Inc.",
            "bill_payer_account_id": line.payer_account_id,
            "bill_payer_account_name": "runcost-demo-payer",
            "cost_category": sorted(line.cost_category.items()),
            "discount": [],
            "identity_line_item_id": _line_item_id(line, index),
            "identity_time_interval": f"{_stamp(line.usage_start)}/{_stamp(line.usage_end)}",
            "line_item_availability_zone": line.availability_zone,
            "line_item_blended_cost": unblended,
            "line_item_blended_rate": _rate(line.unblended_rate),
            "line_item_currency_code": line.currency,
            "line_item_legal_entity": "Amazon Web Services, Inc.",
            "line_item_line_item_description": line.description,
            "line_item_line_item_type": line.line_item_type,
            "line_item_net_unblended_cost": _money_or_none(line.net_unblended_cost),
            "line_item_normalization_factor": float(factor) if factor else None,
            "line_item_normalized_usage_amount": float(factor) * usage if factor else None,
            "line_item_operation": line.operation,
            "line_item_product_code": line.product_code,
            "line_item_resource_id": line.resource_id,
            "line_item_tax_type": line.tax_type,
            "line_item_unblended_cost": unblended,
            "line_item_unblended_rate": _rate(line.unblended_rate),
            "line_item_usage_account_id": line.usage_account_id,
            "line_item_usage_account_name": "runcost-demo-ml",
            "line_item_usage_amount": usage,
            "line_item_usage_start_date": line.usage_start,
            "line_item_usage_end_date": line.usage_end,
            "line_item_usage_type": line.usage_type,
            "pricing_currency": line.currency,
            "pricing_public_on_demand_cost": _money_or_none(line.public_on_demand_cost),
            "pricing_public_on_demand_rate": _rate(line.public_on_demand_rate),
            "pricing_term": line.pricing_term,
            "pricing_unit": line.pricing_unit,
            "product": sorted(product.items()),
            "product_instance_family": "GPU instance" if spec and spec.gpu else "",
            "product_instance_type": line.instance_type,
            "product_location": LOCATION if line.region else "",
            "product_location_type": "AWS Region" if line.region else "",
            "product_operation": line.operation,
            "product_pricing_unit": line.pricing_unit,
            "product_product_family": line.product_family,
            "product_region_code": line.region,
            "product_servicecode": line.product_code,
            "product_sku": _sku(line) if line.usage_type else "",
            "product_usagetype": line.usage_type,
            "reservation_effective_cost": _money_or_none(line.reservation_effective_cost),
            "reservation_net_effective_cost": _money_or_none(line.reservation_net_effective_cost),
            "reservation_reservation_a_r_n": line.reservation_arn,
            "reservation_unused_amortized_upfront_fee_for_billing_period": _money_or_none(
                line.reservation_unused_amortized_upfront_fee
            ),
            "reservation_net_unused_amortized_upfront_fee_for_billing_period": _money_or_none(
                line.reservation_net_unused_amortized_upfront_fee
            ),
            "reservation_unused_recurring_fee": _money_or_none(
                line.reservation_unused_recurring_fee
            ),
            "reservation_net_unused_recurring_fee": _money_or_none(
                line.reservation_net_unused_recurring_fee
            ),
            "resource_tags": sorted(line.resource_tags.items()),
            "savings_plan_savings_plan_a_r_n": line.savings_plan_arn,
            "savings_plan_savings_plan_rate": _money_or_none(line.savings_plan_rate),
            "savings_plan_savings_plan_effective_cost": _money_or_none(
                line.savings_plan_effective_cost
            ),
            "savings_plan_net_savings_plan_effective_cost": _money_or_none(
                line.savings_plan_net_effective_cost
            ),
            "savings_plan_total_commitment_to_date": _money_or_none(
                line.savings_plan_total_commitment_to_date
            ),
            "savings_plan_used_commitment": _money_or_none(line.savings_plan_used_commitment),
            "savings_plan_recurring_commitment_for_billing_period": _money_or_none(
                line.savings_plan_recurring_commitment
            ),
            "savings_plan_amortized_upfront_commitment_for_billing_period": 0.0 if sp_row else None,
        }
    )
    unknown = set(line.columns) - set(row)
    if unknown:
        raise ValueError(f"CurLine.columns names unknown CUR 2.0 columns: {sorted(unknown)}")
    row.update(line.columns)
    return row
