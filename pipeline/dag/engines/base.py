"""The engine interface the run builds models through, and what a finished build leaves."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
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


@dataclass(frozen=True)
class BuildOutcome:
    """Where a finished build left the published tables, which is all the run needs to know.

    ``in_connection``: every published table is a relation of the run's DuckDB connection
    (a table, or a view over Parquet the engine wrote), to inspect, total and publish as a
    snapshot. ``published_files``: published name -> the Parquet file or folder the engine
    wrote in the snapshot's layout, which publish moves into the snapshot instead of copying.
    ``catalog``: the tables went to this catalog instead (rows per table in ``catalog_rows``);
    the local snapshot and runcost.duckdb stay as they were.
    """

    in_connection: bool
    published_files: dict[str, Path] = field(default_factory=dict)
    catalog: str | None = None
    catalog_rows: dict[str, int] = field(default_factory=dict)


class Engine(Protocol):
    """Where models are built: DuckDB on the run's build database, or a Spark session.

    An engine is opened through the registry (pipeline.dag.engines.factory); the run calls, in
    order: ``load_inputs`` once the build database holds its inputs, ``prepare``, ``create``
    and ``check`` for each model (pipeline.dag.build), ``finish``, and ``close``.
    """

    errors: tuple[type[BaseException], ...]  # what a failing model raises, reported as ModelError
    # the folder of published Parquet the build reads in the snapshot's layout, where the run
    # writes the inputs published as they are (the telemetry); None when the engine writes every
    # published table itself in finish
    published_folder: Path | None
    # models built in resource-hash passes -> how many (pipeline.dag.partitions)
    partitions_used: dict[str, int]
    # builds some billing periods and takes the others' published rows from a snapshot (carry)
    carries_periods: bool

    def load_inputs(self, con: duckdb.DuckDBPyConnection) -> None:
        """Take the inputs the build database ``con`` holds now (raw.*, config.*)."""

    def prepare(self, schemas: tuple[str, ...]) -> None:
        """Make the schemas models are created in."""

    def create(self, model: Model) -> None:
        """Build one model as a view or a table, by its materialization."""

    def check(self, model: Model) -> CheckResult | None:
        """Run one check; None when it returns no rows."""

    def carry(
        self,
        model: Model,
        folder: Path,
        entry: dict,
        values: list[str],
        keyed: tuple[str, dict] | None = None,
    ) -> None:
        """Add to the built ``model`` its published rows of the billing periods ``values`` in
        the snapshot ``folder`` (``entry``: the table's entry in its snapshot.json). ``keyed``
        (key column, another table's entry): for an unpartitioned table, its rows whose key
        that table's partitions ``values`` hold and the built table does not."""

    def finish(
        self, con: duckdb.DuckDBPyConnection, models: list[Model], publish: bool = True
    ) -> BuildOutcome:
        """Where the built tables are, for ``con``'s run. ``publish``: the checks passed, so
        write the published tables where the engine publishes them; with False (a check
        failed) nothing is written, and the outcome says only what ``con`` holds already."""

    def close(self) -> None:
        """Release what the engine holds (not the DuckDB connection)."""
