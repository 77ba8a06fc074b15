"""Shared fixtures: a DAG built on no input, for tests that need the models' real columns."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from pipeline.config import parse_config
from pipeline.pools import pool_models
from pipeline.runner import build, discover
from pipeline.settings import write_settings
from pipeline.sources import TELEMETRY_TABLES, register_sources
from pipeline.telemetry.canonical import empty_table


@pytest.fixture
def built_empty(tmp_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """Every model built over an empty bill and empty telemetry."""
    config = parse_config({}, base=tmp_path)
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    write_settings(con, config)
    register_sources(con, [], {name: empty_table(name) for name in TELEMETRY_TABLES})
    report = build(con, discover() + pool_models(config))
    assert report.check_failures == []
    yield con
    con.close()
