"""Every published mart of every scenario world equals its golden digest, to the last decimal."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from exact_checks import exact_problems
from mart_worlds import WORLDS, digest, published_rows, read_golden, run_world_database

from pipeline.run.record import totals
from pipeline.warehouse.snapshots import open_database

# tests/e2e/golden_marts.json: the digests of every published relation, exact to the last
# decimal, that a refactoring must reproduce; `python tests/e2e/mart_worlds.py` rewrites them
# only when a change of numbers is intended and explained


@pytest.mark.parametrize("world", sorted(WORLDS))
def test_every_published_mart_is_unchanged(world: str, tmp_path: Path) -> None:
    con = open_database(run_world_database(world, tmp_path / "world"))
    rows = published_rows(con)
    # the per-line forms of the checks the build runs as checksums (tests/exact_checks.py)
    problems = exact_problems(con)
    # the manifest's totals, read from the reconciliation's bill, are the lines' own sums
    lines = con.execute(
        "select provider, billing_period, billing_currency, sum(billed_cost), "
        "sum(effective_cost), sum(list_cost), sum(net_cost), count(*) "
        "from normalized.cost_lines group by all order by all"
    ).fetchall()
    summed = [tuple(total.values()) for total in totals(con)]
    con.close()
    assert summed == [tuple(str(value) for value in row) for row in lines]
    assert problems == {name: [] for name in problems}
    found = digest(rows)
    expected = read_golden()[world]
    assert sorted(found) == sorted(expected)
    changed = [name for name in expected if found[name] != expected[name]]
    if changed:  # keep the rows to diff against a run of the old shape
        (tmp_path / "rows.json").write_text(json.dumps(rows), encoding="utf-8")
    assert changed == [], f"{world}: changed {changed}; rows in {tmp_path / 'rows.json'}"


@pytest.mark.parametrize("world", ["scale_skew", "mixed", "periods"])
def test_attribution_in_resource_partitions_publishes_the_same_marts(
    world: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # three resource-hash passes (pipeline/dag/partitions.py) instead of the one these small
    # worlds get from memory_limit: every mart, to the last decimal, as in one pass
    caplog.set_level(logging.INFO, logger="runcost")
    con = open_database(run_world_database(world, tmp_path / "world", partitions=3))
    rows = published_rows(con)
    problems = exact_problems(con)
    con.close()
    assert "attribution.resource_time_overlaps built in 3 resource-hash partitions" in caplog.text
    assert problems == {name: [] for name in problems}
    found, expected = digest(rows), read_golden()[world]
    assert [name for name in expected if found[name] != expected[name]] == []


def test_the_digest_sees_one_changed_decimal_and_one_dropped_row() -> None:
    rows = {"marts.x": {"columns": ["cost"], "rows": [["1.0000000000"], ["2.0000000000"]]}}
    moved = {"marts.x": {"columns": ["cost"], "rows": [["1.0000000001"], ["2.0000000000"]]}}
    dropped = {"marts.x": {"columns": ["cost"], "rows": [["1.0000000000"]]}}
    assert digest(rows) != digest(moved)
    assert digest(rows) != digest(dropped)
    assert digest(rows) == digest(json.loads(json.dumps(rows)))
