"""Publish a checked build: a Parquet snapshot of every table, runcost.duckdb views, one switch."""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from pipeline.errors import RuncostError

PUBLISHED_SCHEMAS = ("config", "normalized", "attribution", "allocation", "marts")
TELEMETRY_VIEWS = ("attempts", "attempt_resources", "attempt_events", "experiments")
DATABASE_NAME = "runcost.duckdb"
CURRENT_NAME = "CURRENT"
SNAPSHOT_RECORD = "snapshot.json"
PARTITION_COLUMN = "billing_period"
KEEP_SNAPSHOTS = 3
LOSSY_TYPES = {"HUGEINT": "DECIMAL(38, 0)", "UHUGEINT": "DECIMAL(38, 0)"}
HASH_ALGORITHM = f"duckdb-{duckdb.__version__}:sum(hash(row)):v1"

Checkpoint = Callable[[str], None]
log = logging.getLogger("runcost")


class PublishError(RuncostError):
    """The snapshot could not be written; the previous snapshot stays current."""


@dataclass(frozen=True)
class TableContent:
    """One table to publish: where it is read from, its columns, rows and content hash."""

    name: str
    source: str
    columns: tuple[tuple[str, str], ...]
    rows: int
    content_hash: str

    @property
    def partition_by(self) -> str | None:
        names = [column for column, _ in self.columns]
        return PARTITION_COLUMN if PARTITION_COLUMN in names and self.rows else None


@dataclass(frozen=True)
class Snapshot:
    """A published snapshot: its folder, the database of views, and rows per table."""

    run_id: str
    folder: Path
    database: Path
    row_counts: dict[str, int]
    content_hashes: dict[str, str] = field(default_factory=dict)


def table_contents(con: duckdb.DuckDBPyConnection) -> list[TableContent]:
    """Every table a publish writes, with an order-independent hash of its rows and columns."""
    contents = []
    for schema, name in _tables(con):
        source = f"staging.{name}" if schema == "telemetry" else f"{schema}.{name}"
        columns, rows, digest = content_hash(con, source)
        contents.append(TableContent(f"{schema}.{name}", source, columns, rows, digest))
    return contents


def content_hash(
    con: duckdb.DuckDBPyConnection, relation: str
) -> tuple[tuple[tuple[str, str], ...], int, str]:
    """(columns, rows, hash) of a table or view; the hash ignores row order."""
    columns = tuple(
        (str(row[0]), str(row[1])) for row in con.execute(f"describe {relation}").fetchall()
    )
    # sum, not bit_xor: two equal rows must not cancel out; the hugeint sum is exact
    rows, total = con.execute(
        f"select count(*), coalesce(sum(hash(t)), 0)::hugeint from {relation} as t"
    ).fetchone()
    digest = hashlib.sha256(f"{HASH_ALGORITHM}|{columns!r}|{rows}|{total}".encode())
    return columns, rows, digest.hexdigest()[:32]


def snapshot_hash(hashes: dict[str, str]) -> str:
    """One hash over every table's hash: equal when every table's content is equal."""
    text = json.dumps(sorted(hashes.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def publish(
    con: duckdb.DuckDBPyConnection,
    warehouse: Path,
    run_id: str,
    contents: list[TableContent] | None = None,
    checkpoint: Checkpoint | None = None,
) -> Snapshot:
    """Write the snapshot beside the current one and make it current in one atomic step.

    The commit point is the rename of runcost.duckdb; CURRENT follows it, and recover() makes
    CURRENT agree again after a crash between the two renames.
    """
    reached = checkpoint or (lambda _point: None)
    contents = contents if contents is not None else table_contents(con)
    snapshots = warehouse / "snapshots"
    staging = snapshots / f".{run_id}.partial"
    folder = snapshots / run_id
    database = warehouse / DATABASE_NAME
    temporary = warehouse / f".{DATABASE_NAME}.{run_id}.tmp"
    try:
        if staging.exists():
            shutil.rmtree(staging)
        staging.mkdir(parents=True)
        for table in contents:
            _copy_table(con, table, staging)
        hashes = {table.name: table.content_hash for table in contents}
        record = {
            "run_id": run_id,
            "published_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "hash_algorithm": HASH_ALGORITHM,
            "content_hash": snapshot_hash(hashes),
            "tables": {
                table.name: {
                    "rows": table.rows,
                    "content_hash": table.content_hash,
                    "partition_by": table.partition_by,
                    "path": str(_relative_path(table)),
                    "columns": [list(column) for column in table.columns],
                }
                for table in contents
            },
        }
        _write_durably(staging / SNAPSHOT_RECORD, json.dumps(record, indent=2) + "\n")
        _sync_tree(staging)
        reached("publish:snapshot")
        os.replace(staging, folder)
        _sync_directory(snapshots)
        reached("publish:database")
        temporary.unlink(missing_ok=True)
        _write_views(temporary, folder, contents, record)
        _sync_file(temporary)
    except (OSError, duckdb.Error) as error:
        _discard(staging, temporary)
        shutil.rmtree(folder, ignore_errors=True)  # the run id is new: never the current one
        raise _write_failure(error, staging, warehouse) from error
    os.replace(temporary, database)  # the commit point
    reached("publish:pointer")
    try:
        _sync_directory(warehouse)
        _write_current(warehouse, run_id, folder)
        reached("publish:prune")
        prune(snapshots, keep=KEEP_SNAPSHOTS, current=run_id)
    except OSError as error:  # published already: the next run's recover() finishes the job
        log.warning(
            "snapshot %s is current, but updating CURRENT or pruning failed: %s; the next run "
            "repairs it",
            run_id,
            error,
            extra={"stage": "publish"},
        )
    return Snapshot(
        run_id=run_id,
        folder=folder,
        database=database,
        row_counts={table.name: table.rows for table in contents},
        content_hashes=hashes,
    )


def _copy_table(con: duckdb.DuckDBPyConnection, table: TableContent, staging: Path) -> None:
    target = staging / _relative_path(table)
    target.parent.mkdir(parents=True, exist_ok=True)
    options = "format parquet, compression zstd"
    if table.partition_by:
        # hive layout, one folder per billing period: a dashboard reads only the periods it asks
        # for. PARTITION_BY buffers rows per partition; flushing at one row group (not 512k
        # rows) halved peak memory at 5 M rows over 6 periods (1.1 GB -> 0.5 GB)
        options += f", partition_by ({table.partition_by}), filename_pattern 'part_{{i}}'"
        con.execute("set partitioned_write_flush_threshold = 122880")
    con.execute(f"copy ({_parquet_query(table)}) to '{_sql_path(target)}' ({options})")


def _parquet_query(table: TableContent) -> str:
    # Parquet has no 128-bit integer (DuckDB would write HUGEINT as DOUBLE and lose digits):
    # store it as DECIMAL(38, 0); the view casts it back
    if not any(kind in LOSSY_TYPES for _, kind in table.columns):
        return f"select * from {table.source}"
    columns = ", ".join(
        f'"{name}"::{LOSSY_TYPES[kind]} as "{name}"' if kind in LOSSY_TYPES else f'"{name}"'
        for name, kind in table.columns
    )
    return f"select {columns} from {table.source}"


def _relative_path(table: TableContent) -> Path:
    schema, name = table.name.split(".", 1)
    return Path(schema) / (name if table.partition_by else f"{name}.parquet")


def _write_views(
    path: Path, folder: Path, contents: list[TableContent], record: dict[str, object]
) -> None:
    views = duckdb.connect(str(path))
    try:
        for schema in sorted({table.name.split(".", 1)[0] for table in contents}):
            views.execute(f"create schema if not exists {schema}")
        for table in contents:
            query = _view_query(folder, table)
            read = {
                str(row[0]): str(row[1]) for row in views.execute(f"describe {query}").fetchall()
            }
            if any(read.get(name) != kind for name, kind in table.columns):
                # a type Parquet does not keep: cast back, so the view matches the build table
                columns = ", ".join(f'"{name}"::{kind} as "{name}"' for name, kind in table.columns)
                query = f"select {columns} from ({query})"
            views.execute(f"create view {table.name} as {query}")
        views.execute(
            "create table main.runcost_snapshot as select ? as run_id, ? as snapshot_folder, "
            "?::timestamptz as published_at, ? as content_hash",
            [record["run_id"], str(folder), record["published_at"], record["content_hash"]],
        )
    finally:
        views.close()


def _view_query(folder: Path, table: TableContent) -> str:
    location = folder / _relative_path(table)
    if not table.partition_by:
        return f"select * from read_parquet('{_sql_path(location)}')"
    # hive columns come last and are typed by guessing; list the columns in their order and
    # give the partition column its own type, so the view matches the table it publishes
    kind = dict(table.columns)[table.partition_by]
    columns = ", ".join(f'"{name}"' for name, _ in table.columns)
    return (
        f"select {columns} from read_parquet('{_sql_path(location)}/*/*.parquet', "
        f"hive_partitioning = true, hive_types = {{'{table.partition_by}': '{kind}'}})"
    )


def _write_failure(error: BaseException, staging: Path, warehouse: Path) -> PublishError:
    text = str(error)
    current = current_snapshot(warehouse)
    keeps = (
        f"the current snapshot {current['run_id']} stays current"
        if current
        else "nothing was published"
    )
    if getattr(error, "errno", None) == errno.ENOSPC or "No space left on device" in text:
        used = _folder_size(Path(current["snapshot"])) if current else 0
        return PublishError(
            f"disk full while writing the snapshot to {staging}: {text}; {keeps}. Free space "
            f"on the disk holding {warehouse} (the current snapshot takes "
            f"{used / 1e6:.1f} MB; the new one needs about as much) and run again"
        )
    return PublishError(f"could not write the snapshot to {staging}: {text}; {keeps}")


def current_snapshot(warehouse: Path) -> dict[str, str] | None:
    """The pointer to the current snapshot, or None before the first publish."""
    pointer = warehouse / CURRENT_NAME
    if not pointer.is_file():
        return None
    return json.loads(pointer.read_text(encoding="utf-8"))


def snapshot_record(folder: Path) -> dict | None:
    """snapshot.json of a published snapshot (None for snapshots written before it existed)."""
    path = folder / SNAPSHOT_RECORD
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def database_snapshot(warehouse: Path) -> tuple[str, str] | None:
    """(run_id, snapshot folder) that runcost.duckdb reads, or None when there is none."""
    database = warehouse / DATABASE_NAME
    if not database.is_file():
        return None
    # attach from a fresh in-memory database: duckdb.connect(path) in a process that still has
    # the old file open returns that old database, not the file now at the path
    con = duckdb.connect()
    try:
        con.execute(f"attach '{_sql_path(database)}' as served (read_only)")
        row = con.execute("select run_id, snapshot_folder from served.runcost_snapshot").fetchone()
    except duckdb.Error:
        return None
    finally:
        con.close()
    return (str(row[0]), str(row[1])) if row else None


def unchanged_snapshot(warehouse: Path, hashes: dict[str, str]) -> str | None:
    """The current run id when its snapshot holds exactly this content and serves it intact."""
    current = current_snapshot(warehouse)
    if current is None:
        return None
    folder = warehouse / "snapshots" / current["run_id"]
    record = snapshot_record(folder)
    if record is None or record.get("hash_algorithm") != HASH_ALGORITHM:
        return None
    published = {name: item["content_hash"] for name, item in record["tables"].items()}
    # a moved warehouse or a hand-edited database must be republished even when data is equal
    if published != hashes or database_snapshot(warehouse) != (current["run_id"], str(folder)):
        return None
    return current["run_id"]


def recover(warehouse: Path) -> list[Path]:
    """Clean up after runs that died (call it holding the lock); return what was removed.

    Removes half-written snapshots, temporary databases and pointers, and makes CURRENT agree
    with runcost.duckdb when a run died between the two renames.
    """
    removed: list[Path] = []
    snapshots = warehouse / "snapshots"
    if snapshots.is_dir():
        for path in snapshots.iterdir():
            if path.name.startswith(".") and path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
    if warehouse.is_dir():
        for pattern in (f".{DATABASE_NAME}.*.tmp", f".{CURRENT_NAME}.*.tmp"):
            for path in warehouse.glob(pattern):
                path.unlink(missing_ok=True)
                removed.append(path)
    served = database_snapshot(warehouse)
    current = current_snapshot(warehouse)
    if served and (current is None or current["run_id"] != served[0]):
        log.warning(
            "CURRENT named %s but runcost.duckdb serves %s (a run died between the two "
            "renames); CURRENT now names %s",
            current["run_id"] if current else "nothing",
            served[0],
            served[0],
            extra={"stage": "recover"},
        )
        _write_current(warehouse, served[0], Path(served[1]))
    return removed


def discard_snapshot(warehouse: Path, run_id: str) -> bool:
    """Delete the snapshot folder of a run that never became current; False if it is current."""
    current = current_snapshot(warehouse)
    folder = warehouse / "snapshots" / run_id
    if (current and current["run_id"] == run_id) or not folder.is_dir():
        return False
    _remove_tree(folder)
    return True


def prune(snapshots: Path, keep: int, current: str) -> None:
    """Keep the current snapshot and the newest others, `keep` in all."""
    # readers that opened an older runcost.duckdb keep reading its snapshot, so keep a few
    finished = sorted(
        path
        for path in snapshots.iterdir()
        if path.is_dir() and not path.name.startswith(".") and path.name != current
    )
    for path in finished[: max(len(finished) - (keep - 1), 0)]:
        _remove_tree(path)


def _remove_tree(path: Path) -> None:
    # rename first: a crash mid-delete leaves a hidden folder for recover(), never a half
    # snapshot that looks whole
    trash = path.with_name(f".{path.name}.trash")
    os.replace(path, trash)
    shutil.rmtree(trash, ignore_errors=True)


def _discard(staging: Path, temporary: Path) -> None:
    shutil.rmtree(staging, ignore_errors=True)
    temporary.unlink(missing_ok=True)


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
    _write_durably(temporary, json.dumps({"run_id": run_id, "snapshot": str(folder)}) + "\n")
    os.replace(temporary, pointer)
    _sync_directory(warehouse)


def _write_durably(path: Path, text: str) -> None:
    with path.open("w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


def _sync_tree(root: Path) -> None:
    # so that a power cut after the rename cannot leave a current snapshot with empty files
    for folder, _, files in os.walk(root):
        for name in files:
            _sync_file(Path(folder) / name)
        _sync_directory(Path(folder))


def _sync_file(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _sync_directory(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    except OSError:  # some filesystems refuse fsync on a directory; the rename still happened
        pass
    finally:
        os.close(descriptor)


def _folder_size(path: Path) -> int:
    if not path.is_dir():
        return 0
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file())


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")
