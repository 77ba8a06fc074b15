"""Hand-made Google Cloud billing export rows for model tests, written as a raw/ delivery."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.warehouse.raw_store import Delivery
from schemas import gcp_billing

DAY = "2026-10-12"  # the partition day of the rows and of write_gcp's delivery


def gcp_row(**overrides: Any) -> dict[str, Any]:
    """One detailed-export row: an hour of N1 core usage on 2026-10-12 10:00 UTC, cost 0.

    ``labels`` and ``system_labels`` may be given as dicts; ``resource`` as a name string.
    """
    row: dict[str, Any] = dict.fromkeys(gcp_billing.TYPES)
    row.update(
        billing_account_id="01A2B3-C4D5E6-F7A8B9",
        service={"id": "6F81-5844-456A", "description": "Compute Engine"},
        sku={
            "id": "2E27-4F75-95CD",
            "description": "N1 Predefined Instance Core running in Americas",
        },
        usage_start_time=datetime(2026, 10, 12, 10, tzinfo=UTC),
        usage_end_time=datetime(2026, 10, 12, 11, tzinfo=UTC),
        project={"id": "ml-prod", "name": "ml-prod"},
        export_time=datetime(2026, 10, 12, 16, tzinfo=UTC),
        cost=0.0,
        currency="USD",
        credits=[],
        invoice={"month": "202610"},
        cost_type="regular",
        labels=[],
        system_labels=[],
    )
    unknown = set(overrides) - set(gcp_billing.TYPES)
    if unknown:
        raise KeyError(f"not billing export columns: {sorted(unknown)}")
    row.update(overrides)
    for name in ("labels", "system_labels"):
        if isinstance(row[name], Mapping):
            row[name] = [{"key": key, "value": value} for key, value in row[name].items()]
    if isinstance(row["resource"], str):
        row["resource"] = {"name": row["resource"], "global_name": f"//compute/{row['resource']}"}
    return row


def credit(kind: str, amount: float) -> dict[str, Any]:
    """One entry of a row's credits array."""
    return {"name": kind.title(), "amount": amount, "full_name": None, "id": kind, "type": kind}


def write_gcp(
    folder: Path,
    rows: Sequence[Mapping[str, Any]],
    schema: pa.Schema | None = None,
    day: str = DAY,
) -> Delivery:
    """Write rows as one Parquet file of a provider="gcp" delivery (detailed schema by default)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "part-000.parquet"
    schema = schema or gcp_billing.arrow_schema()
    records = [{name: row.get(name) for name in schema.names} for row in rows]
    pq.write_table(pa.Table.from_pylist(records, schema=schema), path)
    return Delivery("gcp", "billing", day, f"gcp-{folder.name}", folder, (path,), True)
