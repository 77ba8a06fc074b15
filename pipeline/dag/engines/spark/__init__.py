"""The Spark engine (the `spark` extra): the same models, transpiled by sqlglot, on a Spark session.

session: the session and the settings that make Spark compute what DuckDB computes;
engine: SparkEngine; inputs and outputs: what Spark reads from the run and writes for it;
schemas: DuckDB and Arrow types as Spark's; transpile: DuckDB SQL as Spark SQL.
PySpark is imported only when a session is opened.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.dag.engines.spark.engine import SparkEngine
from pipeline.dag.engines.spark.session import open_session

if TYPE_CHECKING:
    import duckdb

    from pipeline.config.engine import SparkOptions
    from pipeline.config.loader import Config

__all__ = ["SparkEngine", "open_engine"]


def open_engine(config: Config, con: duckdb.DuckDBPyConnection, scratch: Path) -> SparkEngine:
    """The [spark] session (started, or the caller's active one); the run's inputs are loaded
    into it once the build database ``con`` holds them (SparkEngine.load_inputs)."""
    options: SparkOptions = config.engine_options["spark"]
    session, owned = open_session(options, scratch)
    return SparkEngine(session, options, scratch, owned)
