"""GCP VMs that ran part of an hour are split by the seconds they ran, not by the hour window.

The rows (tests/mixed_world.py) are T4 GPU hours whose usage.amount is the seconds the VM ran;
expected values are computed by hand from the times in the comments.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

import duckdb
import pytest
from mixed_world import write_world

from pipeline.config.loader import load_config
from pipeline.run.nightly import run_pipeline
from pipeline.warehouse.snapshots import open_database

D = Decimal


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    config = write_world(tmp_path_factory.mktemp("gcp-partial"), ("gcp",))
    result = run_pipeline(load_config(config))
    con = open_database(result.database)
    yield con
    con.close()


def test_usage_seconds_come_from_time_usage_bounded_by_the_window(con) -> None:
    seconds = dict(
        con.execute("select resource_id, usage_seconds from normalized.cost_lines").fetchall()
    )
    assert seconds["vm-short"] == 1200  # 1,200 s of usage
    assert seconds["vm-shared"] == seconds["vm-left"] == 2700
    assert seconds["vm-labelled"] == 3600
    assert seconds["vm-ram"] == 3600  # byte-seconds are not time: the whole window


def test_partial_hours_are_placed_exactly(con) -> None:
    placed = dict(
        con.execute(
            "select attempt_id, sum(billed_cost) from allocation.cost_allocations "
            "where allocation_model = 'marginal' and attribution_method = 'resource_time' "
            "group by 1"
        ).fetchall()
    )
    assert placed == {
        # vm-short ran 10:00-10:20 and att-short held it all that time: the whole 0.12
        "att-short": D("0.12"),
        # vm-shared ran 2,700 s: 900 s (10:00-10:15) and 1,800 s (10:15-10:45) of 0.27
        "att-first": D("0.27") * 900 / 2700,
        "att-second": D("0.27") * 1800 / 2700,
        # vm-left ran 2,700 s; att-left held it 900 of them: a third of 0.27
        "att-left": D("0.09"),
        # vm-ram's byte-seconds span the hour; att-ram held it 20 minutes of 60
        "att-ram": D("0.02"),
    }
    outside = dict(
        con.execute(
            "select cost_lines.resource_id, unplaced.billed_cost "
            "from allocation.cost_allocations as unplaced "
            "join normalized.cost_lines as cost_lines using (line_id) "
            "where unplaced.allocation_model = 'marginal' "
            "and unplaced.unallocated_reason = 'outside_any_attempt'"
        ).fetchall()
    )
    assert outside == {"vm-left": D("0.18"), "vm-ram": D("0.04")}
