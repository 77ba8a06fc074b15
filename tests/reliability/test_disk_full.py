"""A full disk during publish: the run fails clearly, the current snapshot is untouched."""

from __future__ import annotations

import errno
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner
from worlds import change_telemetry, make_world, manifests, published_hashes, run_in_process

from pipeline.cli.app import main
from pipeline.config.loader import load_config
from pipeline.warehouse import publish as publish_module


def full_disk_after(calls: int, error: Exception):
    real = publish_module._copy_table
    done = []

    def copy(*args, **kwargs):
        if len(done) >= calls:
            raise error
        done.append(1)
        return real(*args, **kwargs)

    return copy


@pytest.mark.parametrize(
    "error",
    [
        OSError(errno.ENOSPC, "No space left on device"),
        duckdb.IOException('Could not write file "x.parquet": No space left on device'),
    ],
    ids=["oserror", "duckdb"],
)
def test_disk_full_while_writing_parquet(
    tmp_path: Path, template: Path, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    config = make_world(tmp_path / "world", template)
    warehouse = load_config(config).warehouse
    assert run_in_process(config) == "published"
    pointer = (warehouse / "CURRENT").read_text(encoding="utf-8")
    before = published_hashes(warehouse)
    change_telemetry(config)  # so the second run has something new to publish
    monkeypatch.setattr(publish_module, "_copy_table", full_disk_after(3, error))

    result = CliRunner().invoke(main, ["run", "--config", str(config)])

    assert result.exit_code == 1
    failed = manifests(warehouse)[-1]
    staging = warehouse / "snapshots" / f".{failed['run_id']}.partial"
    assert f"error: disk full while writing the snapshot to {staging}: " in result.output
    current = pointer.split('"')[3]
    assert f"the current snapshot {current} stays current. Free space on the disk" in (
        result.output.replace("\n", "")
    )
    assert (warehouse / "CURRENT").read_text(encoding="utf-8") == pointer
    assert published_hashes(warehouse) == before
    assert failed["status"] == "failed"
    assert failed["error"].startswith("PublishError: disk full while writing the snapshot")
    assert sorted(path.name for path in (warehouse / "snapshots").iterdir()) == [current]
    assert not list(warehouse.glob(".*.tmp"))


def test_disk_full_while_writing_the_database(
    tmp_path: Path, template: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = make_world(tmp_path / "world", template)
    warehouse = load_config(config).warehouse
    assert run_in_process(config) == "published"
    pointer = (warehouse / "CURRENT").read_text(encoding="utf-8")
    before = published_hashes(warehouse)
    change_telemetry(config)

    def no_space(*args: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(publish_module, "write_views", no_space)
    result = CliRunner().invoke(main, ["run", "--config", str(config)])
    assert result.exit_code == 1
    assert "error: disk full while writing the snapshot to " in result.output
    assert (warehouse / "CURRENT").read_text(encoding="utf-8") == pointer
    assert published_hashes(warehouse) == before
    # the new snapshot folder was already in place: it is removed again
    assert len(list((warehouse / "snapshots").iterdir())) == 1

    monkeypatch.undo()
    assert run_in_process(config) == "published", "a later run completes normally"
