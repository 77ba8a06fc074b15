"""One run at a time: an OS lock on warehouse/run.lock, with the holder's pid, host and start."""

from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from pipeline.common.errors import RuncostError

LOCK_NAME = "run.lock"
DEFAULT_TIMEOUT_SECONDS = 600.0
log = logging.getLogger("runcost")


class LockBusy(RuncostError):
    """Another run holds the warehouse lock and did not finish within the timeout."""


@dataclass(frozen=True)
class Holder:
    """Who holds (or last held) the lock."""

    pid: int
    host: str
    started_at: str
    run_id: str | None = None

    def describe(self) -> str:
        run = f", run {self.run_id}" if self.run_id else ""
        return f"pid {self.pid} on host {self.host}, started {self.started_at}{run}"

    def alive(self) -> bool | None:
        """Whether the process exists; None when it runs on another host (cannot tell)."""
        if self.host != socket.gethostname():
            return None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


class WarehouseLock:
    """``with WarehouseLock(warehouse, timeout, run_id):`` runs the body holding the lock.

    flock is released by the kernel when the holder dies, so a crashed run never blocks the
    next one; the holder record left behind only tells the next run whom it took over from.
    """

    def __init__(
        self, warehouse: Path, timeout: float, run_id: str | None = None, poll: float = 0.2
    ) -> None:
        self.path = warehouse / LOCK_NAME
        self.timeout = timeout
        self.run_id = run_id
        self.poll = poll
        self.waited = 0.0
        self._descriptor: int | None = None

    def __enter__(self) -> WarehouseLock:
        self.acquire()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()

    def acquire(self) -> Holder:
        """Take the lock, waiting up to the timeout; raise LockBusy naming the holder."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        started = time.monotonic()
        announced = False
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waited = time.monotonic() - started
                holder = read_holder(self.path)
                who = holder.describe() if holder else "a process that has not said who it is"
                if waited >= self.timeout:
                    os.close(descriptor)
                    raise LockBusy(
                        f"{self.path}: another runcost run holds the warehouse lock ({who}); "
                        f"gave up after waiting {waited:.1f} s (warehouse.lock_timeout_seconds "
                        f"= {self.timeout:g}). Let that run finish, or stop that process, "
                        "then run again"
                    ) from None
                if not announced:
                    log.info(
                        "waiting up to %g s for the run holding %s: %s",
                        self.timeout,
                        self.path,
                        who,
                        extra={"stage": "lock"},
                    )
                    announced = True
                time.sleep(min(self.poll, max(self.timeout - waited, 0.01)))
        self.waited = time.monotonic() - started
        previous = _parse_holder(_read_all(descriptor))
        if previous is not None:
            state = {False: "no longer running", None: "on another host"}.get(
                previous.alive(), "alive but not holding the lock"
            )
            log.warning(
                "took over the stale warehouse lock of a run that died (%s; %s)",
                previous.describe(),
                state,
                extra={"stage": "lock"},
            )
        holder = Holder(
            pid=os.getpid(),
            host=socket.gethostname(),
            started_at=datetime.now(UTC).isoformat(timespec="seconds"),
            run_id=self.run_id,
        )
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, (json.dumps(holder.__dict__) + "\n").encode(), 0)
        os.fsync(descriptor)
        self._descriptor = descriptor
        return holder

    def release(self) -> None:
        """Clear the holder record and unlock; a clean release leaves an empty lock file."""
        if self._descriptor is None:
            return
        try:
            os.ftruncate(self._descriptor, 0)
            fcntl.flock(self._descriptor, fcntl.LOCK_UN)
        finally:
            os.close(self._descriptor)
            self._descriptor = None


def read_holder(path: Path) -> Holder | None:
    """The holder record in a lock file, or None when it is empty, missing or half-written."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return _parse_holder(text)


def running_holder(warehouse: Path) -> Holder | None:
    """The holder of the warehouse lock when a run holds it now, else None (never blocks)."""
    path = warehouse / LOCK_NAME
    if not path.is_file():
        return None
    descriptor = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return read_holder(path) or Holder(pid=0, host="unknown", started_at="unknown")
    else:
        fcntl.flock(descriptor, fcntl.LOCK_UN)
        return None
    finally:
        os.close(descriptor)


def _read_all(descriptor: int) -> str:
    size = os.fstat(descriptor).st_size
    return os.pread(descriptor, size, 0).decode("utf-8", errors="replace") if size else ""


def _parse_holder(text: str) -> Holder | None:
    try:
        data = json.loads(text)
        return Holder(
            pid=int(data["pid"]),
            host=str(data["host"]),
            started_at=str(data["started_at"]),
            run_id=data.get("run_id"),
        )
    except (ValueError, KeyError, TypeError):
        return None
