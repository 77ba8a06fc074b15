"""A night with nothing new, decided from the fingerprints before any build.

The run that serves the current snapshot (the one that published it, or the latest that found
nothing new since) recorded its inputs' fingerprints. When this run's equal them, the current
snapshot is what a build would publish again: the run records ``unchanged`` without building,
checking or hashing any table. Anything that could make the answer differ keeps the build: a
damaged or hand-edited current snapshot, a record without fingerprints, ``--full-refresh``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline.run.fingerprints import Fingerprints
from pipeline.run.record import read_json
from pipeline.warehouse.publish import snapshot_hash
from pipeline.warehouse.snapshots import (
    current_snapshot,
    database_snapshot,
    snapshot_record,
)

# what the serving run recorded about the snapshot, carried into this run's record as it is
CARRIED = ("code_hash", "checks", "totals", "periods", "estimates")


@dataclass(frozen=True)
class Unchanged:
    """The current snapshot, served again: its id, folder, tables' rows and content hashes."""

    run_id: str
    folder: Path
    rows: dict[str, int]
    hashes: dict[str, str]
    carried: dict[str, object]

    @property
    def content_hash(self) -> str:
        return snapshot_hash(self.hashes)


def serving_record(warehouse: Path) -> dict | None:
    """The record of the run that serves the current snapshot: the newest run that published
    it or found nothing new since it was published."""
    current = current_snapshot(warehouse)
    runs = warehouse / "runs"
    if current is None or not runs.is_dir():
        return None
    for folder in sorted(runs.iterdir(), reverse=True):  # run ids sort by start time
        record = read_json(folder / "manifest.json")
        status = record.get("status")
        served = record.get("unchanged_from") if status == "unchanged" else record.get("run_id")
        serves = status in ("published", "unchanged") and not record.get("catalog")
        if serves and served == current["run_id"]:
            return record
    return None


def previous_fingerprints(record: dict | None) -> Fingerprints | None:
    inputs = (record or {}).get("inputs")
    if not isinstance(inputs, dict):
        return None
    return Fingerprints.from_record(inputs.get("fingerprints"))


def nothing_new(warehouse: Path, now: Fingerprints, record: dict | None) -> Unchanged | None:
    """The current snapshot when ``now`` equals the serving run's fingerprints and the snapshot
    is served as published (runcost.duckdb reads it, snapshot.json whole); else None."""
    previous = previous_fingerprints(record)
    if record is None or previous is None or now.moved(previous):
        return None
    current = current_snapshot(warehouse)
    if current is None:
        return None
    folder = warehouse / "snapshots" / current["run_id"]
    # a hand-edited or replaced database is published again, as a build would find
    if database_snapshot(warehouse) != (current["run_id"], str(folder)):
        return None
    snapshot = snapshot_record(folder)
    if snapshot is None:
        return None
    tables = snapshot.get("tables", {})
    views = snapshot.get("views", {})
    hashes = {name: str(entry["content_hash"]) for name, entry in {**tables, **views}.items()}
    # snapshot.json lists what the serving run published, or the snapshot is built again
    if hashes != record.get("content_hashes"):
        return None
    return Unchanged(
        run_id=current["run_id"],
        folder=folder,
        rows={name: int(entry["rows"]) for name, entry in tables.items()},
        hashes=hashes,
        carried={name: record[name] for name in CARRIED if name in record},
    )
