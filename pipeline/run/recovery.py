"""Runs that died: mark their manifests, drop their unpublished snapshots and build files."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

from pipeline.run.manifest import write_manifest
from pipeline.warehouse.snapshots import current_snapshot, discard_snapshot, recover

log = logging.getLogger("runcost")


def recover_dead_runs(warehouse: Path) -> None:
    """Under the lock: clean what dead runs left and record how they ended."""
    removed = recover(warehouse)
    current = current_snapshot(warehouse)
    current_id = current["run_id"] if current else None
    for manifest_path in sorted(warehouse.glob("runs/*/manifest.json")):
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if manifest.get("status") != "running":
            continue
        run_dir = manifest_path.parent
        if manifest.get("run_id") == current_id:
            # it died after its snapshot became current, before writing its outcome
            manifest.update(status="published", snapshot=current["snapshot"], recovered=True)
        else:
            manifest.update(status="interrupted", recovered=True)
            if discard_snapshot(warehouse, run_dir.name):
                removed.append(warehouse / "snapshots" / run_dir.name)
        # a killed build is of no use for inspection (unlike a failed check's): free the disk
        for leftover in ("build.duckdb", "build.duckdb.wal"):
            (run_dir / leftover).unlink(missing_ok=True)
        shutil.rmtree(run_dir / "tmp", ignore_errors=True)
        log.warning(
            "run %s stopped without recording its outcome (killed or crashed); marked %s",
            run_dir.name,
            manifest["status"],
            extra={"stage": "recover"},
        )
        write_manifest(run_dir, manifest)
    for path in removed:
        log.info("removed %s left by a run that died", path, extra={"stage": "recover"})
