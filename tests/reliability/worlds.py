"""Reliability test helpers: scenario worlds, `runcost run` subprocesses, content hashes."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.config.loader import load_config
from pipeline.run.nightly import run_pipeline
from pipeline.run.record import HISTORY_TABLES
from pipeline.scenario import write_scenario
from pipeline.warehouse.publish import content_hash
from pipeline.warehouse.snapshots import (
    DATABASE_NAME,
    current_snapshot,
    open_database,
    snapshot_record,
)

ROOT = Path(__file__).resolve().parents[2]
# att-llm-01 with 4 GPUs instead of 8: the GPU-seconds pools split differently, the bill is equal
ORIGINAL_ROW = ",A100,8,1,on_demand,2026-10-05T07:52:00Z"
CHANGED_ROW = ",A100,4,1,on_demand,2026-10-05T07:52:00Z"


def make_world(folder: Path, template: Path | None = None, lock_timeout: float = 60) -> Path:
    """The scenario in ``folder`` (copied from ``template`` when given, which is faster);
    returns its runcost.toml with the lock timeout set."""
    if template is None:
        config = write_scenario(folder)
    else:
        shutil.copytree(template, folder, ignore=shutil.ignore_patterns("warehouse"))
        config = folder / "runcost.toml"
    text = config.read_text(encoding="utf-8")
    text = re.sub(r"(?m)^lock_timeout_seconds = .*\n", "", text)
    text = text.replace(
        '[warehouse]\npath = "warehouse"\n',
        f'[warehouse]\npath = "warehouse"\nlock_timeout_seconds = {lock_timeout}\n',
    )
    assert "lock_timeout_seconds" in text
    config.write_text(text, encoding="utf-8")
    return config


def change_telemetry(config: Path, changed: bool = True) -> None:
    """Switch att-llm-01 between 8 GPUs (the scenario) and 4 (a different snapshot)."""
    attempts = config.parent / "telemetry" / "attempts.csv"
    text = attempts.read_text(encoding="utf-8")
    old, new = (ORIGINAL_ROW, CHANGED_ROW) if changed else (CHANGED_ROW, ORIGINAL_ROW)
    assert text.count(old) == 1
    attempts.write_text(text.replace(old, new), encoding="utf-8")


def published_hashes(warehouse: Path) -> dict[str, str]:
    """Hashes of every table read back through runcost.duckdb; each must match snapshot.json."""
    current = current_snapshot(warehouse)
    assert current is not None, "nothing is published"
    record = snapshot_record(Path(current["snapshot"]))
    assert record is not None
    con = open_database(warehouse / DATABASE_NAME)
    try:
        served = con.execute("select run_id from runcost_snapshot").fetchone()[0]
        hashes = {name: content_hash(con, name)[2] for name in record["tables"]}
    finally:
        con.close()
    assert served == current["run_id"], "runcost.duckdb and CURRENT disagree"
    assert hashes == {name: item["content_hash"] for name, item in record["tables"].items()}
    # cost_changes and estimate_errors compare with the snapshot before: same inputs, same
    # outputs holds for every other table
    return {name: value for name, value in hashes.items() if name not in HISTORY_TABLES}


def run_in_process(config: Path) -> str:
    """One run in this process; returns its status (published or unchanged)."""
    return run_pipeline(load_config(config)).status


def start_run(
    config: Path, pause_at: str | None = None, pause_file: Path | None = None
) -> subprocess.Popen[str]:
    """`runcost run` as a separate process, optionally stopping at a checkpoint (paused_run.py)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    if pause_at:
        assert pause_file is not None
        launcher = [str(ROOT / "tests" / "paused_run.py"), pause_at, str(pause_file)]
    else:
        launcher = ["-c", "from pipeline.cli import main; main()"]
    return subprocess.Popen(
        [sys.executable, *launcher, "--log-format", "json", "run", "--config", str(config)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_pause(process: subprocess.Popen[str], marker: Path, timeout: float = 60) -> None:
    """Wait until the process stops at its pause point (it writes the marker file)."""
    deadline = time.monotonic() + timeout
    while not marker.exists():
        if process.poll() is not None:
            _out, err = process.communicate()
            pytest.fail(f"the run ended (exit {process.returncode}) before pausing:\n{err}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"the run did not reach its pause point within {timeout} s")
        time.sleep(0.02)


def kill_hard(process: subprocess.Popen[str]) -> None:
    """kill -9, then reap it."""
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=30)
    assert process.returncode == -signal.SIGKILL


def finish(process: subprocess.Popen[str], timeout: float = 120) -> tuple[int, str, str]:
    """Wait for the process; (exit code, stdout, stderr)."""
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def manifests(warehouse: Path) -> list[dict]:
    """Every run's manifest, oldest first."""
    return [
        json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(warehouse.glob("runs/*/manifest.json"))
    ]
