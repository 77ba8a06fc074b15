"""The run manifest records every run, including the ones that fail before publishing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.common.errors import CheckFailed, InputError
from pipeline.config.loader import load_config
from pipeline.dag.models import discover, parse_model
from pipeline.run import nightly as run_module
from pipeline.run.nightly import run_pipeline
from pipeline.scenario import write_scenario


def only_manifest(warehouse: Path) -> dict:
    (run_dir,) = (warehouse / "runs").iterdir()
    return json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))


def test_bad_input_is_recorded_and_nothing_is_published(tmp_path: Path) -> None:
    config_file = write_scenario(tmp_path / "world")
    attempts = tmp_path / "world" / "telemetry" / "attempts.csv"
    lines = attempts.read_text(encoding="utf-8").splitlines()
    attempts.write_text("\n".join([*lines, lines[1]]) + "\n", encoding="utf-8")  # a duplicate
    config = load_config(config_file)
    with pytest.raises(InputError, match="attempt_id"):
        run_pipeline(config)
    manifest = only_manifest(config.warehouse)
    assert manifest["status"] == "failed"
    assert manifest["error"].startswith("InputError: ")
    assert "finished_at" in manifest
    assert not (config.warehouse / "runcost.duckdb").exists()
    assert not (config.warehouse / "CURRENT").exists()


def test_failed_check_keeps_the_previous_snapshot(tmp_path: Path, monkeypatch) -> None:
    config = load_config(write_scenario(tmp_path / "world"))
    first = run_pipeline(config)
    published = (config.warehouse / "CURRENT").read_text(encoding="utf-8")

    failing = parse_model(
        "checks",
        "always_fails",
        "-- A check that every cost line breaks.\n-- grain: one row per line_id\n"
        "with final as (select line_id from normalized.cost_lines)\nselect * from final",
    )
    monkeypatch.setattr(run_module, "discover", lambda: [*discover(), failing])
    # the inputs are the first run's: a model added in-process, not in sql/, moves no
    # fingerprint, so the run is told to build
    with pytest.raises(CheckFailed) as caught:
        run_pipeline(config, full_refresh=True)

    message = str(caught.value)
    lines = first.row_counts["normalized.cost_line_facts"]
    assert f"check always_fails failed: {lines} row(s) break it; first rows:" in message
    assert "nothing was published; the previous snapshot stays current" in message
    assert "the failed build is kept for inspection: duckdb " in message
    assert (config.warehouse / "CURRENT").read_text(encoding="utf-8") == published
    assert first.database.is_file()
    manifests = [
        json.loads((path / "manifest.json").read_text(encoding="utf-8"))
        for path in sorted((config.warehouse / "runs").iterdir())
    ]
    assert sorted(item["status"] for item in manifests) == ["failed_checks", "published"]
    failed = next(item for item in manifests if item["status"] == "failed_checks")
    assert failed["checks"]["always_fails"] == "failed"
    assert failed["checks"]["conservation"] == "passed"
    kept = Path(message.rsplit("duckdb ", 1)[1].strip())
    assert kept.is_file()


def test_a_second_run_on_unchanged_inputs_publishes_nothing(tmp_path: Path) -> None:
    config = load_config(write_scenario(tmp_path / "world"))
    first = run_pipeline(config)
    pointer = (config.warehouse / "CURRENT").read_text(encoding="utf-8")
    second = run_pipeline(config)

    assert (first.status, second.status) == ("published", "unchanged")
    assert second.content_hashes == first.content_hashes
    assert second.snapshot == first.snapshot and second.database == first.database
    assert (config.warehouse / "CURRENT").read_text(encoding="utf-8") == pointer
    assert [path.name for path in (config.warehouse / "snapshots").iterdir()] == [first.run_id]
    records = [
        json.loads((path / "manifest.json").read_text(encoding="utf-8"))
        for path in sorted((config.warehouse / "runs").iterdir())
    ]
    assert [item["status"] for item in records] == ["published", "unchanged"]
    assert records[1]["unchanged_from"] == first.run_id
    assert records[0]["content_hash"] == records[1]["content_hash"]
    assert records[1]["content_hashes"] == first.content_hashes
    # decided from the fingerprints: the telemetry files are not read, nothing is built
    assert set(records[1]["stage_seconds"]) == {"ingest", "publish"}


def test_manifest_record_leaves_out_what_the_run_did_not_reach(tmp_path: Path) -> None:
    from pipeline.run.manifest import RunManifest

    manifest = RunManifest("r1", "0.1.0", None, "fp", "ch", "2026-11-05T00:00:00+00:00")
    written = json.loads(manifest.write(tmp_path).read_text(encoding="utf-8"))
    assert written["status"] == "running" and written["pid"] > 0
    assert "outputs" not in written and written["config_file"] is None
    manifest.previous_snapshot = None  # reached, and there was none: written as null
    manifest.finish("failed", {"ingest": 0.5}, error="InputError: bad", snapshot=None)
    written = json.loads(manifest.write(tmp_path).read_text(encoding="utf-8"))
    assert (written["status"], written["error"], written["stage_seconds"]) == (
        "failed",
        "InputError: bad",
        {"ingest": 0.5},
    )
    assert "finished_at" in written and written["previous_snapshot"] is None
    assert "snapshot" not in written
    with pytest.raises(AttributeError, match="no field outptus"):
        manifest.finish("published", {}, outptus={})


def test_a_running_record_keeps_room_for_its_outcome_written_in_place(tmp_path: Path) -> None:
    from pipeline.run.manifest import RESERVED_BYTES, RunManifest, rewrite_in_place

    manifest = RunManifest("r1", "0.1.0", None, "fp", "ch", "2026-11-05T00:00:00+00:00")
    path = manifest.write(tmp_path)
    assert path.stat().st_size == RESERVED_BYTES
    assert json.loads(path.read_text(encoding="utf-8"))["status"] == "running"  # spaces: JSON

    manifest.inputs = {"deliveries": [{"files": "x"}] * 3}
    manifest.finish("failed", {"ingest": 0.5}, error="OSError: No space left on device")
    assert rewrite_in_place(tmp_path, manifest.record())
    assert path.stat().st_size == RESERVED_BYTES, "not one byte more"
    assert json.loads(path.read_text(encoding="utf-8")) == manifest.record()

    # too long: only the outcome fields are kept (the others named), then the error is cut
    manifest.inputs = {"deliveries": [{"files": "x" * 100}] * 200}
    manifest.error = "InputError: " + "e" * 20_000
    assert rewrite_in_place(tmp_path, manifest.record())
    written = json.loads(path.read_text(encoding="utf-8"))
    assert (written["status"], written["stage_seconds"]) == ("failed", {"ingest": 0.5})
    assert written["left_out"] == ["inputs"]
    assert written["error"].startswith("InputError: eee") and written["error"].endswith("...")
    assert len(path.read_bytes().rstrip()) > RESERVED_BYTES - 100, "the error fills the room"
    assert path.stat().st_size == RESERVED_BYTES

    # a finished record keeps no room: a longer one does not fit over it, and nothing is written
    finished = tmp_path / "finished"
    finished.mkdir()
    manifest.inputs, manifest.error = {}, "InputError: bad"
    path = manifest.write(finished)
    before = path.read_bytes()
    assert len(before) < 2_000
    assert not rewrite_in_place(finished, {"status": "failed", "run_id": "r" * 5_000})
    assert path.read_bytes() == before
