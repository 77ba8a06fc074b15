"""Refusals that once said too little: a failed check whose cause is in the bill says the
delivery, file, rows and column to fix; a run that failed is recorded failed."""

from __future__ import annotations

import errno
import json
import re
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner
from damaged_pages import break_page
from test_refusals import one_error, redeliver, world
from test_status import status
from worlds import make_world, manifests, published_hashes, run_in_process

from pipeline.cli.app import main
from pipeline.config.loader import load_config
from pipeline.run import recovery
from pipeline.run.manifest import RESERVED_BYTES
from pipeline.warehouse import publish as publish_module
from pipeline.warehouse.lock import WarehouseLock

PARENT = "i-0a2b4c6d8e0f10061"  # the EC2 instance the scenario's EKS pods split


def parent_without_resource_id(table: pa.Table) -> pa.Table:
    """The parent instance's own lines lose line_item_resource_id; its pods' split rows keep
    naming it."""
    column = "line_item_resource_id"
    cells = [None if cell == PARENT else cell for cell in table.column(column).to_pylist()]
    index = table.schema.get_field_index(column)
    return table.set_column(index, table.schema.field(column), pa.array(cells, pa.string()))


def test_null_resource_ids_on_split_parents_name_the_rows_and_the_fix(
    tmp_path: Path, template: Path
):
    config, warehouse = world(tmp_path, template)
    pointer = (warehouse / "CURRENT").read_text(encoding="utf-8")
    before = published_hashes(warehouse)
    data = redeliver(config, parent_without_resource_id)

    result = CliRunner().invoke(main, ["run", "--config", str(config)])

    assert result.exit_code == 1
    first = result.output[result.output.index("error: ") :].splitlines()[0]
    delivery = re.search(r"\(delivery ([^)]+)\)", first)
    assert delivery is not None, first
    cause = (
        "9 EC2 instance line(s) of those hours have no resource id, so the split cost rows find "
        f"no instance line to add up to: runcost-cur 2026-10 (delivery {delivery[1]}), "
        f"{data.name}, rows 923, 924, 925, 944, 945 and 4 more, column "
        'line_item_resource_id is empty. Enable "Include resource IDs" in the CUR export '
        "(split cost allocation data needs them) and let AWS re-deliver the period, or "
        "re-deliver the file as AWS wrote it"
    )
    assert first == (
        "error: check split_cost_matches_instance failed: 3 row(s) break it, because "
        f"{cause}; first rows:"
    )
    assert one_error(result.output)
    assert "nothing was published; the previous snapshot stays current" in result.output
    assert (warehouse / "CURRENT").read_text(encoding="utf-8") == pointer
    assert published_hashes(warehouse) == before
    record = manifests(warehouse)[-1]
    assert record["status"] == "failed_checks"
    said = f"check split_cost_matches_instance failed, because {cause}"
    assert record["error"] == said
    text = " ".join(status(config).split())  # `runcost status` says why, not only the name
    assert f"error: {said} " in text
    assert "checks: 10 of 11 passed; failed: split_cost_matches_instance" in text


def no_space(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_failure_on_a_full_disk_is_recorded_over_the_running_record(
    tmp_path: Path, template: Path, monkeypatch: pytest.MonkeyPatch
):
    """A full disk fails the publish, and no new file can be written: the failed record is
    written over the running one, in the room it kept, so the file on disk says failed."""
    config = make_world(tmp_path / "world", template)
    warehouse = load_config(config).warehouse
    monkeypatch.setattr(publish_module, "write_views", no_space)
    monkeypatch.setattr(recovery, "write_manifest", no_space)  # every new file: disk full

    result = CliRunner().invoke(main, ["run", "--config", str(config)])

    assert result.exit_code == 1
    assert "could not record the failure" not in result.output
    (path,) = warehouse.glob("runs/*/manifest.json")
    assert path.stat().st_size == RESERVED_BYTES, "written in place, in the bytes it held"
    assert not list(path.parent.glob(".manifest.json*"))
    (record,) = manifests(warehouse)
    assert record["status"] == "failed"
    assert record["error"].startswith("PublishError: disk full while writing the snapshot to ")
    assert "[Errno 28] No space left on device; nothing was published" in record["error"]
    assert record["finished_at"] >= record["started_at"]
    assert "ingest" in record["stage_seconds"] and "inputs" in record
    found = json.loads(status(config, "--format", "json"))["last_run"]
    assert (found["status"], found["error"]) == ("failed", record["error"])

    monkeypatch.undo()
    assert run_in_process(config) == "published", "the next run goes through"
    assert [item["status"] for item in manifests(warehouse)] == ["failed", "published"]


def test_a_run_that_could_not_record_its_failure_shows_failed(
    tmp_path: Path, template: Path, monkeypatch: pytest.MonkeyPatch
):
    """A failed publish and then no way to write the failed record at all (not even over the
    running one): the record on disk still says running, and status says the run failed, not
    that it is running."""
    config = make_world(tmp_path / "world", template)
    warehouse = load_config(config).warehouse

    monkeypatch.setattr(publish_module, "write_views", no_space)
    monkeypatch.setattr(recovery, "write_manifest", no_space)
    monkeypatch.setattr(recovery, "rewrite_in_place", no_space)
    result = CliRunner().invoke(main, ["run", "--config", str(config)])
    assert result.exit_code == 1
    (record,) = manifests(warehouse)
    assert record["status"] == "running", "the failure could not be recorded"

    found = json.loads(status(config, "--format", "json"))
    assert found["running"] is None
    assert found["last_run"]["status"] == "failed"
    error = (
        f"crashed or stopped: the process (pid {record['pid']}) is gone without recording how "
        "the run ended (killed, or the disk was full); see its log for the error, free disk "
        "space if it is full, and run again (the next run records it as interrupted)"
    )
    assert found["last_run"]["error"] == error
    text = " ".join(status(config).split())  # the terminal wraps long lines
    assert f"last run: {record['run_id']}: failed, started {record['started_at']}" in text
    assert f"error: {error} checks: 0 of 0 passed" in text

    monkeypatch.undo()
    assert run_in_process(config) == "published", "the next run goes through"
    assert [item["status"] for item in manifests(warehouse)] == ["interrupted", "published"]


def test_a_run_holding_the_lock_is_still_running(tmp_path: Path, template: Path):
    config = make_world(tmp_path / "world", template)
    warehouse = load_config(config).warehouse
    run_dir = warehouse / "runs" / "20261101T000000000000Z-abcdef"
    run_dir.mkdir(parents=True)
    record = {"run_id": run_dir.name, "status": "running", "started_at": "2026-11-01T00:00:00"}
    (run_dir / "manifest.json").write_text(json.dumps({**record, "pid": 1}), encoding="utf-8")

    with WarehouseLock(warehouse, timeout=0, run_id=run_dir.name):
        held = json.loads(status(config, "--format", "json"))["last_run"]
    gone = json.loads(status(config, "--format", "json"))["last_run"]

    assert (held["status"], "error" in held) == ("running", False)
    assert gone["status"] == "failed"
    assert gone["error"].startswith("crashed or stopped: the process (pid 1) is gone ")


def test_a_corrupt_page_in_a_re_delivery_keeps_the_snapshot_and_a_whole_copy_is_read(
    tmp_path: Path, template: Path
):
    config, warehouse = world(tmp_path, template)
    pointer = (warehouse / "CURRENT").read_text(encoding="utf-8")
    before = published_hashes(warehouse)
    stored = sorted((warehouse / "raw").rglob("*"))
    data = redeliver(config, lambda table: table)
    whole = data.read_bytes()
    break_page(data, "line_item_unblended_cost")

    result = CliRunner().invoke(main, ["run", "--config", str(config)])

    assert result.exit_code == 1
    assert one_error(result.output) == (
        f"error: {data}: cannot be read through (Variable-length int over 10 bytes.), so the "
        "copy is damaged or cut short: re-deliver the file as AWS wrote it (copy it again from "
        "the export's bucket, or wait for the export's next delivery of the period, which "
        "replaces it) and run again; nothing of this delivery was stored in raw/ and the "
        "current snapshot is unchanged, so the corrected copy is read afresh on the next run"
    )
    assert (warehouse / "CURRENT").read_text(encoding="utf-8") == pointer
    assert published_hashes(warehouse) == before
    assert sorted((warehouse / "raw").rglob("*")) == stored
    assert manifests(warehouse)[-1]["status"] == "failed"

    data.write_bytes(whole)  # the operator copies the file again; same manifest
    assert run_in_process(config) == "published", "the whole copy is read afresh"
    runs = manifests(warehouse)
    assert runs[-1]["totals"] == runs[0]["totals"]
