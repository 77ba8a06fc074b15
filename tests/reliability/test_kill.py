"""kill -9 of `runcost run` at every stage: the previous snapshot stays whole, a rerun recovers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from worlds import (
    change_telemetry,
    kill_hard,
    make_world,
    manifests,
    published_hashes,
    run_in_process,
    start_run,
    wait_for_pause,
)

from pipeline.config.loader import load_config
from pipeline.run.record import HISTORY_TABLES
from pipeline.warehouse.lock import LOCK_NAME
from pipeline.warehouse.publish import content_hash
from pipeline.warehouse.snapshots import DATABASE_NAME, open_database, snapshot_record

# the stages, and the steps of publish around its renames (pause points: pipeline/run/nightly.py)
BEFORE_COMMIT = ["ingest", "build", "checks", "publish:snapshot", "publish:database"]
# between the renames of the switch: runcost.duckdb (the commit point) is renamed, the record not
BETWEEN_RENAMES = [f"publish:switch:{name}" for name in (DATABASE_NAME, "CURRENT", "latest")]
AFTER_COMMIT = ["publish:pointer", "manifest"]


def served_hashes(warehouse: Path) -> dict[str, str]:
    """What a reader opening runcost.duckdb now sees, table by table."""
    con = open_database(warehouse / DATABASE_NAME)
    try:
        folder = con.execute("select snapshot_folder from runcost_snapshot").fetchone()[0]
        record = snapshot_record(warehouse / folder)
        assert record is not None
        # the history tables compare with the snapshot before; see worlds.published_hashes
        return {
            name: content_hash(con, name)[2]
            for name in record["tables"]
            if name not in HISTORY_TABLES
        }
    finally:
        con.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, template: Path) -> dict:
    """One warehouse for every kill: each test flips the telemetry, so each run changes content."""
    config = make_world(tmp_path_factory.mktemp("kill") / "world", template)
    change_telemetry(config)
    assert run_in_process(config) == "published"
    return {"config": config, "changed": True}


@pytest.mark.slow
@pytest.mark.parametrize("point", BEFORE_COMMIT + BETWEEN_RENAMES + AFTER_COMMIT)
def test_kill_at_each_stage_then_rerun(
    tmp_path: Path, point: str, world: dict, reference_hashes: dict, changed_hashes: dict
) -> None:
    config = world["config"]
    warehouse = load_config(config).warehouse
    previous_pointer = (warehouse / "CURRENT").read_text(encoding="utf-8")
    previous = published_hashes(warehouse)
    assert previous == (changed_hashes if world["changed"] else reference_hashes)
    world["changed"] = not world["changed"]
    change_telemetry(config, changed=world["changed"])
    expected = changed_hashes if world["changed"] else reference_hashes

    marker = tmp_path / "paused"
    process = start_run(config, pause_at=point, pause_file=marker)
    wait_for_pause(process, marker)
    # a reader opening the database now sees one whole snapshot: the old one until the commit
    assert served_hashes(warehouse) == (previous if point in BEFORE_COMMIT else expected)
    kill_hard(process)

    if point in BEFORE_COMMIT:
        assert (warehouse / "CURRENT").read_text(encoding="utf-8") == previous_pointer
        assert published_hashes(warehouse) == previous
    assert run_in_process(config) == ("published" if point in BEFORE_COMMIT else "unchanged")
    assert published_hashes(warehouse) == expected
    current = json.loads((warehouse / "CURRENT").read_text(encoding="utf-8"))["run_id"]
    assert os.readlink(warehouse / "latest") == f"snapshots/{current}"

    runs = manifests(warehouse)
    (killed,) = [item for item in runs if item.get("pid") == process.pid]
    assert killed["status"] == ("interrupted" if point in BEFORE_COMMIT else "published")
    # once the record has switched too there is nothing to recover
    assert killed.get("recovered", False) is (point not in AFTER_COMMIT)
    if point not in BEFORE_COMMIT:
        assert current == killed["run_id"]
    assert runs[-1]["status"] == ("published" if point in BEFORE_COMMIT else "unchanged")
    snapshots = [path.name for path in (warehouse / "snapshots").iterdir()]
    assert not [name for name in snapshots if name.startswith(".")], "half-written leftovers"
    assert not list(warehouse.glob(".*.tmp"))
    assert not (warehouse / "runs" / killed["run_id"] / "build.duckdb").exists()
    assert (warehouse / LOCK_NAME).read_text(encoding="utf-8") == "", "lock released"
    if point in BEFORE_COMMIT:  # the killed run's snapshot never became current: it is gone
        assert killed["run_id"] not in snapshots
