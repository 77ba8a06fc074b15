"""Every config.* table a run writes, in one place: models read these instead of spliced SQL."""

from __future__ import annotations

from dataclasses import fields, replace

import duckdb

from pipeline.common.money import MONEY_SQL
from pipeline.config.loader import Config, Economics
from pipeline.ingest.registry import PROVIDERS
from pipeline.ingest.tag_keys import cur_tag_keys, exact_tag_keys
from pipeline.run.history import create_history_inputs

ECONOMICS_COLUMNS = tuple(item.name for item in fields(Economics))


def write_settings(con: duckdb.DuckDBPyConnection, config: Config) -> None:
    """Create config.attribution, config.pools, config.allocation, config.economics,
    config.periods and config.estimate_prices (and raw.* with no history)."""
    write_pool_settings(con, config)
    write_economics_settings(con, config)
    write_period_settings(con, config)


def write_pool_settings(con: duckdb.DuckDBPyConnection, config: Config) -> None:
    """Create config.attribution and config.pools; values go in as parameters, never as SQL.

    Tag keys are written twice: as CUR names them (`attempt-id` -> `user_attempt_id`), the
    keys of AWS CUR lines, and exactly as configured, the keys of Google Cloud labels and FOCUS
    `Tags` (pipeline.ingest.tag_keys).
    """
    con.execute("create schema if not exists config")
    con.execute(
        "create or replace table config.attribution ("
        "attempt_tag_keys varchar[], experiment_tag_keys varchar[], resource_time boolean, "
        "attempt_label_keys varchar[], experiment_label_keys varchar[])"
    )
    con.execute(
        "insert into config.attribution values (?, ?, ?, ?, ?)",
        [
            cur_tag_keys(config.attempt_tag_keys),
            cur_tag_keys(config.experiment_tag_keys),
            config.resource_time,
            exact_tag_keys(config.attempt_tag_keys),
            exact_tag_keys(config.experiment_tag_keys),
        ],
    )
    con.execute(
        "create or replace table config.pools (pool_order integer, pool_name varchar, "
        "selector varchar, attempts varchar, driver varchar, spread varchar, basis varchar)"
    )
    for order, pool in enumerate(config.pools, start=1):
        con.execute(
            "insert into config.pools values (?, ?, ?, ?, ?, ?, ?)",
            [order, pool.name, pool.selector, pool.attempts, pool.driver, pool.spread, pool.basis],
        )
    con.execute("create or replace table config.allocation (exclude varchar)")
    con.execute("insert into config.allocation values (?)", [config.allocation_exclude])


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
        f"price_per_hour {MONEY_SQL}, currency varchar)"
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
    """config.fingerprint() with each provider's locations reduced to what does not depend on
    where they lie (an AWS export is named by its last path part).

    Published, and compared across snapshots: copying the world elsewhere changes no result.
    """
    providers = {
        provider.name: provider.portable(config.providers[provider.name]) for provider in PROVIDERS
    }
    return replace(config, providers=providers).fingerprint()
