"""Open the run's engine through the registry: the package of the configured engine's name."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import duckdb

from pipeline.config.engine import ENGINES, unknown_engine
from pipeline.config.loader import Config
from pipeline.dag.engines.base import Engine


def engine_package(name: str) -> ModuleType:
    """pipeline.dag.engines.<name>, the package of a registered engine, imported now: an
    engine's dependencies (PySpark) load only when a run uses it."""
    if name not in ENGINES:
        raise unknown_engine(name, "runcost.toml")
    return importlib.import_module(f"{__package__}.{name}")


def open_engine(config: Config, con: duckdb.DuckDBPyConnection, scratch: Path) -> Engine:
    """The configured engine, for the run whose build database is ``con``, with its scratch
    files (the published Parquet it writes, build steps, Spark's local files) under ``scratch``.

    Every engine package has ``open_engine(config, con, scratch)``; tests/unit/
    test_engine_registry.py holds each registered name to it.
    """
    engine: Engine = engine_package(config.engine).open_engine(config, con, scratch)
    return engine
