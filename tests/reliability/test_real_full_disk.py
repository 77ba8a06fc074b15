"""A real full disk (a small tmpfs) at ingest, build and publish: one error line, and the
previous snapshot stays current and readable; the next run, with space again, publishes."""

from __future__ import annotations

import errno
import functools
import json
import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner
from worlds import change_telemetry, make_world, manifests, published_hashes, run_in_process

from pipeline.cli.app import main
from pipeline.cli.common import describe_failure
from pipeline.config.loader import load_config
from pipeline.run import nightly
from pipeline.run.sources import write_telemetry

DISK_MB = 48


@pytest.fixture
def disk(tmp_path: Path):
    """A tmpfs of DISK_MB MB mounted for the test (needs root and mount rights)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}); needs root")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(mount: Path) -> Path:
    """Write a file until the disk has no byte left; returns it."""
    filler = mount / "filler"
    with filler.open("wb", buffering=0) as handle:
        for size in (1 << 20, 1 << 12, 1):
            try:
                while True:
                    handle.write(b"\0" * size)
            except OSError as error:
                assert error.errno == errno.ENOSPC
    return filler


def redeliver(config: Path) -> None:
    """A new execution of the same CUR: ingest has a delivery to download again."""
    manifest = next((config.parent / "aws").rglob("*-Manifest.json"))
    body = json.loads(manifest.read_text(encoding="utf-8"))
    body["executionId"] = "a-fresh-execution"
    manifest.write_text(json.dumps(body), encoding="utf-8")


@pytest.mark.parametrize("point", ["ingest", "build", "publish", "publish:database"])
def test_a_full_disk_fails_the_run_with_one_error_line(
    disk: Path, template: Path, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    config = make_world(disk / "world", template)
    warehouse = load_config(config).warehouse
    assert run_in_process(config) == "published"
    pointer = (warehouse / "CURRENT").read_text(encoding="utf-8")
    before = published_hashes(warehouse)
    change_telemetry(config)
    redeliver(config)
    filled: list[Path] = []

    def fill_at(reached: str) -> None:
        if reached == point and not filled:
            filled.append(fill(disk))

    run = functools.partial(nightly.run_pipeline, checkpoint=fill_at)
    monkeypatch.setattr(nightly, "run_pipeline", run)
    result = CliRunner().invoke(main, ["run", "--config", str(config)])

    assert filled, f"the run never reached {point}: {result.output}"
    assert result.exit_code == 1, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.output
    assert "No space left on device" in result.output or "disk full" in result.output
    assert "Traceback" not in result.output
    assert "stays current" in result.output
    # the previous snapshot is current and reads back whole, on the full disk
    assert (warehouse / "CURRENT").read_text(encoding="utf-8") == pointer
    assert published_hashes(warehouse) == before
    # recorded on the full disk, over the running record (in the room it kept)
    failed = manifests(warehouse)[-1]
    assert failed["status"] == "failed", failed
    assert "No space left on device" in failed["error"]

    filled[0].unlink()
    monkeypatch.undo()
    assert run_in_process(config) == "published", "with space again, the next run publishes"
    assert published_hashes(warehouse) != before
    statuses = [item["status"] for item in manifests(warehouse)]
    assert statuses[0] == "published" and statuses[-1] == "published"
    assert statuses[1] == "failed", statuses
    assert not list(warehouse.glob(".*.tmp*")), os.listdir(warehouse)
    assert not (warehouse / ".ingest-staging").exists()
    assert not list(warehouse.glob("runs/*/.manifest.json.tmp"))


def test_a_full_disk_while_writing_the_telemetry_names_the_file(disk: Path) -> None:
    """pyarrow's error names no file; the run's message names the telemetry file it wrote."""
    folder = disk / "tmp" / "published" / "telemetry"
    folder.mkdir(parents=True)
    fill(disk)
    table = pa.table({"attempt_id": [f"a{number}" for number in range(10_000)]})
    with pytest.raises(OSError) as raised:
        write_telemetry(table, folder / "attempts.parquet")
    text, _ = describe_failure(raised.value)
    assert "No space left on device" in text
    assert f"({folder / 'attempts.parquet'}): free space on that disk and run again" in text
