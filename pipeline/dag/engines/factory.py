"""Choose the run's engine from the configuration."""

from __future__ import annotations

from pathlib import Path

import duckdb

from pipeline.config.loader import Config
from pipeline.dag.engines.base import Engine
from pipeline.dag.engines.duckdb_engine import DuckDBEngine


def open_engine(config: Config, con: duckdb.DuckDBPyConnection, scratch: Path) -> Engine:
    """DuckDB on ``con`` (default), or a Spark session fed the raw.* and config.* of ``con``.

    Both write published Parquet under ``scratch``: DuckDB the `-- materialized: parquet` models,
    Spark every published table.
    """
    if config.engine == "duckdb":
        return DuckDBEngine(con, scratch, config.resource_partitions)
    from pipeline.dag.engines.spark import SparkEngine, open_session

    session, owned = open_session(config.spark, scratch)
    engine = SparkEngine(session, config.spark, scratch, owned)
    try:
        engine.load_inputs(con)
    except BaseException:
        engine.close()
        raise
    return engine
