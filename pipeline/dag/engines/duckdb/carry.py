"""A DuckDB build taking the carried billing periods' rows of a published table from a snapshot
(pipeline.run.carry decides which periods; this module moves the rows)."""

from __future__ import annotations

from pathlib import Path

import duckdb

from pipeline.common.duck import literal
from pipeline.warehouse.sharing import link_or_copy
from pipeline.warehouse.views import PARTITION_COLUMN, TableContent, typed_query


def partitions_query(
    folder: Path, entry: dict, values: list[str], columns: tuple[str, ...] | None = None
) -> str:
    """A select of a published table's partitions ``values`` in the snapshot ``folder``
    (``entry``: the table's entry in its snapshot.json), each column of its recorded type."""
    folders = [folder / entry["path"] / f"{PARTITION_COLUMN}={value}" for value in values]
    files = "[" + ", ".join(literal(str(path / "*.parquet")) for path in folders) + "]"
    kinds = {str(name): str(kind) for name, kind in entry["columns"]}
    listed = columns or tuple(kinds)
    read = (
        f"read_parquet({files}, hive_partitioning = true, "
        f"hive_types = {{'{PARTITION_COLUMN}': '{kinds[PARTITION_COLUMN]}'}})"
    )
    select = ", ".join(f'"{name}"::{kinds[name]} as "{name}"' for name in listed)
    return f"select {select} from {read}"


def insert_partitions(
    con: duckdb.DuckDBPyConnection, qualified: str, folder: Path, entry: dict, values: list[str]
) -> None:
    """The partitions ``values`` added to the build's table ``qualified``."""
    con.execute(f"insert into {qualified} by name {partitions_query(folder, entry, values)}")


def insert_keyed(
    con: duckdb.DuckDBPyConnection,
    qualified: str,
    folder: Path,
    entry: dict,
    key: str,
    users: tuple[dict, list[str]],
) -> None:
    """The rows of the unpartitioned table ``qualified`` in the snapshot whose ``key`` the
    partitions ``users`` (a table's entry, its periods) hold and the build's table does not."""
    used, values = users
    keys = partitions_query(folder, used, values, columns=(key,))
    stored = f"read_parquet({literal(str(folder / entry['path']))})"
    con.execute(
        f'insert into {qualified} by name select * from {stored} where "{key}" in '
        f'(select "{key}" from ({keys})) and "{key}" not in (select "{key}" from {qualified})'
    )


def link_partitions(
    con: duckdb.DuckDBPyConnection,
    published: Path,
    written: Path,
    qualified: str,
    folder: Path,
    entry: dict,
    values: list[str],
) -> Path:
    """Hard-link the partitions ``values`` of the snapshot's files into the Parquet the build
    wrote for ``qualified`` (``written`` under ``published``; a copy where the filesystem has
    no links) and point the build's view at every period; the table's folder."""
    columns = tuple((str(name), str(kind)) for name, kind in entry["columns"])
    target = written.parent / qualified.split(".", 1)[1]
    if written.is_file():  # no row in the built periods: written as one file
        written.unlink()
    for value in values:
        name = f"{PARTITION_COLUMN}={value}"
        link_or_copy(folder / entry["path"] / name, target / name)
    rows = int(entry.get("rows") or 0) or 1  # any rows: the layout of a partitioned table
    table = TableContent(qualified, qualified, columns, rows, "", target)
    query = typed_query(con, str(published.absolute()), table)
    con.execute(f"create or replace view {qualified} as {query}")
    return target
