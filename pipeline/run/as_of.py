"""Past snapshots: the one current at the end of a date, and cost changes between any two."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

import duckdb

from pipeline.common.duck import connect
from pipeline.common.errors import RuncostError
from pipeline.dag.models import discover
from pipeline.run.history import create_history_inputs, load_previous
from pipeline.warehouse.publish import TableContent, recorded_views, write_views
from pipeline.warehouse.snapshots import current_snapshot, kept_snapshots, snapshot_record

# The models a diff recomputes against the earlier snapshot; every other table is read as published.
RECOMPUTED = ("marts.estimate_errors", "marts.cost_changes")
TELEMETRY_VIEWS = ("attempts", "attempt_resources", "attempt_events", "experiments")


def snapshot_as_of(warehouse: Path, day: date) -> Path:
    """The kept snapshot that was current at the end of ``day`` (UTC)."""
    end = datetime.combine(day + timedelta(days=1), time(), tzinfo=UTC)
    kept = kept_snapshots(warehouse / "snapshots")
    before = [(path, at) for path, at in kept if at < end]
    if not before:
        if not kept:
            raise RuncostError(f"{warehouse}: nothing is published yet; run `runcost run` first")
        oldest, at = kept[0]
        raise RuncostError(
            f"no kept snapshot was current at the end of {day.isoformat()} (UTC): the oldest "
            f"kept snapshot is {oldest.name}, published {at.isoformat(timespec='seconds')}; "
            f"pass --as-of {at.date().isoformat()} or later "
            "(a snapshot is kept warehouse.snapshot_retention_days days after the next one "
            "replaces it)"
        )
    return before[-1][0]


def write_snapshot_database(folder: Path, target: Path) -> None:
    """A DuckDB file at ``target`` with a view per table of the snapshot in ``folder``."""
    record = snapshot_record(folder)
    if record is None:
        raise RuncostError(f"{folder}: not a published snapshot (no snapshot.json)")
    contents = [
        TableContent(
            name=name,
            source=name,
            columns=tuple((str(column), str(kind)) for column, kind in entry["columns"]),
            rows=int(entry["rows"]),
            content_hash=str(entry["content_hash"]),
        )
        for name, entry in record["tables"].items()
    ]
    write_views(target, folder, contents, record, recorded_views(record))


def resolve_pair(warehouse: Path, run_a: str | None, run_b: str | None) -> tuple[Path, Path]:
    """(earlier, later) snapshot folders; by default the current one and the one before it."""
    kept = [path for path, _at in kept_snapshots(warehouse / "snapshots")]
    names = [path.name for path in kept]
    if run_b is None:
        current = current_snapshot(warehouse)
        if current is None:
            raise RuncostError(f"{warehouse}: nothing is published yet; run `runcost run` first")
        run_b = current["run_id"]
    later = _find(kept, names, run_b)
    if run_a is None:
        earlier_names = [name for name in names if name < later.name]
        if not earlier_names:
            raise RuncostError(
                f"snapshot {later.name} is the oldest kept snapshot: there is nothing to compare "
                f"it with; name two runs (runcost diff RUN_A RUN_B), kept: {', '.join(names)}"
            )
        run_a = earlier_names[-1]
    return _find(kept, names, run_a), later


def cost_changes_between(earlier: Path, later: Path, scratch: Path) -> duckdb.DuckDBPyConnection:
    """A connection holding marts.cost_changes of ``later`` against ``earlier``."""
    database = scratch / "diff.duckdb"
    write_snapshot_database(later, database)
    con = connect(database)
    try:
        con.execute("create schema if not exists staging")
        for name in TELEMETRY_VIEWS:
            con.execute(f"create view staging.{name} as select * from telemetry.{name}")
        create_history_inputs(con)
        load_previous(con, earlier)
        models = {model.qualified: model for model in discover()}
        for name, model in models.items():
            if name.startswith("staging.previous_"):
                con.execute(f"create view {name} as {model.sql}")
        for name in RECOMPUTED:
            con.execute(f"drop view if exists {name}")
            con.execute(f"create table {name} as {models[name].sql}")
    except duckdb.Error as error:
        con.close()
        raise RuncostError(
            f"cannot compare {earlier.name} with {later.name}: {error}; both snapshots must be "
            "published by a runcost that keeps run history (marts.cost_estimates)"
        ) from error
    return con


def _find(kept: list[Path], names: list[str], run_id: str) -> Path:
    matches = [path for path in kept if path.name == run_id or path.name.startswith(run_id)]
    if len(matches) != 1:
        shown = ", ".join(names[-10:]) or "none"
        raise RuncostError(
            f"{run_id}: {'no' if not matches else 'more than one'} kept snapshot has this run "
            f"id; kept snapshots (newest last): {shown}"
        )
    return matches[0]
