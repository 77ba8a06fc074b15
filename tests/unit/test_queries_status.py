"""warehouse_status and the run manifests: a published world's state, read from its files."""

from __future__ import annotations

import json
import os
from decimal import Decimal
from pathlib import Path

import pytest

from pipeline.config.loader import load_config
from pipeline.scenario import write_scenario
from pipeline.warehouse.lock import WarehouseLock
from pipeline.warehouse.queries import (
    LastRun,
    PeriodStatus,
    PeriodTotal,
    RunOutcome,
    last_run,
    run_outcome,
    warehouse_status,
)
from pipeline.warehouse.snapshots import open_database


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> dict:
    from pipeline.run.nightly import run_pipeline

    config = load_config(write_scenario(tmp_path_factory.mktemp("status")))
    result = run_pipeline(config)
    manifest = json.loads(result.manifest.read_text(encoding="utf-8"))
    return {"warehouse": config.warehouse, "result": result, "manifest": manifest}


def test_nothing_published_yet(tmp_path: Path) -> None:
    found = warehouse_status(tmp_path / "warehouse")
    assert found.current is None and found.running is None and found.last_run is None
    assert found.periods == []
    assert found.to_json() == {
        "warehouse": str(tmp_path / "warehouse"),
        "current": None,
        "running": None,
        "last_run": None,
        "periods": [],
    }


def test_a_published_warehouse(published: dict) -> None:
    result, manifest = published["result"], published["manifest"]
    found = warehouse_status(published["warehouse"])
    assert found.current is not None
    assert found.current.run_id == found.database_run_id == result.run_id
    assert found.current.content_hash == manifest["content_hash"]
    record = json.loads((Path(found.current.snapshot) / "snapshot.json").read_text())
    assert found.current.tables == len(record["tables"]) > 30
    assert found.current.published_at == record["published_at"]
    assert found.running is None
    assert found.last_run == last_run(result.manifest)
    assert (found.last_run.run_id, found.last_run.status) == (result.run_id, "published")
    assert found.last_run.failed_checks == [] and len(found.last_run.checks) == 11
    (totals,) = manifest["totals"]
    assert found.periods == [
        PeriodStatus(
            billing_period="2026-10",
            provider="aws",
            billing_account_id="111111111111",
            billing_currency="USD",
            final=True,
            period_status="final",
            billed_cost=Decimal(totals["billed_cost"]),
            cost_lines=int(totals["cost_lines"]),
        )
    ]
    con = open_database(result.database)
    try:
        (billed,) = con.execute(
            "select sum(billed_cost) from normalized.cost_lines where billing_period = '2026-10'"
        ).fetchone()
    finally:
        con.close()
    assert found.periods[0].billed_cost == billed


def test_json_keeps_the_published_shape(published: dict) -> None:
    found = warehouse_status(published["warehouse"])
    plain = json.loads(json.dumps(found.to_json()))
    assert list(plain) == [
        "warehouse", "current", "database_run_id", "running", "last_run", "periods",
        "damaged_files",
    ]  # fmt: skip
    assert plain["damaged_files"] == []
    assert list(plain["current"]) == [
        "run_id",
        "snapshot",
        "published_at",
        "content_hash",
        "tables",
    ]
    assert list(plain["last_run"]) == [
        "run_id", "status", "started_at", "finished_at", "checks", "stage_seconds",
        "built_because", "period_builds",
    ]  # fmt: skip
    # a first run builds: there is no run before it to compare its inputs with
    assert plain["last_run"]["built_because"] == ["no previous fingerprints"]
    assert plain["periods"][0]["billed_cost"] == published["manifest"]["totals"][0]["billed_cost"]


def test_a_run_holding_the_lock(published: dict) -> None:
    with WarehouseLock(published["warehouse"], timeout=0, run_id="now-running"):
        running = warehouse_status(published["warehouse"]).running
    assert running is not None
    assert (running.pid, running.run_id) == (os.getpid(), "now-running")


def test_an_unreadable_manifest_is_named_as_the_status(tmp_path: Path) -> None:
    manifest = tmp_path / "runs" / "run-7" / "manifest.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text('{"run_id": ', encoding="utf-8")
    found = last_run(manifest)
    assert found.run_id == "run-7"
    assert found.status.startswith("unreadable manifest: Expecting value: line 1 column 12")
    assert (found.checks, found.stage_seconds, found.seconds) == ({}, {}, 0)
    assert warehouse_status(tmp_path).last_run == found


def test_a_failed_run(tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.json"
    record = {
        "run_id": "run-8",
        "status": "failed_checks",
        "started_at": "2026-11-02T01:00:00+00:00",
        "error": "conservation failed",
        "checks": {"conservation": "failed", "shares_in_range": "passed", "a_check": "error"},
        "stage_seconds": {"ingest": 1.25, "build": 2.5},
    }
    manifest.write_text(json.dumps(record), encoding="utf-8")
    found = last_run(manifest)
    assert found == LastRun(
        run_id="run-8",
        status="failed_checks",
        started_at="2026-11-02T01:00:00+00:00",
        error="conservation failed",
        checks=record["checks"],
        stage_seconds=record["stage_seconds"],
    )
    assert found.failed_checks == ["a_check", "conservation"]
    assert found.seconds == 3.75
    assert found.to_json() == {key: record[key] for key in record}


def test_a_run_outcome(tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.json"
    manifest.write_text(
        json.dumps(
            {
                "run_id": "run-9",
                "status": "published",
                "inputs": {
                    "deliveries": [
                        {"billing_period": "2026-10", "new": False},
                        {"billing_period": "2026-11", "new": True},
                        {"billing_period": "2026-11", "new": True},
                    ]
                },
                "totals": [
                    {
                        "billing_period": "2026-11",
                        "billing_currency": "USD",
                        "billed_cost": "10.0000000001",
                        "effective_cost": "9.5",
                        "list_cost": "12",
                        "net_cost": "9",
                        "cost_lines": "3",
                    },
                    {
                        "billing_period": "2026-10",
                        "billing_currency": "USD",
                        "billed_cost": "1",
                        "effective_cost": "1",
                        "list_cost": "1",
                        "net_cost": "1",
                        "cost_lines": 1,
                    },
                ],
                "checks": {"conservation": "passed", "shares_in_range": "failed"},
                "stage_seconds": {"ingest": 0.5},
            }
        ),
        encoding="utf-8",
    )
    found = run_outcome(manifest)
    assert found == RunOutcome(
        run_id="run-9",
        status="published",
        periods=["2026-10", "2026-11"],
        new_deliveries=["2026-11"],
        totals=[
            PeriodTotal("2026-11", "USD", *map(Decimal, ("10.0000000001", "9.5", "12", "9")), 3),
            PeriodTotal("2026-10", "USD", *map(Decimal, ("1", "1", "1", "1")), 1),
        ],
        checks={"conservation": "passed", "shares_in_range": "failed"},
        stage_seconds={"ingest": 0.5},
        unchanged_from=None,
    )
    assert found.checks_passed == 1
