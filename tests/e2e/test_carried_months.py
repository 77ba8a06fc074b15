"""A night that re-delivers one month builds that month alone and carries the others forward;
what it publishes equals a full rebuild of the same inputs, row for row, and its carried
months' Parquet is the previous snapshot's files, linked. A change every month shares, or a
Google Cloud bill, builds every month.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest
from history_world import MONTHS, differences, first_night, night, published

from pipeline.dag.models import across_periods, discover
from pipeline.run.nightly import RunResult
from pipeline.warehouse.snapshots import current_snapshot


def _record(result: RunResult) -> dict:
    return json.loads(Path(result.manifest).read_text(encoding="utf-8"))


def _rebuilt(world, warehouse: Path, root: Path) -> RunResult:
    """The same inputs on a copy of ``warehouse`` as it was before the night, built whole."""
    reference = root / "rebuilt"
    shutil.rmtree(reference / "raw")
    shutil.copytree(warehouse / "raw", reference / "raw", symlinks=True)
    return night(world, reference, full_refresh=True)


@pytest.mark.parametrize("provider", ["aws", "focus"])
def test_a_re_delivered_month_is_built_alone_and_the_others_are_carried(
    tmp_path: Path, provider: str
) -> None:
    world, warehouse = first_night(tmp_path, provider)
    shutil.copytree(warehouse, tmp_path / "rebuilt", symlinks=True)
    newest = MONTHS[-1]
    world.deliveries[newest] += 1
    world.surcharge[newest] = Decimal("0.37")
    world.deliver(newest)
    serving = current_snapshot(warehouse)
    assert serving is not None

    result = night(world, warehouse)

    # the telemetry files did not move: the serving snapshot's telemetry tables are used
    assert _record(result)["inputs"]["telemetry_from"] == serving["run_id"]
    builds = _record(result)["period_builds"]
    assert {month: item["action"] for month, item in builds.items()} == {
        **dict.fromkeys(MONTHS[:-1], "carried forward"),
        newest: "built",
    }
    assert builds[MONTHS[0]]["why"] == ["its inputs did not move"]
    assert builds[newest]["rows"] == "changed"
    assert builds[newest]["why"] == [f"{provider} deliveries"]
    assert _record(result)["inputs"]["carried"] == list(MONTHS[:-1])
    rebuilt = _rebuilt(world, warehouse, tmp_path)
    assert _record(rebuilt)["inputs"].get("carried") is None
    assert "telemetry_from" not in _record(rebuilt)["inputs"]  # --full-refresh reads the files
    assert differences(published(result.database), published(rebuilt.database)) == {}
    # the carried periods' hash sums, taken from the snapshot, add up to the rebuild's
    assert result.content_hashes == rebuilt.content_hashes


def test_a_restated_old_month_is_built_alone_and_the_carried_months_are_linked(
    tmp_path: Path,
) -> None:
    world, warehouse = first_night(tmp_path, "aws")
    shutil.copytree(warehouse, tmp_path / "rebuilt", symlinks=True)
    restated = MONTHS[0]
    world.deliveries[restated] += 1
    world.surcharge[restated] = Decimal("0.37")
    world.deliver(restated)
    pointer = current_snapshot(warehouse)
    assert pointer is not None
    before = Path(pointer["snapshot"])

    result = night(world, warehouse)

    builds = _record(result)["period_builds"]
    assert [month for month, item in builds.items() if item["action"] == "built"] == [restated]
    # the carried months' partitions are the previous snapshot's files, linked
    partition = Path("normalized") / "cost_line_facts" / f"billing_period={MONTHS[1]}"
    carried = Path(result.snapshot) / partition
    previous = before / partition
    assert sorted(path.name for path in carried.iterdir())
    for path in carried.iterdir():
        assert path.stat().st_ino == (previous / path.name).stat().st_ino
    rebuilt = _rebuilt(world, warehouse, tmp_path)
    assert differences(published(result.database), published(rebuilt.database)) == {}


@pytest.mark.parametrize(
    ("change", "why"),
    [("config", "config"), ("telemetry", "telemetry"), ("code", "code")],
)
def test_a_change_every_month_shares_builds_every_month(
    tmp_path: Path, change: str, why: str
) -> None:
    world, warehouse = first_night(tmp_path, "aws")
    if change == "config":
        world.price += Decimal("0.05")
    elif change == "code":  # the serving run ran another runcost: its telemetry is read again
        pointer = current_snapshot(warehouse)
        assert pointer is not None
        manifest = warehouse / "runs" / pointer["run_id"] / "manifest.json"
        record = json.loads(manifest.read_text(encoding="utf-8"))
        record["inputs"]["fingerprints"]["shared"]["code"] = "another runcost"
        manifest.write_text(json.dumps(record), encoding="utf-8")
    else:
        world.held = [
            replace(held, status="failed") if held.attempt_id == "m0-a" else held
            for held in world.held
        ]
        world.write_telemetry()
    newest = MONTHS[-1]
    world.deliveries[newest] += 1
    world.deliver(newest)

    result = night(world, warehouse)

    record = _record(result)
    assert why in record["inputs"]["built_because"]
    assert record["inputs"].get("carried") is None
    assert ("telemetry_from" in record["inputs"]) == (change == "config")
    assert {item["action"] for item in record["period_builds"].values()} == {"built"}


def test_a_google_cloud_night_builds_every_month(tmp_path: Path) -> None:
    """A partition day may hold the previous invoice month's rows: GCP nights build whole."""
    world, warehouse = first_night(tmp_path, "gcp")
    newest = MONTHS[-1]
    world.deliveries[newest] += 1
    world.surcharge[newest] = Decimal("0.37")
    world.deliver(newest)

    serving = current_snapshot(warehouse)
    assert serving is not None

    result = night(world, warehouse)

    assert _record(result)["inputs"].get("carried") is None
    assert {item["action"] for item in _record(result)["period_builds"].values()} == {"built"}
    # built whole, but its telemetry files did not move: the snapshot's tables are used
    assert _record(result)["inputs"]["telemetry_from"] == serving["run_id"]


@pytest.mark.parametrize("provider", ["aws", "focus"])
def test_every_table_of_one_period_is_published_by_period(tmp_path: Path, provider: str) -> None:
    """A night carries a table's rows by its billing-period partitions: every published table
    outside the models that combine periods has them (the profiles are carried by the keys
    the carried lines use), or the carried months' rows of it would be missing."""
    _world, warehouse = first_night(tmp_path, provider)
    pointer = current_snapshot(warehouse)
    assert pointer is not None
    tables = json.loads((Path(pointer["snapshot"]) / "snapshot.json").read_text())["tables"]
    models = discover()
    combined = across_periods(models)
    keyed = [model.qualified for model in models if model.carried_by]  # the profiles
    unpartitioned = sorted(
        name
        for name, entry in tables.items()
        if name.split(".")[0] not in ("telemetry", "config")  # written whole by every run
        and name not in combined
        and entry.get("rows")
        and entry.get("partition_by") != "billing_period"
    )
    assert unpartitioned == keyed == ["normalized.cost_line_profiles"]
