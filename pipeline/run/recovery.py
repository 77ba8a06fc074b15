"""Runs that died: mark their manifests, drop their unpublished snapshots and build files."""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

from pipeline.ingest.provider import SCRATCH
from pipeline.run.as_of import write_snapshot_database
from pipeline.run.manifest import rewrite_in_place, write_manifest
from pipeline.warehouse.commit import check_database
from pipeline.warehouse.integrity import DamagedFile, DamagedRecord, damaged_files
from pipeline.warehouse.snapshots import (
    DATABASE_NAME,
    current_snapshot,
    database_snapshot,
    discard_snapshot,
    recover,
    snapshot_record,
)

log = logging.getLogger("runcost")


def recover_dead_runs(warehouse: Path) -> None:
    """Under the lock: clean what dead runs left, repair what they broke, record how they ended.

    Repairs an empty or partial CURRENT and a runcost.duckdb that does not read back (from the
    snapshot CURRENT names); removes temporary files and the ingest staging folders of dead
    runs (a run holding the lock has not started its own). Each repair is logged.
    """
    removed = recover(warehouse)
    staging = warehouse / SCRATCH
    if staging.is_dir():
        removed.extend(sorted(staging.iterdir()))
        shutil.rmtree(staging, ignore_errors=True)
    removed.extend(path for path in warehouse.glob("runs/*/.manifest.json.tmp") if path.is_file())
    for path in warehouse.glob("runs/*/.manifest.json.tmp"):
        path.unlink(missing_ok=True)
    repair_database(warehouse)
    current = current_snapshot(warehouse)
    current_id = current["run_id"] if current else None
    for manifest_path in sorted(warehouse.glob("runs/*/manifest.json")):
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        run_dir = manifest_path.parent
        if manifest.get("status") == "published":
            # killed after its record switched in, before it deleted its build: never kept
            _drop_build(run_dir)
        if manifest.get("status") == "failed" and manifest.get("run_id") == current_id:
            # its switch failed and could not be undone: its snapshot is the one served
            _mark_published(run_dir, manifest, current["snapshot"])
            continue
        if manifest.get("status") != "running":
            continue
        if manifest.get("run_id") == current_id:
            # it died after its snapshot became current, before writing its outcome
            manifest.update(status="published", snapshot=current["snapshot"], recovered=True)
        else:
            manifest.update(status="interrupted", recovered=True)
            if discard_snapshot(warehouse, run_dir.name):
                removed.append(warehouse / "snapshots" / run_dir.name)
        # a killed build is of no use for inspection (unlike a failed check's): free the disk
        _drop_build(run_dir)
        log.warning(
            "run %s stopped without recording its outcome (killed or crashed); marked %s",
            run_dir.name,
            manifest["status"],
            extra={"stage": "recover"},
        )
        write_manifest(run_dir, manifest)
    for path in removed:
        log.warning("removed %s left by a run that died", path, extra={"stage": "recover"})


def damaged_current(warehouse: Path) -> list[DamagedFile]:
    """The current snapshot's missing or damaged files, named in one warning: the run builds
    every table again from raw/ and the telemetry and publishes a whole snapshot instead."""
    current = current_snapshot(warehouse)
    if current is None:
        return []
    found = damaged_files(Path(current["snapshot"]))
    if found:
        log.warning(
            "the current snapshot %s is damaged: %s; this run rebuilds it from raw/ and the "
            "telemetry%s and publishes it whole",
            current["run_id"],
            "; ".join(f"{item.path}: {item.problem}" for item in found),
            " it reads (not the damaged published telemetry)"
            if published_telemetry_damaged(warehouse, found)
            else "",
            extra={"stage": "recover"},
        )
    return found


def published_telemetry_damaged(warehouse: Path, found: list[DamagedFile]) -> bool:
    """Whether one of ``found`` is a telemetry table of the current snapshot."""
    current = current_snapshot(warehouse)
    folder = Path(current["snapshot"]) / "telemetry" if current else None
    return folder is not None and any(Path(item.path).parent == folder for item in found)


def note_repaired(found: list[DamagedFile], run_id: str) -> None:
    """Say what a run that published over a damaged snapshot repaired."""
    log.warning(
        "repaired the damaged snapshot: snapshot %s is current and whole; rebuilt %s",
        run_id,
        ", ".join(item.path for item in found),
        extra={"stage": "publish"},
    )


def _mark_published(run_dir: Path, manifest: dict, snapshot: str) -> None:
    manifest.update(status="published", snapshot=snapshot, recovered=True)
    _drop_build(run_dir)
    log.warning(
        "run %s recorded a failed switch, but its snapshot is the one %s serves; marked published",
        run_dir.name,
        DATABASE_NAME,
        extra={"stage": "recover"},
    )
    write_manifest(run_dir, manifest)


def _drop_build(run_dir: Path) -> None:
    for leftover in ("build.duckdb", "build.duckdb.wal"):
        (run_dir / leftover).unlink(missing_ok=True)
    shutil.rmtree(run_dir / "tmp", ignore_errors=True)


def repair_database(warehouse: Path) -> None:
    """Rewrite runcost.duckdb from the current snapshot when it does not read back."""
    current = current_snapshot(warehouse)
    database = warehouse / DATABASE_NAME
    if current is None or database_snapshot(warehouse) is not None:
        return
    folder = Path(current["snapshot"])
    try:
        if snapshot_record(folder) is None:
            return
    except DamagedRecord:  # the run publishes a whole snapshot instead (damaged_current)
        return
    temporary = warehouse / f".{DATABASE_NAME}.repair.tmp"
    temporary.unlink(missing_ok=True)
    write_snapshot_database(folder, temporary)
    check_database(temporary, current["run_id"])
    os.replace(temporary, database)
    log.warning(
        "%s was missing, empty or unreadable (a crash or a full disk); rewrote it from the "
        "current snapshot %s",
        database,
        current["run_id"],
        extra={"stage": "recover"},
    )


def record_failure(run_dir: Path, manifest: dict) -> None:
    """Write a failed run's record; a full disk must not hide the error that ended the run, so
    when a new file cannot be written the record is written over the running one, in the room
    it kept (manifest.rewrite_in_place)."""
    try:
        write_manifest(run_dir, manifest)
        return
    except OSError as error:
        (run_dir / ".manifest.json.tmp").unlink(missing_ok=True)
        failure = error
    try:
        if rewrite_in_place(run_dir, manifest):
            return
    except OSError as error:
        failure = error
    log.warning(
        "could not record the failure in %s (%s); the next run marks it interrupted",
        run_dir / "manifest.json",
        failure.strerror or failure,
        extra={"stage": "record"},
    )


def record_published(run_dir: Path, manifest: dict) -> Path:
    """Rewrite a published run's record with its timings; it already says published."""
    try:
        return write_manifest(run_dir, manifest)
    except OSError as error:
        (run_dir / ".manifest.json.tmp").unlink(missing_ok=True)
        log.warning(
            "the snapshot is current, but its record's final timings could not be written (%s)",
            error.strerror or error,
            extra={"stage": "record"},
        )
        return run_dir / "manifest.json"


def manifest_text(manifest: dict) -> str:
    return json.dumps(manifest, indent=2, default=str) + "\n"
