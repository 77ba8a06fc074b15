"""The warnings log_pool_warnings gives after a build, each naming the pool."""

from __future__ import annotations

import logging

import duckdb
import pytest

from pipeline.dag.pools import log_pool_warnings


def built(matches: list[tuple[int, int]]) -> duckdb.DuckDBPyConnection:
    """The tables log_pool_warnings reads: two pools, the lines their selectors matched."""
    con = duckdb.connect()
    for schema in ("config", "allocation", "marts"):
        con.execute(f"create schema {schema}")
    con.execute(
        "create table config.pools as select * from (values "
        "(1, 'shared-storage', 'service_name = ''AmazonS3''', 'true', 'gpu_hours', 'all', null), "
        "(2, 'fsx', 'service_name = ''AmazonFSx''', 'true', 'gpu_hours', 'all', null)) "
        "as pools(pool_order, pool_name, selector, attempts, driver, spread, basis)"
    )
    con.execute("create table allocation.pool_line_matches (line_id bigint, pool_order integer)")
    con.executemany("insert into allocation.pool_line_matches values (?, ?)", matches)
    con.execute(
        "create table marts.pool_overlaps (pool_name varchar, overlapping_pool_name varchar, "
        "cost_lines bigint)"
    )
    con.execute(
        "create table allocation.cost_allocations (pool_name varchar, line_id bigint, "
        "unallocated_reason varchar)"
    )
    return con


def test_a_selector_that_matches_nothing_is_warned(caplog: pytest.LogCaptureFixture) -> None:
    con = built([(1, 1), (2, 1)])

    with caplog.at_level(logging.WARNING, logger="runcost"):
        log_pool_warnings(con)

    assert [record.getMessage() for record in caplog.records] == [
        "pool fsx: selector service_name = 'AmazonFSx' matches no cost line, so the pool shares "
        "nothing; if the bill has such lines, fix the selector (it is a condition on "
        "normalized.cost_lines)"
    ]


def test_pools_that_match_lines_are_not_warned(caplog: pytest.LogCaptureFixture) -> None:
    con = built([(1, 1), (2, 2)])

    with caplog.at_level(logging.WARNING, logger="runcost"):
        log_pool_warnings(con)

    assert caplog.records == []
