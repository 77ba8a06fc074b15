"""config.periods and config.estimate_prices, plus empty history inputs, for the period models."""

from __future__ import annotations

from dataclasses import replace

import duckdb

from pipeline.config import Config
from pipeline.history import create_history_inputs


def write_period_settings(con: duckdb.DuckDBPyConnection, config: Config) -> None:
    """Create config.periods (one row), config.estimate_prices, and raw.* with no history."""
    settings = config.periods
    con.execute("create schema if not exists config")
    con.execute(
        "create or replace table config.periods (gcp_settle_days integer, "
        "snapshot_retention_days integer, invoice_file varchar, config_fingerprint varchar)"
    )
    con.execute(
        "insert into config.periods values (?, ?, ?, ?)",
        [
            settings.gcp_settle_days,
            settings.snapshot_retention_days,
            str(settings.invoice_file) if settings.invoice_file else None,
            results_fingerprint(config),
        ],
    )
    con.execute(
        "create or replace table config.estimate_prices (instance_type varchar, region varchar, "
        "price_per_hour decimal(38, 10), currency varchar)"
    )
    if settings.prices:
        con.executemany(
            "insert into config.estimate_prices values (?, ?, ?, ?)",
            [
                (item.instance_type, item.region, item.price_per_hour, item.currency)
                for item in settings.prices
            ],
        )
    create_history_inputs(con)


def results_fingerprint(config: Config) -> str:
    """config.fingerprint() with each export named by its last path part, not where it lies.

    Published, and compared across snapshots: copying the world elsewhere changes no result.
    """
    names = tuple(location.rstrip("/").rsplit("/", 1)[-1] for location in config.aws_exports)
    return replace(config, aws_exports=names).fingerprint()
