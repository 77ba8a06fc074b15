"""The run's configuration as config.* tables, which models read instead of spliced SQL."""

from __future__ import annotations

import duckdb

from pipeline.config import Config
from pipeline.economics_settings import write_economics_settings
from pipeline.period_settings import write_period_settings
from pipeline.pools import write_pool_settings


def write_settings(con: duckdb.DuckDBPyConnection, config: Config) -> None:
    """Create config.attribution, config.pools, config.economics and config.periods."""
    write_pool_settings(con, config)
    write_economics_settings(con, config)
    write_period_settings(con, config)
