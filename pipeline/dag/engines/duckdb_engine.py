"""The default engine: models run as DuckDB SQL on the run's build database, as written."""

from __future__ import annotations

from typing import TYPE_CHECKING

import duckdb

from pipeline.dag.engines.base import CHECK_SAMPLE_ROWS, CheckResult

if TYPE_CHECKING:
    from pipeline.dag.models import Model


class DuckDBEngine:
    """Builds models with CREATE VIEW / CREATE TABLE on one DuckDB connection."""

    name = "duckdb"
    errors: tuple[type[BaseException], ...] = (duckdb.Error,)

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con

    def prepare(self, schemas: tuple[str, ...]) -> None:
        for schema in schemas:
            self.con.execute(f"create schema if not exists {schema}")

    def create(self, model: Model) -> None:
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
