"""The warehouse's snapshots: which is current, what each holds, and cleaning up after dead runs."""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb

from pipeline.common.errors import RuncostError
from pipeline.warehouse.integrity import (
    SNAPSHOT_RECORD as SNAPSHOT_RECORD,  # where it has always been imported from
)
from pipeline.warehouse.integrity import DamagedRecord, damaged_files, read_record

log = logging.getLogger("runcost")

DATABASE_NAME = "runcost.duckdb"
CURRENT_NAME = "CURRENT"
KEEP_SNAPSHOTS = 3
# runcost.duckdb is written in the storage of DuckDB 1.1, which every DuckDB since reads
STORAGE_VERSION = "v1.1.0"
# warehouse/latest: a symbolic link to the current snapshot, a stable path for Parquet readers
LATEST_NAME = "latest"
HASH_ALGORITHM = f"duckdb-{duckdb.__version__}:sum(hash(row)):v1"


def current_snapshot(warehouse: Path) -> dict[str, str] | None:
    """The pointer to the current snapshot, or None before the first publish.

    CURRENT names the snapshot relative to the warehouse (older ones: an absolute path); the
    returned "snapshot" is the folder in this warehouse, wherever it has been moved.
    """
    pointer = warehouse / CURRENT_NAME
    if not pointer.is_file():
        return None
    body = _pointer(pointer)
    if body is not None:
        body["snapshot"] = str(warehouse / body["snapshot"])  # relative since DuckDB 1.x views
        return body
    served = database_snapshot(warehouse)
    log.warning(
        "%s is empty or unreadable (a crash or a full disk); %s; the next run rewrites it",
        pointer,
        f"using {served[0]}, which {DATABASE_NAME} serves" if served else "nothing is served",
    )
    return {"run_id": served[0], "snapshot": str(warehouse / served[1])} if served else None


def _pointer(path: Path) -> dict[str, str] | None:
    """CURRENT's content, or None when it is not a whole pointer."""
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(body, dict) or not {"run_id", "snapshot"} <= set(body):
        return None
    return {"run_id": str(body["run_id"]), "snapshot": str(body["snapshot"])}


def reader_settings(database: Path) -> dict[str, str | int | bool]:
    """The settings a connection to runcost.duckdb needs: its views name Parquet files
    relative to its folder, which DuckDB looks up in file_search_path."""
    return {"file_search_path": str(database.parent.absolute())}


class OutsideSnapshot(RuncostError):
    """A runcost.duckdb whose recorded snapshot folder lies outside its warehouse's snapshots."""


def snapshots_folder(database: Path, recorded: str) -> Path:
    """The snapshots folder holding the snapshot ``database`` records (its views read there).

    It must be the warehouse's own snapshots/ (the database's folder's); a database outside a
    warehouse (runcost sql --as-of writes one) may name a snapshot of another warehouse. A
    folder anywhere else (``../../..``) is refused: readers may read where it lies.
    """
    home = database.parent.resolve()
    folder = (database.parent / recorded).resolve()
    own = home / "snapshots"
    if own.is_dir():
        inside = folder.parent == own
    else:
        inside = (
            folder.parent.name == "snapshots" and (folder.parent.parent / CURRENT_NAME).is_file()
        )
    if not inside:
        raise OutsideSnapshot(
            f"{database}: its recorded snapshot folder {recorded} is outside {own}; a "
            f"{DATABASE_NAME} reads only its warehouse's snapshots. Run `runcost run`, which "
            "rewrites it from the snapshot CURRENT names"
        )
    return folder.parent


def snapshot_record(folder: Path) -> dict | None:
    """snapshot.json of a published snapshot (None for snapshots written before it existed);
    raises DamagedRecord, naming the file and the fix, when it is not a whole record."""
    return read_record(folder)


def database_snapshot(warehouse: Path, name: str = DATABASE_NAME) -> tuple[str, str] | None:
    """(run_id, snapshot folder) that runcost.duckdb (or ``name``) reads, or None if none."""
    database = warehouse / name
    if not database.is_file():
        return None
    # attach from a fresh in-memory database: duckdb.connect(path) in a process that still has
    # the old file open returns that old database, not the file now at the path
    con = duckdb.connect()
    try:
        con.execute(f"attach '{sql_path(database)}' as served (read_only)")
        row = con.execute("select run_id, snapshot_folder from served.runcost_snapshot").fetchone()
    except duckdb.Error:
        return None
    finally:
        con.close()
    if not row:
        return None
    try:  # a folder outside the warehouse: this database serves nothing of it
        snapshots_folder(database, str(row[1]))
    except OutsideSnapshot:
        return None
    # the folder is relative to the warehouse (older databases: absolute)
    return (str(row[0]), str(warehouse / str(row[1])))


def unchanged_snapshot(
    warehouse: Path, hashes: dict[str, str], ignore: Iterable[str] = ()
) -> str | None:
    """The current run id when its snapshot holds exactly this content and serves it intact.

    Tables in ``ignore`` (those computed against the previous snapshot) are not compared.
    """
    skipped = set(ignore)
    current = current_snapshot(warehouse)
    if current is None:
        return None
    folder = warehouse / "snapshots" / current["run_id"]
    if damaged_files(folder):  # published again, whole
        return None
    record = snapshot_record(folder)
    if record is None or record.get("hash_algorithm") != HASH_ALGORITHM:
        return None
    entries = {**record["tables"], **record.get("views", {})}
    published = {
        name: item["content_hash"] for name, item in entries.items() if name not in skipped
    }
    compared = {name: value for name, value in hashes.items() if name not in skipped}
    # a hand-edited database must be republished even when the data is equal
    if published != compared or database_snapshot(warehouse) != (current["run_id"], str(folder)):
        return None
    return current["run_id"]


def recover(warehouse: Path) -> list[Path]:
    """Clean up after runs that died (call it holding the lock); return what was removed.

    Removes half-written snapshots, temporary databases and pointers, and makes CURRENT and
    latest agree with runcost.duckdb when a run died between the renames.
    """
    removed: list[Path] = []
    snapshots = warehouse / "snapshots"
    if snapshots.is_dir():
        for path in snapshots.iterdir():
            if path.name.startswith(".") and path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
    if warehouse.is_dir():
        for pattern in (
            f".{DATABASE_NAME}.*.tmp*",
            f".{DATABASE_NAME}.*.previous",
            f".{CURRENT_NAME}.*.tmp",
            f".{LATEST_NAME}.*.tmp",
            "runs/*/.manifest.json.*.tmp",
        ):
            for path in warehouse.glob(pattern):
                path.unlink(missing_ok=True)
                removed.append(path)
    served = database_snapshot(warehouse)
    pointer = warehouse / CURRENT_NAME
    current = _pointer(pointer) if pointer.is_file() else None
    if pointer.is_file() and current is None and not served:
        log.warning(
            "%s was empty or unreadable and %s serves nothing; removed it (nothing is published)",
            pointer,
            DATABASE_NAME,
            extra={"stage": "recover"},
        )
        pointer.unlink()
    if served and (current is None or current["run_id"] != served[0]):
        log.warning(
            "CURRENT named %s but runcost.duckdb serves %s (a run died between the two "
            "renames); CURRENT now names %s",
            current["run_id"] if current else "nothing",
            served[0],
            served[0],
            extra={"stage": "recover"},
        )
        write_current(warehouse, served[0], Path(served[1]))
    elif served and _link(warehouse) != relative_to(Path(served[1]), warehouse):
        log.warning(
            "%s named %s but runcost.duckdb serves %s (a run died between the renames); it "
            "now names %s",
            LATEST_NAME,
            _link(warehouse) or "nothing",
            served[0],
            served[0],
            extra={"stage": "recover"},
        )
        write_current(warehouse, served[0], Path(served[1]))
    return removed


def _link(warehouse: Path) -> str | None:
    """Where warehouse/latest points (None when it is missing or not a link)."""
    latest = warehouse / LATEST_NAME
    return os.readlink(latest) if latest.is_symlink() else None


def discard_snapshot(warehouse: Path, run_id: str) -> bool:
    """Delete the snapshot folder of a run that never became current; False if it is current."""
    current = current_snapshot(warehouse)
    folder = warehouse / "snapshots" / run_id
    if (current and current["run_id"] == run_id) or not folder.is_dir():
        return False
    remove_tree(folder)
    return True


def prune(
    snapshots: Path,
    keep: int,
    current: str,
    retention_days: int = 0,
    now: datetime | None = None,
) -> None:
    """Keep the current snapshot, the newest others (`keep` in all), and every snapshot that
    was current within the last `retention_days` days (for runcost sql --as-of)."""
    # readers that opened an older runcost.duckdb keep reading its snapshot, so keep a few
    finished = sorted(
        path
        for path in snapshots.iterdir()
        if path.is_dir() and not path.name.startswith(".") and path.name != current
    )
    cutoff = (now or datetime.now(UTC)) - timedelta(days=retention_days)
    published = {item.name: at for item, at in kept_snapshots(snapshots)}
    for path in finished[: max(len(finished) - (keep - 1), 0)]:
        # a snapshot stopped being current when the next one was published
        later = [at for name, at in published.items() if name > path.name]
        replaced_at = min(later) if later else None
        if retention_days and (replaced_at is None or replaced_at > cutoff):
            continue
        remove_tree(path)


def kept_snapshots(snapshots: Path) -> list[tuple[Path, datetime]]:
    """Every whole snapshot folder with when it was published, oldest first."""
    found = []
    if not snapshots.is_dir():
        return found
    for path in sorted(snapshots.iterdir()):
        if not path.is_dir() or path.name.startswith("."):
            continue
        try:
            record = snapshot_record(path)
        except DamagedRecord:  # a damaged snapshot.json: its time is in its name as well
            record = None
        stamp = record.get("published_at") if record else None
        if isinstance(stamp, str):
            found.append((path, datetime.fromisoformat(stamp)))
        else:  # written before snapshot.json: the run id starts with its UTC start time
            try:
                moment = datetime.strptime(path.name[:22], "%Y%m%dT%H%M%S%fZ")
            except ValueError:
                continue
            found.append((path, moment.replace(tzinfo=UTC)))
    return sorted(found, key=lambda item: (item[1], item[0].name))


def remove_tree(path: Path) -> None:
    # rename first: a crash mid-delete leaves a hidden folder for recover(), never a half
    # snapshot that looks whole
    trash = path.with_name(f".{path.name}.trash")
    os.replace(path, trash)
    shutil.rmtree(trash, ignore_errors=True)


def write_current(warehouse: Path, run_id: str, folder: Path) -> None:
    """Point CURRENT, then warehouse/latest, at ``folder`` (both relative: the warehouse moves)."""
    pointer = warehouse / CURRENT_NAME
    temporary = warehouse / f".{CURRENT_NAME}.{run_id}.tmp"
    name = relative_to(folder, warehouse)
    write_durably(temporary, json.dumps({"run_id": run_id, "snapshot": name}) + "\n")
    os.replace(temporary, pointer)
    link = warehouse / f".{LATEST_NAME}.{run_id}.tmp"
    link.unlink(missing_ok=True)
    os.symlink(name, link, target_is_directory=True)
    os.replace(link, warehouse / LATEST_NAME)  # a reader of latest/ sees the old or the new
    sync_directory(warehouse)


def relative_to(folder: Path, warehouse: Path) -> str:
    """A snapshot folder as CURRENT and latest name it: relative, so the warehouse can move."""
    try:
        return folder.relative_to(warehouse).as_posix()
    except ValueError:
        return str(folder)


def write_durably(path: Path, text: str) -> None:
    with path.open("w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


def sync_tree(root: Path) -> None:
    # so that a power cut after the rename cannot leave a current snapshot with empty files
    for folder, _, files in os.walk(root):
        for name in files:
            sync_file(Path(folder) / name)
        sync_directory(Path(folder))


def sync_file(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def sync_directory(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    except OSError:  # some filesystems refuse fsync on a directory; the rename still happened
        pass
    finally:
        os.close(descriptor)


def sql_path(path: Path) -> str:
    return str(path).replace("'", "''")


def open_database(database: Path, *, read_only: bool = True) -> duckdb.DuckDBPyConnection:
    """Open a runcost.duckdb in UTC with what its views need (reader_settings)."""
    from pipeline.common.duck import connect

    return connect(database, read_only=read_only, settings=reader_settings(database))
