"""`runcost status`: current snapshot, last run, checks, final periods, from the warehouse alone."""

from __future__ import annotations

import json
import os
from decimal import Decimal
from pathlib import Path

from click.testing import CliRunner
from worlds import make_world, run_in_process

from pipeline.cli.app import main
from pipeline.config.loader import load_config
from pipeline.warehouse.lock import WarehouseLock


def status(config: Path, *options: str) -> str:
    result = CliRunner().invoke(main, ["status", "--config", str(config), *options])
    assert result.exit_code == 0, result.output
    return result.output


def test_status_before_anything_ran(tmp_path: Path, template: Path) -> None:
    config = make_world(tmp_path / "world", template)
    text = status(config)
    assert "current snapshot: none (nothing published yet; run `runcost run`)" in text
    assert "last run: none" in text
    assert "running now: no" in text
    found = json.loads(status(config, "--format", "json"))
    assert found["current"] is None and found["last_run"] is None and found["periods"] == []


def test_status_after_runs(tmp_path: Path, template: Path) -> None:
    config = make_world(tmp_path / "world", template)
    warehouse = load_config(config).warehouse
    assert run_in_process(config) == "published"
    assert run_in_process(config) == "unchanged"
    pointer = json.loads((warehouse / "CURRENT").read_text(encoding="utf-8"))
    last = sorted((warehouse / "runs").iterdir())[-1].name

    found = json.loads(status(config, "--format", "json"))
    assert found["current"]["run_id"] == pointer["run_id"]
    assert found["database_run_id"] == pointer["run_id"]
    assert found["last_run"]["run_id"] == last
    assert found["last_run"]["status"] == "unchanged"
    assert found["last_run"]["unchanged_from"] == pointer["run_id"]
    assert set(found["last_run"]["checks"].values()) == {"passed"}
    (totals,) = json.loads((warehouse / "runs" / last / "manifest.json").read_text())["totals"]
    assert found["periods"] == [
        {
            "billing_period": "2026-10",
            "provider": "aws",
            "billing_account_id": "111111111111",
            "billing_currency": "USD",
            "final": True,
            "period_status": "final",
            "billed_cost": totals["billed_cost"],
            "cost_lines": int(totals["cost_lines"]),
        }
    ]
    checks = len(found["last_run"]["checks"])
    text = status(config)
    assert f"current snapshot: {pointer['run_id']}, published " in text
    assert f"last run: {last}: unchanged, started " in text
    assert f"checks: {checks} of {checks} passed" in text
    billed = f"{Decimal(totals['billed_cost']):,.2f}"
    row = ["2026-10", "aws", "111111111111", "USD", "final", billed, str(totals["cost_lines"])]
    assert row in [line.split() for line in text.splitlines()]

    with WarehouseLock(warehouse, timeout=0, run_id="now-running"):
        found = json.loads(status(config, "--format", "json"))
    assert found["running"]["pid"] == os.getpid()
    assert found["running"]["run_id"] == "now-running"
