"""Publish a checked build: a Parquet snapshot of every table, runcost.duckdb views, one switch."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from pipeline.common.duck import literal
from pipeline.warehouse.commit import (
    PublishError,
    SwitchFailed,
    check_database,
    discard,
    discard_prepared,
    keep_previous,
    prepare,
    switch,
    switch_failure,
    write_failure,
)
from pipeline.warehouse.integrity import DamagedRecord, table_files
from pipeline.warehouse.parquet import OPTIONS, write_parquet
from pipeline.warehouse.sharing import (
    Partitions,
    digest,
    hash_partitions,
    link_partitions,
    partition_record,
    relink_partitions,
    shareable,
    unshared_source,
)
from pipeline.warehouse.snapshots import (
    DATABASE_NAME,
    HASH_ALGORITHM,
    KEEP_SNAPSHOTS,
    SNAPSHOT_RECORD,
    prune,
    snapshot_record,
    sync_directory,
    sync_file,
    sync_tree,
    write_durably,
)
from pipeline.warehouse.views import (
    PARTITION_COLUMN,
    PublishedView,
    TableContent,
    relative_path,
    write_views,
)

PUBLISHED_SCHEMAS = ("config", "normalized", "attribution", "allocation", "marts")
TELEMETRY_VIEWS = ("attempts", "attempt_resources", "attempt_events", "experiments", "gpu_usage")

Checkpoint = Callable[[str], None]
log = logging.getLogger("runcost")


@dataclass(frozen=True)
class Snapshot:
    """A published snapshot: its folder, the database of views, and rows per table."""

    run_id: str
    folder: Path
    database: Path
    row_counts: dict[str, int]
    content_hashes: dict[str, str] = field(default_factory=dict)
    # billing periods whose Parquet is hard links to the snapshot shared from, by table
    shared: dict[str, list[str]] = field(default_factory=dict)


def table_contents(
    con: duckdb.DuckDBPyConnection,
    written: dict | None = None,
    hidden: Collection[str] = (),
    known: Mapping[str, Partitions] | None = None,
) -> list:
    """Every table a publish writes, with an order-independent hash of its rows and columns;
    ``written``: name -> Parquet an engine wrote already (``con`` has views over it);
    ``hidden``: tables of the build that are never published (intermediate steps);
    ``known``: per table, billing periods whose rows and hash sums are known already (the
    periods a night carried forward from a snapshot that recorded them): not hashed again."""
    known = known or {}
    written, contents = written or {}, []
    tables = _tables(con) + sorted({tuple(n.split(".", 1)) for n in written} - set(_tables(con)))
    for schema, name in tables:
        if f"{schema}.{name}" in hidden:
            continue
        source = f"staging.{name}" if schema == "telemetry" else f"{schema}.{name}"
        key = f"{schema}.{name}"
        columns, rows, digest, partitions = _hashed(con, source, known.get(key, ()))
        contents.append(
            TableContent(key, source, columns, rows, digest, written.get(key), partitions)
        )
    return contents


def _hashed(
    con: duckdb.DuckDBPyConnection, relation: str, known: Partitions = ()
) -> tuple[tuple[tuple[str, str], ...], int, str, Partitions]:
    """content_hash, with the sums per billing period of a table that has them (one pass);
    the ``known`` periods' sums are taken as given, their rows not read."""
    columns = _columns(con, relation)
    if PARTITION_COLUMN not in dict(columns):
        return (*content_hash(con, relation), ())
    if known:
        listed = ", ".join(literal(value) for value, _rows, _total in known)
        relation = (
            f'(select * from {relation} where "{PARTITION_COLUMN}" is null or '
            f'"{PARTITION_COLUMN}"::varchar not in ({listed}))'
        )
    rows, total, partitions = hash_partitions(con, relation)
    rows += sum(count for _value, count, _total in known)
    total += sum(int(sums) for _value, _count, sums in known)
    partitions = tuple(sorted((*partitions, *known)))
    return columns, rows, digest(columns, rows, total, HASH_ALGORITHM), partitions


def content_hash(
    con: duckdb.DuckDBPyConnection, relation: str
) -> tuple[tuple[tuple[str, str], ...], int, str]:
    """(columns, rows, hash) of a table or view; the hash ignores row order."""
    columns = _columns(con, relation)
    # sum, not bit_xor: two equal rows must not cancel out; the hugeint sum is exact
    rows, total = con.execute(
        f"select count(*), coalesce(sum(hash(t)), 0)::hugeint from {relation} as t"
    ).fetchone()
    return columns, rows, digest(columns, rows, int(total), HASH_ALGORITHM)


def _columns(con: duckdb.DuckDBPyConnection, relation: str) -> tuple[tuple[str, str], ...]:
    return tuple(
        (str(row[0]), str(row[1])) for row in con.execute(f"describe {relation}").fetchall()
    )


def view_contents(
    con: duckdb.DuckDBPyConnection, views: list[tuple[str, str]]
) -> list[PublishedView]:
    """(name, sql) of each model published as a view, with its columns and a hash of both.

    A view holds no rows of its own: its content is its tables' content, which their hashes
    cover, and its definition, which this hash covers.
    """
    published = []
    for name, sql in views:
        columns = tuple(
            (str(row[0]), str(row[1])) for row in con.execute(f"describe {name}").fetchall()
        )
        digest = hashlib.sha256(f"{HASH_ALGORITHM}|view|{columns!r}|{sql}".encode())
        published.append(PublishedView(name, sql, columns, digest.hexdigest()[:32]))
    return published


def view_record(views: list[PublishedView]) -> dict[str, dict[str, object]]:
    """snapshot.json's entry for the published views."""
    return {
        view.name: {
            "sql": view.sql,
            "columns": [list(column) for column in view.columns],
            "content_hash": view.content_hash,
        }
        for view in views
    }


def recorded_views(record: dict) -> list[PublishedView]:
    """The published views a snapshot.json lists (none in snapshots older than views)."""
    return [
        PublishedView(
            name,
            str(entry["sql"]),
            tuple((str(column), str(kind)) for column, kind in entry["columns"]),
            str(entry["content_hash"]),
        )
        for name, entry in record.get("views", {}).items()
    ]


def content_hashes(
    contents: list[TableContent], views: list[PublishedView] | None = None
) -> dict[str, str]:
    """The content hash of every published table and view, by name."""
    hashes = {table.name: table.content_hash for table in contents}
    hashes.update({view.name: view.content_hash for view in views or []})
    return hashes


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
    retention_days: int = 0,
    views: list[PublishedView] | None = None,
    records: Sequence[tuple[Path, str]] = (),
    share_from: Path | None = None,
) -> Snapshot:
    """Write the snapshot beside the current one and make it current in one atomic step.

    Everything that takes disk space is written first: the snapshot, runcost.duckdb (checked
    to read back), CURRENT and each of ``records`` ((path, text), such as the run's record) as
    temporary files. Then renames switch them together; the commit point is the rename of
    runcost.duckdb, and recover() makes CURRENT agree again after a crash between renames. A
    failure before the commit point leaves the previous snapshot current and readable; a rename
    of the switch that fails is undone (commit.switch).

    ``share_from``: a snapshot folder (the current one) whose partitions equal to this
    snapshot's are hard-linked rather than written (pipeline.warehouse.sharing).
    """
    reached = checkpoint or (lambda _point: None)
    contents = contents if contents is not None else table_contents(con)
    views = views or []
    snapshots = warehouse / "snapshots"
    staging = snapshots / f".{run_id}.partial"
    folder = snapshots / run_id
    database = warehouse / DATABASE_NAME
    temporary = warehouse / f".{DATABASE_NAME}.{run_id}.tmp"
    try:
        if staging.exists():
            shutil.rmtree(staging)
        staging.mkdir(parents=True)
        current = _shared_record(share_from)
        shared = {}
        for table in contents:
            linked = _copy_table(con, table, staging, shareable(table, current, share_from))
            if linked:
                shared[table.name] = sorted(linked)
        hashes = content_hashes(contents, views)
        record = {
            "run_id": run_id,
            "published_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "hash_algorithm": HASH_ALGORITHM,
            "parquet_options": OPTIONS,
            "content_hash": snapshot_hash(hashes),
            "tables": {
                table.name: {
                    "rows": table.rows,
                    "content_hash": table.content_hash,
                    "partition_by": table.partition_by,
                    "partitions": partition_record(table) if table.partition_by else None,
                    "path": str(relative_path(table)),
                    "columns": [list(column) for column in table.columns],
                    # the files and their sizes: a damaged snapshot is found without reading it
                    "files": table_files(staging, {"path": str(relative_path(table))}),
                }
                for table in contents
            },
            "views": view_record(views),
        }
        write_durably(staging / SNAPSHOT_RECORD, json.dumps(record, indent=2) + "\n")
        sync_tree(staging)
        reached("publish:snapshot")
        os.replace(staging, folder)
        sync_directory(snapshots)
        reached("publish:database")
        temporary.unlink(missing_ok=True)
        write_views(temporary, folder, contents, record, views)
        check_database(temporary, run_id)
        sync_file(temporary)
        prepared = prepare(warehouse, run_id, folder, records)
        previous = keep_previous(warehouse, run_id)
    except (OSError, duckdb.Error, PublishError) as error:
        discard(staging, temporary)
        discard_prepared(warehouse, run_id, records)
        shutil.rmtree(folder, ignore_errors=True)  # the run id is new: never the current one
        if isinstance(error, PublishError):
            raise
        raise write_failure(error, staging, warehouse) from error
    try:
        switch(temporary, database, prepared, previous, reached)
    except SwitchFailed as failure:
        discard_prepared(warehouse, run_id, records)
        discard(staging, temporary)
        if failure.undo is None:  # undone: this run's snapshot never stayed current
            shutil.rmtree(folder, ignore_errors=True)
        raise switch_failure(failure, run_id, warehouse) from failure.error
    finally:
        previous.discard()
    reached("publish:pointer")
    try:
        sync_directory(warehouse)
        reached("publish:prune")
        prune(snapshots, keep=KEEP_SNAPSHOTS, current=run_id, retention_days=retention_days)
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
        shared=shared,
    )


def _shared_record(folder: Path | None) -> dict | None:
    """snapshot.json of the snapshot to share partitions with; None when it cannot be read."""
    if folder is None:
        return None
    try:
        return snapshot_record(folder)
    except DamagedRecord:
        return None


def _copy_table(
    con: duckdb.DuckDBPyConnection,
    table: TableContent,
    staging: Path,
    shared: dict[str, Path],
) -> set[str]:
    """Write (or move in) one table; the billing periods hard-linked from ``shared``."""
    target = staging / relative_path(table)
    target.parent.mkdir(parents=True, exist_ok=True)
    if table.files is not None:
        shutil.move(table.files, target)  # a rename when both are on one filesystem
        return relink_partitions(target, shared)
    linked = link_partitions(target, shared)
    partitioned = _partitioned_rows(table)
    if not table.partition_by or len(linked) < len(table.partitions) or table.rows != partitioned:
        values = [value for value, _rows, _total in table.partitions if value not in linked]
        source = unshared_source(table, linked)
        # rows without a period are in no partition: let the write find the values then
        known = values if linked and table.rows == partitioned else None
        write_parquet(con, source, table.columns, target, table.partition_by, values=known)
    return linked


def _partitioned_rows(table: TableContent) -> int:
    return sum(rows for _value, rows, _total in table.partitions)


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
