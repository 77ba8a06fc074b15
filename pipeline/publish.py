"""Publish a checked build: Parquet snapshot of every table, then runcost.duckdb views over it."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import duckdb

PUBLISHED_SCHEMAS = ("config", "normalized", "attribution", "allocation", "marts")
TELEMETRY_VIEWS = ("attempts", "attempt_resources", "attempt_events", "experiments")
DATABASE_NAME = "runcost.duckdb"
CURRENT_NAME = "CURRENT"
KEEP_SNAPSHOTS = 3


@dataclass(frozen=True)
class Snapshot:
    """A published snapshot: its folder, the database of views, and rows per table."""

    run_id: str
    folder: Path
    database: Path
    row_counts: dict[str, int]


def publish(con: duckdb.DuckDBPyConnection, warehouse: Path, run_id: str) -> Snapshot:
    """Write the snapshot beside the current one and make it current in one atomic step."""
    snapshots = warehouse / "snapshots"
    staging_folder = snapshots / f".{run_id}.partial"
    folder = snapshots / run_id
    if staging_folder.exists():
        shutil.rmtree(staging_folder)
    staging_folder.mkdir(parents=True)

    tables = _tables(con)
    row_counts: dict[str, int] = {}
    for schema, name in tables:
        target = staging_folder / schema / f"{name}.parquet"
        target.parent.mkdir(parents=True, exist_ok=True)
        source = f"staging.{name}" if schema == "telemetry" else f"{schema}.{name}"
        con.execute(
            f"copy (select * from {source}) to '{_sql_path(target)}' "
            "(format parquet, compression zstd)"
        )
        row_counts[f"{schema}.{name}"] = con.execute(f"select count(*) from {source}").fetchone()[0]
    os.replace(staging_folder, folder)

    database = warehouse / DATABASE_NAME
    temporary = warehouse / f".{DATABASE_NAME}.{run_id}.tmp"
    temporary.unlink(missing_ok=True)
    views = duckdb.connect(str(temporary))
    try:
        for schema in {schema for schema, _ in tables}:
            views.execute(f"create schema if not exists {schema}")
        for schema, name in tables:
            path = folder / schema / f"{name}.parquet"
            views.execute(
                f"create view {schema}.{name} as select * from read_parquet('{_sql_path(path)}')"
            )
        views.execute(
            "create table main.runcost_snapshot as select ? as run_id, ? as snapshot_folder",
            [run_id, str(folder)],
        )
    finally:
        views.close()
    os.replace(temporary, database)
    _write_current(warehouse, run_id, folder)
    _prune(snapshots, keep=KEEP_SNAPSHOTS, current=run_id)
    return Snapshot(run_id=run_id, folder=folder, database=database, row_counts=row_counts)


def current_snapshot(warehouse: Path) -> dict[str, str] | None:
    """The pointer to the current snapshot, or None before the first publish."""
    pointer = warehouse / CURRENT_NAME
    if not pointer.is_file():
        return None
    return json.loads(pointer.read_text(encoding="utf-8"))


def _tables(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    rows = con.execute(
        "select table_schema, table_name from information_schema.tables "
        "where table_schema in (select unnest(?)) and table_type = 'BASE TABLE' "
        "order by table_schema, table_name",
        [list(PUBLISHED_SCHEMAS)],
    ).fetchall()
    return [(schema, name) for schema, name in rows] + [
        ("telemetry", name) for name in TELEMETRY_VIEWS
    ]


def _write_current(warehouse: Path, run_id: str, folder: Path) -> None:
    pointer = warehouse / CURRENT_NAME
    temporary = warehouse / f".{CURRENT_NAME}.{run_id}.tmp"
    temporary.write_text(
        json.dumps({"run_id": run_id, "snapshot": str(folder)}) + "\n", encoding="utf-8"
    )
    os.replace(temporary, pointer)


def _prune(snapshots: Path, keep: int, current: str) -> None:
    # readers that opened an older runcost.duckdb keep reading its snapshot, so keep a few
    finished = sorted(
        path for path in snapshots.iterdir() if path.is_dir() and not path.name.startswith(".")
    )
    for path in finished[:-keep]:
        if path.name != current:
            shutil.rmtree(path, ignore_errors=True)


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")
