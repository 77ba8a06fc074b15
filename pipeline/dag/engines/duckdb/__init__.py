"""The default engine: the models run as DuckDB SQL on the run's build database, as written."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.dag.engines.duckdb.engine import DuckDBEngine

if TYPE_CHECKING:
    import duckdb

    from pipeline.config.loader import Config

__all__ = ["DuckDBEngine", "open_engine"]


def open_engine(config: Config, con: duckdb.DuckDBPyConnection, scratch: Path) -> DuckDBEngine:
    """Build on ``con`` itself, in [warehouse] resource_partitions passes (or as many as
    memory_limit needs), writing published Parquet and build steps under ``scratch``."""
    return DuckDBEngine(con, scratch, config.resource_partitions)
