"""Two runs on one warehouse: the second waits for the first or exits naming it; one result."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from worlds import finish, make_world, manifests, published_hashes, start_run, wait_for_pause

from pipeline.cli.app import main
from pipeline.config.loader import load_config


@pytest.mark.slow
def test_second_run_exits_at_once_naming_the_holder(
    tmp_path: Path, template: Path, reference_hashes: dict
) -> None:
    config = make_world(tmp_path / "world", template, lock_timeout=0)
    marker = tmp_path / "paused"
    first = start_run(config, pause_at="build", pause_file=marker)
    wait_for_pause(first, marker)

    second = CliRunner().invoke(main, ["run", "--config", str(config)])
    assert second.exit_code == 1
    holder = json.loads((load_config(config).warehouse / "run.lock").read_text(encoding="utf-8"))
    assert holder["pid"] == first.pid
    assert (
        f"another runcost run holds the warehouse lock (pid {first.pid} on host "
        f"{socket.gethostname()}, started {holder['started_at']}, run {holder['run_id']}); "
        "gave up after waiting 0.0 s (warehouse.lock_timeout_seconds = 0)"
    ) in second.output

    marker.unlink()
    code, _, err = finish(first)
    assert code == 0, err
    warehouse = load_config(config).warehouse
    assert published_hashes(warehouse) == reference_hashes
    assert [item["status"] for item in manifests(warehouse)] == ["published"]


@pytest.mark.slow
def test_second_run_waits_then_finds_nothing_changed(
    tmp_path: Path, template: Path, reference_hashes: dict
) -> None:
    config = make_world(tmp_path / "world", template, lock_timeout=120)
    marker = tmp_path / "paused"
    first = start_run(config, pause_at="checks", pause_file=marker)
    wait_for_pause(first, marker)
    second = start_run(config)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(second.stderr or []))
    reader.start()
    deadline = time.monotonic() + 60
    while not any("waiting up to 120 s" in line for line in lines):
        assert time.monotonic() < deadline and second.poll() is None, lines
        time.sleep(0.05)
    marker.unlink()  # the first run goes on; the second gets the lock when it ends

    first_code, _, first_err = finish(first)
    assert second.wait(timeout=120) == 0 and first_code == 0, first_err + "".join(lines)
    reader.join(timeout=30)
    second_err = "".join(lines)
    waiting = json.loads(next(line for line in lines if "waiting up to" in line))
    assert waiting["stage"] == "lock"
    assert (
        f"for the run holding {load_config(config).warehouse / 'run.lock'}: pid {first.pid}"
        in (waiting["message"])
    )
    assert "no change: the inputs equal those of snapshot" in second_err
    warehouse = load_config(config).warehouse
    assert [item["status"] for item in manifests(warehouse)] == ["published", "unchanged"]
    assert published_hashes(warehouse) == reference_hashes


@pytest.mark.slow
def test_two_runs_started_together(tmp_path: Path, template: Path, reference_hashes: dict) -> None:
    config = make_world(tmp_path / "world", template, lock_timeout=120)
    runs = [start_run(config), start_run(config)]
    results = [finish(process) for process in runs]
    assert [code for code, _, _ in results] == [0, 0], [err for _, _, err in results]
    warehouse = load_config(config).warehouse
    assert sorted(item["status"] for item in manifests(warehouse)) == ["published", "unchanged"]
    assert len(list((warehouse / "snapshots").iterdir())) == 1
    assert published_hashes(warehouse) == reference_hashes
