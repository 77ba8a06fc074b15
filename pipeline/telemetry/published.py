"""The published telemetry: a new delivery updates the attempts it names and keeps the others."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.telemetry.canonical import arrow_schema
from pipeline.telemetry.merge import TABLES, canonical, merge
from pipeline.warehouse.snapshots import current_snapshot


class PublishedTable:
    """One telemetry table of the current snapshot, read as the merge needs it (merge.Deferred):
    a delivery that repeats every published attempt keeps none of its rows, so only its key
    columns are read."""

    def __init__(self, path: Path, name: str) -> None:
        self.name, self.file = name, pq.ParquetFile(path)
        self.num_rows = self.file.metadata.num_rows

    def column(self, name: str) -> pa.ChunkedArray:
        """One canonical column (NULL in a snapshot published before it existed)."""
        field = arrow_schema(self.name).field(name)
        if name not in self.file.schema_arrow.names:
            return pa.chunked_array([pa.nulls(self.num_rows, field.type)])
        return self.file.read(columns=[name]).column(name).cast(field.type)

    def read(self) -> pa.Table:
        return canonical(self.file.read(), self.name)


def published_telemetry(warehouse: Path) -> dict[str, PublishedTable] | None:
    """The current snapshot's telemetry tables, or None before the first publish."""
    current = current_snapshot(warehouse)
    if current is None:
        return None
    folder = Path(current["snapshot"]) / "telemetry"
    paths = {name: folder / f"{name}.parquet" for name in TABLES}
    if not all(path.is_file() for path in paths.values()):
        return None
    return {name: PublishedTable(path, name) for name, path in paths.items()}


def keep_published(warehouse: Path, delivered: dict[str, pa.Table]) -> dict[str, pa.Table]:
    """This run's telemetry over the published one: named attempts update, the others stay."""
    published = published_telemetry(warehouse)
    if published is None:
        return delivered
    merged = merge([("the published snapshot", published), ("this run's telemetry", delivered)])
    usage = delivered.get("gpu_usage", arrow_schema("gpu_usage").empty_table())
    folder = Path(current_snapshot(warehouse)["snapshot"]) / "telemetry"  # type: ignore[index]
    merged["gpu_usage"] = kept_usage(folder / "gpu_usage.parquet", usage, merged["attempts"])
    return merged


def kept_usage(path: Path, measured: pa.Table, attempts: pa.Table) -> pa.Table:
    """This run's gpu_usage, and the published rows of the attempts it has no sample of: an
    attempt measured before keeps its windows when Prometheus has since dropped its samples."""
    if not path.is_file():
        return measured
    published = pq.read_table(path).cast(arrow_schema("gpu_usage"))
    sampled = pc.filter(
        measured.column("attempt_id"), pc.not_equal(measured.column("state"), "unsampled")
    )
    ids = published.column("attempt_id")
    keep = pc.and_(
        pc.invert(pc.is_in(ids, value_set=pc.unique(sampled))),
        pc.is_in(ids, value_set=attempts.column("attempt_id")),
    )
    kept = published.filter(keep)
    # an attempt this run found no sample of, and the snapshot has windows of, keeps those
    replaced = pc.is_in(
        measured.column("attempt_id"), value_set=pc.unique(kept.column("attempt_id"))
    )
    return pa.concat_tables([kept, measured.filter(pc.invert(replaced))])
