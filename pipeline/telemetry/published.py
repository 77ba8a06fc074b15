"""The published telemetry: a new delivery updates the attempts it names and keeps the others."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.telemetry.adapters import merge, table
from pipeline.warehouse.snapshots import current_snapshot

TABLES = ("attempts", "attempt_resources", "attempt_events", "experiments")


def published_telemetry(warehouse: Path) -> dict[str, pa.Table] | None:
    """The current snapshot's telemetry tables, or None before the first publish."""
    current = current_snapshot(warehouse)
    if current is None:
        return None
    folder = Path(current["snapshot"]) / "telemetry"
    tables: dict[str, pa.Table] = {}
    for name in TABLES:
        path = folder / f"{name}.parquet"
        if not path.is_file():
            return None
        rows = pq.read_table(path).to_pylist()
        if name == "attempts":
            rows = [{**row, "tags": dict(row["tags"] or [])} for row in rows]
        tables[name] = table(name, rows)
    return tables


def keep_published(warehouse: Path, delivered: dict[str, pa.Table]) -> dict[str, pa.Table]:
    """This run's telemetry over the published one: named attempts update, the others stay."""
    published = published_telemetry(warehouse)
    if published is None:
        return delivered
    return merge([("the published snapshot", published), ("this run's telemetry", delivered)])
