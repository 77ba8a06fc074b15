"""The engine interface the runner builds models through: create a model, run a check."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import duckdb

    from pipeline.dag.models import Model

CHECK_SAMPLE_ROWS = 20


@dataclass(frozen=True)
class CheckResult:
    """The rows a check returned (at most CHECK_SAMPLE_ROWS of them) and how many there were."""

    columns: list[str]
    rows: list[tuple]
    total: int


class Engine(Protocol):
    """Where models are built: DuckDB in this process, or a Spark session."""

    name: str
    errors: tuple[type[BaseException], ...]  # what a failing model raises, reported as ModelError

    def prepare(self, schemas: tuple[str, ...]) -> None:
        """Make the schemas models are created in."""

    def create(self, model: Model) -> None:
        """Build one model as a view or a table, by its materialization."""

    def check(self, model: Model) -> CheckResult | None:
        """Run one check; None when it returns no rows."""

    def finish(self, con: duckdb.DuckDBPyConnection, models: list[Model]) -> dict[str, int] | None:
        """After the checks passed: leave the published tables in ``con`` for publish (None),
        or write them to the configured catalog and return rows per table."""

    def close(self) -> None:
        """Release what the engine holds (not the DuckDB connection)."""
