"""Disk a run needs: the peak of its build database, its spill files and the whole warehouse.

A thread samples the warehouse every few seconds while the pipeline runs in this process. The
build database is runs/<run>/build.duckdb (and its WAL) with the Parquet the build wrote (the
published tables in runs/<run>/tmp/published from DuckDB, tmp/outputs from Spark, and DuckDB's
build steps in tmp/steps); the spill is the rest of runs/<run>/tmp, DuckDB's temp_directory.
Peaks between two samples are missed, so the interval bounds the error.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

INTERVAL = 2.0


class DiskSampler:
    """Peak bytes of the build database, the spill and the warehouse, with the stage of each."""

    def __init__(self, warehouse: Path, stage: Callable[[], str], interval: float = INTERVAL):
        self.warehouse, self.stage, self.interval = Path(warehouse), stage, interval
        self.peaks: dict[str, int] = {}
        self.stages: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="disk-sampler", daemon=True)

    def __enter__(self) -> DiskSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        sizes = usage(self.warehouse)
        stage = self.stage()
        for name, size in sizes.items():
            if size > self.peaks.get(name, -1):
                self.peaks[name], self.stages[name] = size, stage

    def result(self) -> dict[str, dict[str, object]]:
        """name -> {"bytes": peak, "stage": the stage running when it was sampled}."""
        return {
            name: {"bytes": self.peaks[name], "stage": self.stages[name]} for name in self.peaks
        }


def usage(warehouse: Path) -> dict[str, int]:
    """Bytes now in the build databases, the spill folders and the whole warehouse."""
    sizes = {"build_database": 0, "spill": 0, "warehouse": 0}
    for folder, _, files in os.walk(warehouse):
        parts = Path(folder).relative_to(warehouse).parts
        for name in files:
            try:
                size = os.stat(os.path.join(folder, name)).st_blocks * 512  # on disk, not apparent
            except OSError:  # removed between listing and stat (a spill file, a pruned snapshot)
                continue
            sizes["warehouse"] += size
            if parts[:1] != ("runs",) or len(parts) < 2:
                continue
            if parts[2:4] in (("tmp", "published"), ("tmp", "outputs"), ("tmp", "steps")):
                sizes["build_database"] += size  # the build's tables, written as Parquet
            elif parts[2:3] == ("tmp",):
                sizes["spill"] += size
            elif name.startswith("build.duckdb"):
                sizes["build_database"] += size
    return sizes
