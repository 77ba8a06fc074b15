"""runcost.duckdb: a database of views over one snapshot's Parquet, readable by DuckDB 1.1+."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from pipeline.common.duck import literal
from pipeline.warehouse.snapshots import STORAGE_VERSION

PARTITION_COLUMN = "billing_period"


@dataclass(frozen=True)
class TableContent:
    """One table to publish: where it is read from, its columns, rows and content hash."""

    name: str
    source: str
    columns: tuple[tuple[str, str], ...]
    rows: int
    content_hash: str
    files: Path | None = None  # Parquet a build wrote in this layout (Spark, or a DuckDB
    # `-- materialized: parquet` model): moved into the snapshot, not copied
    # per billing period: (value, rows, sum of row hashes), for sharing unchanged periods
    partitions: tuple[tuple[str, int, str], ...] = ()

    @property
    def partition_by(self) -> str | None:
        names = [column for column, _ in self.columns]
        return PARTITION_COLUMN if PARTITION_COLUMN in names and self.rows else None


@dataclass(frozen=True)
class PublishedView:
    """A model published as a view: runcost.duckdb runs its SQL over the published tables."""

    name: str
    sql: str
    columns: tuple[tuple[str, str], ...]
    content_hash: str


def relative_path(table: TableContent) -> Path:
    """Where a table lives inside a snapshot folder: schema/name.parquet, or a hive folder."""
    return layout_path(table.name, partitioned=table.partition_by is not None)


def layout_path(qualified: str, partitioned: bool) -> Path:
    """schema/name.parquet, or the hive folder schema/name of a table with billing periods."""
    schema, name = qualified.split(".", 1)
    return Path(schema) / (name if partitioned else f"{name}.parquet")


def write_views(
    path: Path,
    folder: Path,
    contents: list[TableContent],
    record: dict[str, object],
    views: list[PublishedView] | None = None,
) -> None:
    """A DuckDB file at ``path`` with one view per published table over ``folder``."""
    _write_views(path, folder, contents, record, views or [])


def _write_views(
    path: Path,
    folder: Path,
    contents: list[TableContent],
    record: dict[str, object],
    published: list[PublishedView],
) -> None:
    location = view_location(path, folder)
    # DuckDB 1.1 and later read this storage version (dashboard connectors lag DuckDB releases)
    views = duckdb.connect(str(path), config={"storage_compatibility_version": STORAGE_VERSION})
    try:
        # relative Parquet paths resolve against the database's folder (see view_location)
        views.execute(f"set file_search_path = {literal(path.parent)}")
        schemas = {item.name.split(".", 1)[0] for item in [*contents, *published]}
        for schema in sorted(schemas):
            views.execute(f"create schema if not exists {schema}")
        for table in contents:
            views.execute(f"create view {table.name} as {typed_query(views, location, table)}")
        for view in published:  # in model order: a view may read one made before it
            views.execute(f"create view {view.name} as\n{view.sql}")
        views.execute(
            "create table main.runcost_snapshot as select ? as run_id, ? as snapshot_folder, "
            "?::timestamptz as published_at, ? as content_hash",
            [record["run_id"], location, record["published_at"], record["content_hash"]],
        )
    finally:
        views.close()


def view_location(database: Path, folder: Path) -> str:
    """How the views of ``database`` name the snapshot ``folder``.

    A database in the warehouse names it relative to itself (snapshots/<run_id>), so a
    warehouse copied or mounted elsewhere reads its own snapshot; a reader sets
    file_search_path to the database's folder (or runs there). A database elsewhere (as-of,
    diff) names the folder as it is.
    """
    try:
        return folder.absolute().relative_to(database.parent.absolute()).as_posix()
    except ValueError:
        return str(folder.absolute())


def typed_query(views: duckdb.DuckDBPyConnection, location: str, table: TableContent) -> str:
    """A select of ``table``'s Parquet under ``location`` with the columns and types it had."""
    return typed_select(views, _view_query(location, table), table.columns)


def typed_select(
    con: duckdb.DuckDBPyConnection, query: str, columns: tuple[tuple[str, str], ...]
) -> str:
    """``query`` (a select of Parquet) with ``columns``, each of the type it had when written."""
    read = {str(row[0]): str(row[1]) for row in con.execute(f"describe {query}").fetchall()}
    if all(read.get(name) == kind for name, kind in columns):
        return query
    # a type Parquet does not keep: cast back, so the view matches the build table
    listed = ", ".join(f'"{name}"::{kind} as "{name}"' for name, kind in columns)
    return f"select {listed} from ({query})"


def _view_query(location: str, table: TableContent) -> str:
    path = literal(f"{location}/{relative_path(table).as_posix()}")
    if not table.partition_by:
        return f"select * from read_parquet({path})"
    # hive columns come last and are typed by guessing; list the columns in their order and
    # give the partition column its own type, so the view matches the table it publishes
    kind = dict(table.columns)[table.partition_by]
    columns = ", ".join(f'"{name}"' for name, _ in table.columns)
    glob = literal(f"{location}/{relative_path(table).as_posix()}/*/*.parquet")
    return (
        f"select {columns} from read_parquet({glob}, "
        f"hive_partitioning = true, hive_types = {{'{table.partition_by}': '{kind}'}})"
    )
