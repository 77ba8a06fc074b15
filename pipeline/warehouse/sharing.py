"""Snapshots that share unchanged billing periods: a partition whose rows equal the current
snapshot's is a hard link to its files, not a new copy.

Every partitioned table records, per billing period, its rows and the sum of its row hashes
(the same sums its content hash adds up). When a new snapshot's partition has the same rows and
sum as the current snapshot's partition of the same table, with the same columns and Parquet
options, its folder holds hard links to the current snapshot's files: nothing is written, and
the two snapshots take the disk once. Parquet files are never modified after they are written,
so a link is as good as a copy; pruning one snapshot leaves the files of the other, and a
warehouse copied without keeping links (``cp -r``) simply holds two copies. On a filesystem
without hard links the partition is written as before.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from pathlib import Path

import duckdb

from pipeline.warehouse.parquet import OPTIONS
from pipeline.warehouse.views import PARTITION_COLUMN, TableContent, relative_path

log = logging.getLogger("runcost")

# a partition's rows and the sum of its row hashes, by partition value
Partitions = tuple[tuple[str, int, str], ...]


def hash_partitions(con: duckdb.DuckDBPyConnection, relation: str) -> tuple[int, int, Partitions]:
    """(rows, sum of row hashes, per billing period (value, rows, sum)) of ``relation``.

    The per-period sums add up to the table's: one pass gives both. Rows whose period is NULL
    count in the table's sums but in no partition (they are never shared).
    """
    found = con.execute(
        f'select "{PARTITION_COLUMN}"::varchar, count(*), coalesce(sum(hash(t)), 0)::hugeint '
        f"from {relation} as t group by all"
    ).fetchall()
    rows = sum(int(count) for _value, count, _total in found)
    total = sum(int(value) for _value, _count, value in found)
    partitions = tuple(
        sorted((str(value), int(count), str(int(sums))) for value, count, sums in found if value)
    )
    return rows, total, partitions


def partition_record(table: TableContent) -> dict[str, list[object]]:
    """snapshot.json's entry of a table's partitions: value -> [rows, sum of row hashes]."""
    return {value: [rows, total] for value, rows, total in table.partitions}


def shareable(table: TableContent, current: dict | None, folder: Path | None) -> dict[str, Path]:
    """The partitions of ``table`` equal to the current snapshot's, by value -> its folder."""
    if current is None or folder is None or not table.partition_by or not table.partitions:
        return {}
    entry = (current.get("tables") or {}).get(table.name)
    if not isinstance(entry, dict) or current.get("parquet_options") != OPTIONS:
        return {}
    if entry.get("partition_by") != table.partition_by:
        return {}
    if [list(column) for column in table.columns] != entry.get("columns"):
        return {}
    before = entry.get("partitions") or {}
    found = {}
    for value, rows, total in table.partitions:
        source = folder / str(entry["path"]) / f"{PARTITION_COLUMN}={value}"
        if before.get(value) == [rows, total] and source.is_dir():
            found[value] = source
    return found


def link_partitions(target: Path, shared: dict[str, Path]) -> set[str]:
    """Hard-link each shared partition's files into ``target``; the values linked (a value
    whose links failed, on a filesystem without them, is left for the caller to write)."""
    linked = set()
    for value, source in shared.items():
        folder = target / f"{PARTITION_COLUMN}={value}"
        if _linked(source, folder):
            linked.add(value)
    return linked


def relink_partitions(target: Path, shared: dict[str, Path]) -> set[str]:
    """Replace the files of each shared partition written under ``target`` (by the build) with
    links to the current snapshot's: the same rows, the disk taken once."""
    linked = set()
    for value, source in shared.items():
        folder = target / f"{PARTITION_COLUMN}={value}"
        spare = folder.with_name(f".{folder.name}.links")
        if not folder.is_dir() or not _linked(source, spare):
            continue
        shutil.rmtree(folder)
        spare.rename(folder)
        linked.add(value)
    return linked


def link_or_copy(source: Path, folder: Path) -> None:
    """Each file of the partition folder ``source`` into ``folder``: hard-linked, or copied
    where the filesystem has no links (a carried partition must be there either way)."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in sorted(source.iterdir()):
        try:
            os.link(path, folder / path.name)
        except OSError:
            shutil.copy2(path, folder / path.name)


def _linked(source: Path, folder: Path) -> bool:
    folder.mkdir(parents=True, exist_ok=True)
    try:
        for path in sorted(source.iterdir()):
            os.link(path, folder / path.name)
    except OSError as error:
        shutil.rmtree(folder, ignore_errors=True)
        log.debug("could not link %s (%s); writing the partition instead", source, error)
        return False
    return True


def unshared_source(table: TableContent, linked: set[str]) -> str:
    """``table``'s source without the rows of the partitions linked already."""
    if not linked:
        return table.source
    kept = ", ".join("'" + value.replace("'", "''") + "'" for value in sorted(linked))
    return (
        f'(select * from {table.source} where "{PARTITION_COLUMN}" is null '
        f'or "{PARTITION_COLUMN}"::varchar not in ({kept}))'
    )


def target_of(staging: Path, table: TableContent) -> Path:
    return staging / relative_path(table)


def digest(columns: tuple[tuple[str, str], ...], rows: int, total: int, algorithm: str) -> str:
    """A table's content hash from its rows and the sum of its row hashes."""
    text = f"{algorithm}|{columns!r}|{rows}|{total}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]
