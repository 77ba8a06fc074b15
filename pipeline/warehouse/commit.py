"""Publish's commit sequence: write everything that takes space, check it, then switch by renames.

A failure before the switch (a full disk included) leaves the previous snapshot current and
readable; runcost.duckdb, CURRENT, latest and the run's record switch together or not at all: a
rename that fails is undone, a crash between renames is finished by the next run's recover().
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline.common.errors import RuncostError
from pipeline.warehouse.snapshots import (
    CURRENT_NAME,
    DATABASE_NAME,
    LATEST_NAME,
    current_snapshot,
    database_snapshot,
    relative_to,
    sync_directory,
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
    (warehouse / f".{DATABASE_NAME}.{run_id}.previous").unlink(missing_ok=True)


@dataclass(frozen=True)
class Previous:
    """What the switch replaces, kept to put back when a rename after the commit point fails:
    the replaced runcost.duckdb (a hard link, or a copy), CURRENT's text, latest's target."""

    database: Path | None
    current: str | None
    latest: str | None

    def discard(self) -> None:
        if self.database is not None:
            self.database.unlink(missing_ok=True)


def keep_previous(warehouse: Path, run_id: str) -> Previous:
    """Keep what the switch will replace (call it before the switch: it may take disk space)."""
    database = warehouse / DATABASE_NAME
    kept = None
    if database.is_file():
        kept = warehouse / f".{DATABASE_NAME}.{run_id}.previous"
        kept.unlink(missing_ok=True)
        try:
            os.link(database, kept)
        except OSError:  # a filesystem without hard links: the database of views is small
            shutil.copy2(database, kept)
    pointer, latest = warehouse / CURRENT_NAME, warehouse / LATEST_NAME
    return Previous(
        database=kept,
        current=pointer.read_text(encoding="utf-8") if pointer.is_file() else None,
        latest=os.readlink(latest) if latest.is_symlink() else None,
    )


def switch(
    temporary: Path,
    database: Path,
    prepared: list[tuple[Path, Path]],
    previous: Previous,
    reached: Callable[[str], None],
) -> None:
    """Rename runcost.duckdb (the commit point), then CURRENT, latest and the records.

    When a rename fails, the switch is undone: runcost.duckdb, CURRENT and latest are put back
    and the records keep what they said, so all still name the previous snapshot (a crash
    instead is finished by the next run's recover()). Raises SwitchFailed.
    """
    try:
        os.replace(temporary, database)
        reached(f"publish:switch:{database.name}")
        for source, target in prepared:
            os.replace(source, target)
            reached(f"publish:switch:{target.name}")
    except OSError as error:
        try:
            _put_back(database, previous)
        except OSError as undo:
            raise SwitchFailed(error, undo) from error
        raise SwitchFailed(error) from error


class SwitchFailed(Exception):
    """A rename of the switch failed; ``undo``: the error putting the previous state back."""

    def __init__(self, error: OSError, undo: OSError | None = None) -> None:
        super().__init__(str(error))
        self.error, self.undo = error, undo


def switch_failure(failure: SwitchFailed, run_id: str, warehouse: Path) -> PublishError:
    """The message of a switch that failed: undone (the previous snapshot stays) or not."""
    fix = f"check the permissions of {warehouse} and the disk holding it, then run again"
    if failure.undo is None:
        current = current_snapshot(warehouse)
        keeps = (
            f"the current snapshot {current['run_id']} stays current"
            if current
            else "nothing is published"
        )
        return PublishError(
            f"could not make snapshot {run_id} current: {failure.error}; the switch was undone "
            f"and {keeps}. {fix[0].upper()}{fix[1:]}"
        )
    return PublishError(
        f"could not make snapshot {run_id} current: {failure.error}; nor undo the switch: "
        f"{failure.undo}. {DATABASE_NAME}, CURRENT and latest may name different snapshots "
        f"until the next run, which repairs them: {fix}"
    )


def _put_back(database: Path, previous: Previous) -> None:
    # the database first: once it is back, recover() would realign CURRENT and latest with it
    warehouse = database.parent
    if previous.database is not None:
        os.replace(previous.database, database)
    else:
        database.unlink(missing_ok=True)
    pointer = warehouse / CURRENT_NAME
    if previous.current is None:
        pointer.unlink(missing_ok=True)
    else:
        temporary = warehouse / f".{CURRENT_NAME}.undo.tmp"
        write_durably(temporary, previous.current)
        os.replace(temporary, pointer)
    latest = warehouse / LATEST_NAME
    if previous.latest is None:
        latest.unlink(missing_ok=True)
    else:
        link = warehouse / f".{LATEST_NAME}.undo.tmp"
        link.unlink(missing_ok=True)
        os.symlink(previous.latest, link, target_is_directory=True)
        os.replace(link, latest)
    sync_directory(warehouse)


def _folder_size(path: Path) -> int:
    if not path.is_dir():
        return 0
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file())
