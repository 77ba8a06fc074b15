"""Builders for the economics model tests: the DAG with attempt events and config.economics."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import builders
import duckdb
import pyarrow as pa

from pipeline.dag.build import build
from pipeline.dag.pools import pool_models
from pipeline.run.settings import (
    write_economics_settings,
    write_period_settings,
    write_pool_settings,
)
from pipeline.run.sources import register_sources


def build_economics(
    tmp_path: Path,
    lines: Sequence[Mapping[str, Any]],
    attempts: Iterable[Mapping[str, Any]] = (),
    resources: Iterable[Mapping[str, Any]] = (),
    experiments: Iterable[Mapping[str, Any]] = (),
    events: Iterable[Mapping[str, Any]] = (),
    config: Mapping[str, Any] | None = None,
) -> duckdb.DuckDBPyConnection:
    """Build every model with these inputs; checks must pass."""
    settings = builders.make_config(tmp_path, config)
    telemetry: dict[str, pa.Table] = {
        "attempts": builders.attempts_table(attempts),
        "attempt_resources": builders.resources_table(resources),
        "attempt_events": builders.events_table(events),
        "experiments": builders.experiments_table(experiments),
    }
    deliveries = builders.write_cur(tmp_path, lines)
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    write_pool_settings(con, settings)
    write_economics_settings(con, settings)
    write_period_settings(con, settings)
    register_sources(con, deliveries, telemetry)
    report = build(con, [*builders.sql_models(), *pool_models(settings)])
    assert report.check_failures == []
    return con
