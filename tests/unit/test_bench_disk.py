"""bench/disk.py: the peaks of the build database, the spill and the warehouse, with the stage."""

from __future__ import annotations

import time
from pathlib import Path

from bench.disk import DiskSampler, usage


def _write(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)


def test_usage_tells_the_build_database_and_the_spill_from_the_rest(tmp_path: Path) -> None:
    _write(tmp_path / "runs" / "r1" / "build.duckdb", 64 * 1024)
    _write(tmp_path / "runs" / "r1" / "build.duckdb.wal", 16 * 1024)
    _write(tmp_path / "runs" / "r1" / "tmp" / "duckdb_temp_storage-0.tmp", 128 * 1024)
    _write(tmp_path / "snapshots" / "r0" / "cost_lines.parquet", 32 * 1024)
    # the cost lines' Parquet the build wrote, moved into the snapshot at publish
    _write(tmp_path / "runs" / "r1" / "tmp" / "published" / "normalized" / "x.parquet", 256 * 1024)
    # a build step (an intermediate model) the build wrote as Parquet, deleted with tmp/
    _write(tmp_path / "runs" / "r1" / "tmp" / "steps" / "attribution.x" / "pass_0.parquet", 512)
    sizes = usage(tmp_path)
    assert sizes["build_database"] >= (80 + 256 + 4) * 1024
    assert 128 * 1024 <= sizes["spill"] < 256 * 1024, "the build's Parquet is not spill"
    assert sizes["warehouse"] >= sizes["build_database"] + sizes["spill"] + 32 * 1024


def test_the_sampler_keeps_each_peak_and_the_stage_it_was_seen_in(tmp_path: Path) -> None:
    stage = ["attribution"]
    spill = tmp_path / "runs" / "r1" / "tmp" / "spill.tmp"
    with DiskSampler(tmp_path, lambda: stage[0], interval=0.01) as disk:
        _write(spill, 256 * 1024)
        time.sleep(0.2)
        spill.unlink()  # the spill is gone before the run ends: only a sample saw it
        stage[0] = "publish"
        _write(tmp_path / "snapshots" / "r1" / "x.parquet", 8 * 1024)
        time.sleep(0.2)
    peaks = disk.result()
    assert peaks["spill"]["bytes"] >= 256 * 1024
    assert peaks["spill"]["stage"] == "attribution"
    assert peaks["warehouse"]["bytes"] >= 256 * 1024
