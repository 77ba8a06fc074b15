"""A rename of the switch that fails: the run fails, nothing switches, the next publishes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from switch_failures import failing_switch
from worlds import change_telemetry, make_world, manifests, published_hashes, run_in_process

from pipeline.cli.app import main
from pipeline.config.loader import load_config
from pipeline.warehouse.snapshots import database_snapshot


def names(warehouse: Path) -> set[str]:
    """The snapshot runcost.duckdb, CURRENT and latest name, and those the run records
    published name: one when they agree."""
    served = database_snapshot(warehouse)
    pointer = json.loads((warehouse / "CURRENT").read_text(encoding="utf-8"))
    published = [run for run in manifests(warehouse) if run["status"] == "published"]
    return {
        served[0] if served else "",
        pointer["run_id"],
        os.readlink(warehouse / "latest").removeprefix("snapshots/"),
        published[-1]["run_id"],
    }


def test_a_failed_rename_of_current_fails_the_run_and_the_next_publishes(
    tmp_path: Path, template: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = make_world(tmp_path / "world", template)
    warehouse = load_config(config).warehouse
    assert run_in_process(config) == "published"
    (first,) = names(warehouse)
    before = published_hashes(warehouse)
    change_telemetry(config)
    # the switch renames runcost.duckdb, then CURRENT: the second rename fails, once
    tried = failing_switch(monkeypatch, lambda call: call == 2)
    result = CliRunner().invoke(main, ["run", "--config", str(config)])
    assert tried[1] == "CURRENT"

    failed = manifests(warehouse)[-1]
    second = failed["run_id"]
    message = (
        f"could not make snapshot {second} current: [Errno 13] Permission denied: "
        f"'{warehouse}/.CURRENT.{second}.tmp' -> '{warehouse}/CURRENT'; the switch was undone "
        f"and the current snapshot {first} stays current. Check the permissions of {warehouse} "
        "and the disk holding it, then run again"
    )
    assert result.exit_code == 1
    assert f"error: {message}" in result.output.replace("\n", "")
    assert failed["status"] == "failed" and failed["error"] == f"PublishError: {message}"
    assert names(warehouse) == {first}
    assert published_hashes(warehouse) == before
    assert not (warehouse / "snapshots" / second).exists()

    monkeypatch.undo()
    assert run_in_process(config) == "published"
    (third,) = names(warehouse)
    assert third == manifests(warehouse)[-1]["run_id"] != first
