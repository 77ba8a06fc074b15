"""config.economics: the [economics] constants the goodput and waste marts read, one row."""

from __future__ import annotations

from dataclasses import fields

import duckdb

from pipeline.config import Config, Economics

ECONOMICS_COLUMNS = tuple(item.name for item in fields(Economics))


def write_economics_settings(con: duckdb.DuckDBPyConnection, config: Config) -> None:
    """Create config.economics (one row, DOUBLE columns); values go in as parameters."""
    con.execute("create schema if not exists config")
    columns = ", ".join(f"{name} double" for name in ECONOMICS_COLUMNS)
    con.execute(f"create or replace table config.economics ({columns})")
    placeholders = ", ".join("?" for _ in ECONOMICS_COLUMNS)
    con.execute(
        f"insert into config.economics values ({placeholders})",
        [getattr(config.economics, name) for name in ECONOMICS_COLUMNS],
    )
