"""The GCP demo world on disk: the export as BigQuery extract files, telemetry, runcost.toml."""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.scenario.expected import write_expected
from pipeline.scenario.gcp_oracle import compute_gcp
from pipeline.scenario.gcp_rows import ACCOUNT, GKE, PROJECT, REGION, ZONE, GcpRow
from pipeline.scenario.gcp_world import build_gcp_world
from pipeline.scenario.oracle import OraclePool
from pipeline.scenario.telemetry_writer import write_telemetry
from schemas import gcp_billing

TABLE = "gcp_billing_export_resource_v1_01A2B3_C4D5E6_F7A8B9"
FORMATS = {"ndjson": ".json", "parquet": ".parquet"}
FILES_PER_FORMAT = 2

CONFIG = """\
# The runcost GCP demo world, written by pipeline.scenario.write_gcp_scenario; see docs/gcp.md.
[warehouse]
path = "warehouse"

[gcp]
files = ["gcp/{folder}/billing-*{suffix}"]

[telemetry]
path = "telemetry"

[attribution]
attempt_tag_keys = ["user_attempt_id"]
experiment_tag_keys = ["user_experiment_id"]

# Committed use discount fees: each hour's fee goes to the attempts running then, by GPU-seconds.
[[pools]]
name = "gcp-commitments"
selector = "resource_class = 'commitment'"
driver = "gpu_seconds"
spread = "charge_period"

# A reserved A2 nobody used: idle capacity held for the attempts running beside it.
[[pools]]
name = "gcp-unused-reservations"
selector = "resource_class = 'unused_reservation'"
driver = "gpu_seconds"
spread = "charge_period"

# The GKE cluster management fee: each hour's fee goes to the attempts running then.
[[pools]]
name = "gke-control-plane"
selector = "service_name = 'Kubernetes Engine'"
driver = "gpu_seconds"
spread = "charge_period"
"""

POOLS = [
    OraclePool(
        name="gcp-commitments",
        matches=lambda row: row.sku[1].lower().startswith("commitment"),
        driver="gpu_seconds",
        spread="charge_period",
    ),
    OraclePool(
        name="gcp-unused-reservations",
        matches=lambda row: (
            row.system_labels.get("compute.googleapis.com/is_unused_reservation") == "true"
        ),
        driver="gpu_seconds",
        spread="charge_period",
    ),
    OraclePool(
        name="gke-control-plane",
        matches=lambda row: row.service == GKE,
        driver="gpu_seconds",
        spread="charge_period",
    ),
]


# usage.unit -> usage.pricing_unit: how many of the first make one of the second, as the export
# converts (a month of storage is 730 hours in Google's prices)
_PRICING_UNITS = {
    ("seconds", "hour"): 3600,
    ("byte-seconds", "gibibyte hour"): 3600 * 2**30,
    ("byte-seconds", "gibibyte month"): 730 * 3600 * 2**30,
    ("bytes", "gibibyte"): 2**30,
}


def _in_pricing_units(amount: Any, unit: str | None, pricing_unit: str | None) -> Any:
    """usage.amount_in_pricing_units: the amount in the pricing unit, None without a known one."""
    per = _PRICING_UNITS.get((unit or "", pricing_unit or ""))
    return None if per is None or amount is None else amount / per


def export_row(row: GcpRow) -> dict[str, Any]:
    """The row as the detailed export holds it (nested records, repeated key/value labels)."""

    def pairs(values: dict[str, str]) -> list[dict[str, str]]:
        return [{"key": key, "value": value} for key, value in values.items()]

    amount, unit, pricing_unit = row.usage
    return {
        "billing_account_id": ACCOUNT,
        "service": {"id": row.service[0], "description": row.service[1]},
        "sku": {"id": row.sku[0], "description": row.sku[1]},
        "usage_start_time": row.usage_start,
        "usage_end_time": row.usage_end,
        "project": {"id": PROJECT, "number": "418273645091", "name": PROJECT, "labels": [],
                    "ancestry_numbers": "/81726354/418273645091/", "ancestors": []},
        "labels": pairs(row.labels),
        "system_labels": pairs(row.system_labels),
        "location": {"location": REGION, "country": "US", "region": REGION,
                     "zone": ZONE if row.resource_name else None},
        "tags": [],
        "transaction_type": "GOOGLE",
        "seller_name": None,
        "export_time": row.export_time,
        "cost": row.cost,
        "currency": "USD",
        "currency_conversion_rate": Decimal(1),
        "usage": {"amount": amount, "unit": unit or None,
                  "amount_in_pricing_units": _in_pricing_units(amount, unit, pricing_unit),
                  "pricing_unit": pricing_unit or None},
        "credits": [
            {"name": c.name, "amount": c.amount, "full_name": None, "id": c.name, "type": c.type}
            for c in row.credits
        ],
        "invoice": {"month": row.invoice_month, "publisher_type": "GOOGLE"},
        "cost_type": row.cost_type,
        "adjustment_info": row.adjustment,
        "cost_at_list": row.cost_at_list,
        "resource": {"name": row.resource_name, "global_name": row.global_name},
        "price": None,
        "subscription": {"instance_id": row.subscription},
        "consumption_model": None,
        "cost_at_effective_price_default": None,
        "cost_at_list_consumption_model": None,
    }  # fmt: skip


def _floats(value: Any) -> Any:
    """Decimals as the FLOAT64 the export stores (the scenario's amounts round-trip exactly)."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dict):
        return {key: _floats(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_floats(item) for item in value]
    return value


def export_table(rows: list[GcpRow]) -> pa.Table:
    """The rows as BigQuery's client returns the detailed export table in Arrow."""
    records = [_floats(export_row(row)) for row in rows]
    return pa.Table.from_pylist(records, schema=gcp_billing.arrow_schema())


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S UTC")  # BigQuery's JSON timestamp text
    if isinstance(value, dict):
        return {key: _json_value(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_json_value(item) for item in value]
    return value


def write_export(folder: Path, rows: list[GcpRow], export_format: str) -> list[Path]:
    """Write the rows as an extract job would: numbered files of NDJSON or Parquet."""
    folder.mkdir(parents=True, exist_ok=True)
    size = -(-len(rows) // FILES_PER_FORMAT)
    paths = []
    for number in range(FILES_PER_FORMAT):
        chunk = rows[number * size : (number + 1) * size]
        path = folder / f"billing-{number:012d}{FORMATS[export_format]}"
        if export_format == "parquet":
            pq.write_table(export_table(chunk), path)
        else:
            lines = [json.dumps(_json_value(_floats(export_row(row)))) for row in chunk]
            path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        paths.append(path)
    return paths


def write_gcp_scenario(out_dir: Path, seed: int = 7, export_format: str = "ndjson") -> Path:
    """Write the GCP world (export in both formats) into out_dir; runcost.toml reads one."""
    if export_format not in FORMATS:
        raise ValueError(f"export_format must be one of {', '.join(FORMATS)}")
    out_dir = Path(out_dir)
    world = build_gcp_world(seed)
    for kind in FORMATS:
        write_export(out_dir / "gcp" / kind, world.rows, kind)
    write_telemetry(out_dir / "telemetry", world.attempts, world.resources, world.experiments)
    expectation = compute_gcp(world.rows, world.attempts, world.resources, world.experiments, POOLS)
    write_expected(out_dir / "expected", expectation, world.attempts, world.experiments)
    config = out_dir / "runcost.toml"
    config.write_text(
        CONFIG.format(folder=export_format, suffix=FORMATS[export_format]), encoding="utf-8"
    )
    return config
