"""The default engine: models run as DuckDB SQL on the run's build database, as written."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from pipeline.dag.engines.base import CHECK_SAMPLE_ROWS, CheckResult
from pipeline.dag.engines.duckdb_outputs import write_model

if TYPE_CHECKING:
    from pipeline.dag.models import Model


class DuckDBEngine:
    """Builds models with CREATE VIEW / CREATE TABLE on one DuckDB connection."""

    name = "duckdb"
    errors: tuple[type[BaseException], ...] = (duckdb.Error,)

    def __init__(self, con: duckdb.DuckDBPyConnection, outputs: Path | None = None) -> None:
        """``outputs``: where `-- materialized: parquet` models write their snapshot Parquet;
        without it (tests building on a bare connection) they are tables like any other."""
        self.con = con
        self.outputs = outputs
        # published name -> the Parquet written for it, which publish moves into the snapshot
        self.published_files: dict[str, Path] = {}

    def prepare(self, schemas: tuple[str, ...]) -> None:
        for schema in schemas:
            self.con.execute(f"create schema if not exists {schema}")

    def create(self, model: Model) -> None:
        if model.materialization == "parquet" and self.outputs is not None:
            self.published_files[model.qualified] = write_model(self.con, model, self.outputs)
            return
        self.con.execute(f"create or replace {model.created_as} {model.qualified} as\n{model.sql}")

    def check(self, model: Model) -> CheckResult | None:
        cursor = self.con.execute(f"select * from ({model.sql}) limit {CHECK_SAMPLE_ROWS}")
        rows = cursor.fetchall()
        if not rows:
            return None
        columns = [item[0] for item in cursor.description]
        total = self.con.execute(f"select count(*) from ({model.sql})").fetchone()[0]
        return CheckResult(columns, rows, total)

    def finish(self, con: duckdb.DuckDBPyConnection, models: list[Model]) -> dict[str, int] | None:
        return None  # the models are tables of the build database already

    def close(self) -> None:
        return None
