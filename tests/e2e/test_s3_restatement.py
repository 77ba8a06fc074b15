"""End to end from S3 (moto server): a delivery, its restatement, then a run with nothing new."""

from __future__ import annotations

import csv
import dataclasses
import json
import tomllib
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pipeline import scenario
from pipeline.config.loader import Config, parse_config
from pipeline.run.nightly import run_pipeline
from pipeline.scenario.cur_writer import money, write_cur_delivery
from pipeline.scenario.world import build_world
from pipeline.warehouse.snapshots import open_database

BUCKET = "billing-bucket"
PREFIX = f"exports/{scenario.EXPORT_NAME}"
MONEY = ("billed_cost", "effective_cost", "list_cost", "net_cost", "estimated_cost")
pytestmark = pytest.mark.slow


def upload(client: Any, export_root: Path) -> None:
    for path in sorted(export_root.rglob("*")):
        if path.is_file():
            key = f"{PREFIX}/{path.relative_to(export_root).as_posix()}"
            client.upload_file(str(path), BUCKET, key)


def s3_config(world: Path, endpoint_url: str) -> Config:
    data = tomllib.loads((world / "runcost.toml").read_text(encoding="utf-8"))
    data["aws"] = {"exports": [f"s3://{BUCKET}/{PREFIX}"], "endpoint_url": endpoint_url}
    return parse_config(data, base=world, path=world / "runcost.toml")


def attempt_costs(database: Path) -> dict[tuple[str, str], dict[str, Decimal]]:
    con = open_database(database)
    try:
        cursor = con.execute(f"select attempt_id, allocation_model, {', '.join(MONEY)} "
                             "from marts.attempt_costs")  # fmt: skip
        return {
            (row[0], row[1]): dict(zip(MONEY, map(Decimal, map(str, row[2:])), strict=True))
            for row in cursor.fetchall()
        }
    finally:
        con.close()


def bill_totals(database: Path) -> dict[str, Decimal]:
    con = open_database(database)
    try:
        rows = con.execute(
            "select cost_basis, bill_total from marts.reconciliation "
            "where allocation_model = 'marginal'"
        ).fetchall()
    finally:
        con.close()
    return {basis: Decimal(str(total)) for basis, total in rows}


def expected_costs(folder: Path) -> dict[tuple[str, str], dict[str, Decimal]]:
    with (folder / "attempt_costs.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return {
        (row["attempt_id"], row["allocation_model"]): {key: Decimal(row[key]) for key in MONEY}
        for row in rows
    }


def assert_costs_equal(actual: dict, expected: dict) -> None:
    assert sorted(actual) == sorted(expected)
    for key, want in expected.items():
        for column, value in want.items():
            assert abs(actual[key][column] - value) <= Decimal("0.000001"), (key, column)


def restated_world(seed: int, folder: Path) -> tuple[Path, Decimal]:
    """The scenario's lines with one tagged Usage line billed 12.5 more: export and truth."""
    world = build_world(seed)
    attempts = {attempt.attempt_id for attempt in world.attempts}
    index = next(
        i
        for i, line in enumerate(world.lines)
        if line.line_item_type == "Usage" and line.resource_tags.get("user_attempt_id") in attempts
    )
    line = world.lines[index]
    delta = Decimal("12.5")
    lines = list(world.lines)
    lines[index] = dataclasses.replace(line, unblended_cost=money(line.unblended_cost) + delta)
    export_root = folder / scenario.EXPORT_DIR
    write_cur_delivery(
        export_root, scenario.EXPORT_NAME, world.billing_period, lines, "restated-0002"
    )
    # The oracle and writer write_scenario itself uses, applied to the restated lines.
    expectation = scenario.compute(
        lines,
        world.attempts,
        world.resources,
        world.experiments,
        scenario.POOLS,
        scenario.ATTEMPT_TAG_KEYS,
        scenario.EXPERIMENT_TAG_KEYS,
    )
    scenario.write_expected(folder / "expected", expectation, world.attempts, world.experiments)
    return export_root, delta


def test_delivery_then_restatement_then_nothing_new(tmp_path: Path, s3) -> None:
    url, client, gets = s3
    world = tmp_path / "world"
    scenario.write_scenario(world)
    upload(client, world / scenario.EXPORT_DIR)
    config = s3_config(world, url)

    first = run_pipeline(config)

    first_costs = attempt_costs(first.database)
    assert_costs_equal(first_costs, expected_costs(world / "expected"))
    first_bill = bill_totals(first.database)
    [delivery] = first.deliveries
    assert (delivery.delivery_id, delivery.new) == (scenario.execution_id(7), True)
    assert len(gets) == 2  # the manifest and the one data file
    record = json.loads((delivery.folder / "delivery.json").read_text())
    [listed] = record["files"]
    head = client.head_object(
        Bucket=BUCKET, Key=f"{PREFIX}/data/BILLING_PERIOD=2026-10/{listed['name']}"
    )
    assert (listed["etag"], listed["size"]) == (head["ETag"].strip('"'), head["ContentLength"])

    # AWS restates the period: same keys (overwrite mode), new execution id and manifest.
    restated_root, delta = restated_world(7, tmp_path / "restated")
    upload(client, restated_root)
    gets.clear()

    second = run_pipeline(config)

    restated_truth = expected_costs(tmp_path / "restated" / "expected")
    assert_costs_equal(attempt_costs(second.database), restated_truth)
    assert attempt_costs(second.database) != first_costs
    [delivery2] = second.deliveries
    assert (delivery2.delivery_id, delivery2.new) == ("restated-0002", True)
    assert len(gets) == 2
    period_dir = delivery2.folder.parent
    assert sorted(p.name for p in period_dir.glob("delivery=*")) == [
        f"delivery={scenario.execution_id(7)}",
        "delivery=restated-0002",
    ]
    current = json.loads((period_dir / "current.json").read_text())
    assert (current["delivery_id"], current["replaces"]) == (
        "restated-0002",
        scenario.execution_id(7),
    )
    assert bill_totals(second.database)["billed_cost"] - first_bill["billed_cost"] == delta

    gets.clear()
    third = run_pipeline(config)

    assert gets == []  # nothing new: not even the manifest is downloaded again
    assert [(d.delivery_id, d.new) for d in third.deliveries] == [("restated-0002", False)]
    assert_costs_equal(attempt_costs(third.database), restated_truth)
