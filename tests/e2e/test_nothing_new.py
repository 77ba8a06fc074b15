"""A night with nothing new is decided from the fingerprints, before any build, on every source;
anything that moves an input (telemetry, config, a delivery, the clock) builds again."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner
from focus_world import write_focus_world

from pipeline.cli.app import main
from pipeline.config.loader import load_config
from pipeline.run.nightly import RunResult, run_pipeline
from pipeline.scenario.worlds import write_world
from pipeline.warehouse.queries.status import warehouse_status

CLOCK = datetime(2026, 12, 7, 6, 0, tzinfo=UTC)


def _world(kind: str, folder: Path) -> Path:
    if kind == "focus":
        return write_focus_world(folder)
    return write_world(kind, folder)


def _record(result: RunResult) -> dict:
    return json.loads(result.manifest.read_text(encoding="utf-8"))


def _run(config_file: Path, now: datetime = CLOCK, **options: object) -> RunResult:
    return run_pipeline(load_config(config_file), now=now, **options)


@pytest.mark.parametrize("kind", ["aws", "gcp", "focus"])
def test_same_inputs_build_nothing_and_serve_the_current_snapshot(
    tmp_path: Path, kind: str
) -> None:
    config = _world(kind, tmp_path)
    first = _run(config)
    assert first.status == "published"
    assert "build" in first.stage_seconds

    second = _run(config)
    record = _record(second)
    assert second.status == "unchanged"
    assert "build" not in second.stage_seconds and "checks" not in second.stage_seconds
    # the telemetry files are those the first run read: not even read again
    assert "telemetry" not in second.stage_seconds
    assert second.snapshot == first.snapshot
    assert second.row_counts == first.row_counts
    assert second.content_hashes == first.content_hashes
    assert record["unchanged_from"] == first.run_id
    assert record["previous_snapshot"] == first.run_id
    assert "built_because" not in record["inputs"]
    assert record["inputs"]["fingerprints"] == _record(first)["inputs"]["fingerprints"]
    # what the serving run found is carried: the totals and period statuses stay readable
    assert record["totals"] == _record(first)["totals"]
    assert record["periods"] == _record(first)["periods"]
    assert not (second.manifest.parent / "build.duckdb").exists()

    # a run after an unchanged one finds the same: it is served by that run's record
    third = _run(config)
    assert third.status == "unchanged"
    assert _record(third)["unchanged_from"] == first.run_id
    shown = CliRunner().invoke(main, ["status", "--config", str(config)], env={"COLUMNS": "100"})
    assert "nothing new: the inputs equal those of the current snapshot" in shown.output
    months = sorted(_record(first)["period_builds"])
    assert months and all(
        build == {"action": "built", "why": ["no previous fingerprints"], "rows": "changed"}
        for build in _record(first)["period_builds"].values()
    )
    assert _record(third)["period_builds"] == {
        month: {"action": "carried forward", "why": ["nothing new"], "rows": "unchanged"}
        for month in months
    }
    assert f"{months[0]}: carried forward (nothing new); rows unchanged" in shown.output


def _edit_attempts(telemetry: Path, change: dict[str, str]) -> None:
    path = telemetry / "attempts.csv"
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    rows[0].update(change)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_changed_telemetry_builds_and_says_why(tmp_path: Path) -> None:
    config = write_world("aws", tmp_path)
    first = _run(config)
    _edit_attempts(tmp_path / "telemetry", {"model_version": "changed-late"})
    second = _run(config)
    record = _record(second)
    assert "build" in second.stage_seconds
    assert "telemetry" in record["inputs"]["built_because"]
    # the month whose attempts moved is named too
    assert any(item.endswith(" telemetry") for item in record["inputs"]["built_because"])
    assert second.run_id != first.run_id
    last = warehouse_status(tmp_path / "warehouse").last_run
    assert last is not None and last.built and "telemetry" in last.built_because
    shown = CliRunner().invoke(main, ["status", "--config", str(config)], env={"COLUMNS": "100"})
    assert "built because: " in shown.output and "telemetry" in shown.output
    # the month the attempt overlaps names its own telemetry first, then what all months share
    [(month, build)] = record["period_builds"].items()
    assert build["action"] == "built" and build["why"][0] == "telemetry"
    assert f"{month}: built (telemetry" in shown.output


def test_telemetry_files_written_again_with_the_same_rows_build_nothing(tmp_path: Path) -> None:
    config = write_world("aws", tmp_path)
    first = _run(config)
    _edit_attempts(tmp_path / "telemetry", {})  # the same rows, written anew
    second = _run(config)
    record = _record(second)
    assert "telemetry" in second.stage_seconds, "other bytes: the files are read"
    assert "build" not in second.stage_seconds, "the same rows: nothing to build"
    assert second.status == "unchanged" and record["unchanged_from"] == first.run_id
    third = _run(config)
    assert "telemetry" not in third.stage_seconds, "the bytes this run's record names"


def test_changed_config_builds(tmp_path: Path) -> None:
    config = write_world("aws", tmp_path)
    _run(config)
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("[warehouse]", "[warehouse]\nthreads = 2", 1), encoding="utf-8")
    record = _record(_run(config))
    assert "config" in record["inputs"]["built_because"]


def test_the_clock_decides_a_period_that_ends(tmp_path: Path) -> None:
    config = write_world("aws", tmp_path)
    before_end = datetime(2026, 10, 20, tzinfo=UTC)
    _run(config, now=before_end)
    assert _run(config, now=before_end.replace(day=22)).status == "unchanged"
    # the month ends: its status moves from open, so the build runs
    after = _run(config, now=datetime(2026, 11, 20, tzinfo=UTC))
    assert "2026-10 clock" in _record(after)["inputs"]["built_because"]


def test_full_refresh_builds_everything(tmp_path: Path) -> None:
    config = write_world("aws", tmp_path)
    _run(config)
    again = _run(config, full_refresh=True)
    record = _record(again)
    assert "build" in again.stage_seconds
    assert record["inputs"]["built_because"] == ["--full-refresh"]
    assert again.status == "unchanged"  # the same content, found by the build


def test_a_database_serving_another_snapshot_is_published_again(tmp_path: Path) -> None:
    config = write_world("aws", tmp_path)
    first = _run(config)
    con = duckdb.connect(str(first.database))
    con.execute("update runcost_snapshot set run_id = 'replaced-by-hand'")
    con.close()
    again = _run(config)
    assert "build" in again.stage_seconds
    assert again.status == "published"
