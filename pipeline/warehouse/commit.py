"""Publish's commit sequence: write everything that takes space, check it, then switch by renames.

A failure before the switch (a full disk included) leaves the previous snapshot current and
readable; CURRENT, the run's record and runcost.duckdb switch together or not at all.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from pipeline.common.errors import RuncostError
from pipeline.warehouse.snapshots import (
    CURRENT_NAME,
    LATEST_NAME,
    current_snapshot,
    database_snapshot,
    relative_to,
    write_durably,
)


class PublishError(RuncostError):
    """The snapshot could not be written; the previous snapshot stays current."""


def write_failure(error: BaseException, staging: Path, warehouse: Path) -> PublishError:
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


def discard(staging: Path, temporary: Path) -> None:
    shutil.rmtree(staging, ignore_errors=True)
    temporary.unlink(missing_ok=True)
    Path(f"{temporary}.wal").unlink(missing_ok=True)


def check_database(path: Path, run_id: str) -> None:
    """The written runcost.duckdb must read back whole: no stranded WAL, this run's views."""
    wal = Path(f"{path}.wal")
    if wal.exists():
        # DuckDB could not checkpoint on close (a full disk): the file alone is empty
        raise OSError(errno.ENOSPC, f"the views stayed in {wal} (checkpoint failed)")
    served = database_snapshot(path.parent, path.name)
    if served is None or served[0] != run_id:
        raise PublishError(
            f"{path}: the database of views does not read back (it serves "
            f"{served[0] if served else 'nothing'}); check the disk holding the warehouse and "
            "run again; the current snapshot stays current"
        )


def _temporary_name(path: Path, run_id: str) -> Path:
    return path.with_name(f".{path.name}.{run_id}.tmp")


def prepare(
    warehouse: Path, run_id: str, folder: Path, records: Sequence[tuple[Path, str]]
) -> list[tuple[Path, Path]]:
    """Write CURRENT, the latest link and the records as temporary files: (temporary, final)
    to rename. CURRENT and latest name the snapshot relative to the warehouse (it may move)."""
    name = relative_to(folder, warehouse)
    pointer = json.dumps({"run_id": run_id, "snapshot": name}) + "\n"
    pending = [(warehouse / CURRENT_NAME, pointer), *records]
    prepared = []
    for path, text in pending:
        temporary = _temporary_name(path, run_id)
        write_durably(temporary, text)
        prepared.append((temporary, path))
    link = _temporary_name(warehouse / LATEST_NAME, run_id)
    link.unlink(missing_ok=True)
    os.symlink(name, link, target_is_directory=True)
    prepared.insert(1, (link, warehouse / LATEST_NAME))
    return prepared


def discard_prepared(warehouse: Path, run_id: str, records: Sequence[tuple[Path, str]]) -> None:
    for path in [warehouse / CURRENT_NAME, warehouse / LATEST_NAME, *(p for p, _ in records)]:
        _temporary_name(path, run_id).unlink(missing_ok=True)


def switch(temporary: Path, database: Path, prepared: list[tuple[Path, Path]]) -> None:
    """Rename runcost.duckdb (the commit point), then CURRENT and the records, into place."""
    os.replace(temporary, database)
    for source, target in prepared:
        os.replace(source, target)


def _folder_size(path: Path) -> int:
    if not path.is_dir():
        return 0
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file())
