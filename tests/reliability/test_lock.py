"""The warehouse lock: one holder, a clear message for the others, stale locks taken over."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pipeline.warehouse.lock import LOCK_NAME, LockBusy, WarehouseLock, read_holder, running_holder


def test_a_second_holder_waits_then_fails_naming_the_first(tmp_path: Path) -> None:
    with WarehouseLock(tmp_path, timeout=0, run_id="run-a") as first:
        holder = read_holder(tmp_path / LOCK_NAME)
        assert holder is not None
        assert (holder.pid, holder.host, holder.run_id) == (
            os.getpid(),
            socket.gethostname(),
            "run-a",
        )
        assert running_holder(tmp_path) == holder
        started = time.monotonic()
        with pytest.raises(LockBusy) as caught:
            WarehouseLock(tmp_path, timeout=0.5, run_id="run-b", poll=0.05).acquire()
        assert time.monotonic() - started >= 0.5
        message = re.sub(r"waiting \d+\.\d s", "waiting N s", str(caught.value))
        assert message == (
            f"{tmp_path / LOCK_NAME}: another runcost run holds the warehouse lock (pid "
            f"{os.getpid()} on host {socket.gethostname()}, started {holder.started_at}, run "
            "run-a); gave up after waiting N s (warehouse.lock_timeout_seconds = 0.5). Let that "
            "run finish, or stop that process, then run again"
        )
        assert first.waited < 0.5
    assert (tmp_path / LOCK_NAME).read_text(encoding="utf-8") == "", "a clean release clears it"
    assert running_holder(tmp_path) is None


def test_a_waiter_gets_the_lock_when_the_holder_releases_it(tmp_path: Path) -> None:
    first = WarehouseLock(tmp_path, timeout=0)
    first.acquire()
    second = WarehouseLock(tmp_path, timeout=10, poll=0.05)

    timer = threading.Timer(0.3, first.release)
    timer.start()
    second.acquire()
    assert 0.2 <= second.waited < 5
    second.release()


def test_the_lock_of_a_dead_process_is_taken_over(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    pid = int(gone.stdout)
    record = {
        "pid": pid,
        "host": socket.gethostname(),
        "started_at": "2026-11-01T06:30:00+00:00",
        "run_id": "20261101T063000Z-3fa2c1",
    }
    (tmp_path / LOCK_NAME).write_text(json.dumps(record), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="runcost"), WarehouseLock(tmp_path, timeout=0):
        pass
    assert caplog.messages == [
        f"took over the stale warehouse lock of a run that died (pid {pid} on host "
        f"{socket.gethostname()}, started 2026-11-01T06:30:00+00:00, run "
        "20261101T063000Z-3fa2c1; no longer running)"
    ]


def test_a_killed_holder_releases_the_lock(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; "
            "from pipeline.warehouse.lock import WarehouseLock; "
            "WarehouseLock(Path(sys.argv[1]), 0).acquire(); print('held', flush=True); "
            "time.sleep(60)",
            str(tmp_path),
        ],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    assert running_holder(tmp_path) is not None
    with pytest.raises(LockBusy):
        WarehouseLock(tmp_path, timeout=0).acquire()
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=30)
    with WarehouseLock(tmp_path, timeout=0):
        assert read_holder(tmp_path / LOCK_NAME).pid == os.getpid()
