"""The published telemetry: a new delivery updates the attempts it names and keeps the others."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.telemetry.merge import TABLES, canonical, merge
from pipeline.warehouse.snapshots import current_snapshot


def published_telemetry(warehouse: Path) -> dict[str, pa.Table] | None:
    """The current snapshot's telemetry tables, or None before the first publish."""
    current = current_snapshot(warehouse)
    if current is None:
        return None
    folder = Path(current["snapshot"]) / "telemetry"
    paths = {name: folder / f"{name}.parquet" for name in TABLES}
    if not all(path.is_file() for path in paths.values()):
        return None
    return {name: canonical(pq.read_table(path), name) for name, path in paths.items()}


def keep_published(warehouse: Path, delivered: dict[str, pa.Table]) -> dict[str, pa.Table]:
    """This run's telemetry over the published one: named attempts update, the others stay."""
    published = published_telemetry(warehouse)
    if published is None:
        return delivered
    return merge([("the published snapshot", published), ("this run's telemetry", delivered)])
