"""SparkEngine: the same models, transpiled (spark.transpile), as temp views of a Spark session."""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from pipeline.config.engine import SparkOptions
from pipeline.dag.engines.base import CHECK_SAMPLE_ROWS, BuildOutcome, CheckResult
from pipeline.dag.engines.spark import carry as carried
from pipeline.dag.engines.spark.inputs import Inputs, load_inputs
from pipeline.dag.engines.spark.outputs import write_outputs
from pipeline.dag.engines.spark.session import is_local, spark_errors
from pipeline.dag.engines.spark.transpile import to_spark, view_name
from pipeline.dag.models import PUBLISHED_TABLES, STORED
from pipeline.dag.partitions import pass_sql

if TYPE_CHECKING:
    from pipeline.dag.models import Model

PUBLISHED_LAYERS = ("normalized", "attribution", "allocation", "marts")
TELEMETRY_VIEWS = ("attempts", "attempt_resources", "attempt_events", "experiments", "gpu_usage")
log = logging.getLogger("runcost")


class SparkEngine:
    """Builds models as Spark temp views (`layer__name`); tables are checkpointed DataFrames.

    The executors write every published table themselves in ``finish`` (spark.outputs), so the
    run writes no published Parquet for the build (``published_folder`` is None); Spark divides
    the work across executors itself, so no model is built in resource-hash passes.

    A carried period's rows are read from the snapshot into the table's view (spark.carry). A
    temp view holds the plan of the views it read when it was made, not their names: the views
    built before a carry that read a carried table are made again before the next model, so the
    models that combine periods read every period, as DuckDB's views do.
    """

    published_folder: Path | None = None
    carries_periods = True

    def __init__(
        self, session: Any, options: SparkOptions, scratch: Path, owned: bool = False
    ) -> None:
        self.session = session
        self.owned = owned
        self.options = options
        self.scratch = scratch
        self.errors = spark_errors()
        self.local = is_local(options)
        self.views: set[str] = set()
        self.config_tables: list[str] = []  # config.*, published with the models in a catalog
        self.inputs = Inputs()
        # published name -> the Parquet Spark wrote for it, which publish moves into the snapshot
        self.published_files: dict[str, Path] = {}
        self.seconds: dict[str, float] = {}  # inputs, outputs: Spark's work outside the models
        self.partitions_used: dict[str, int] = {}
        self.created: list[Model] = []  # in the order built
        self.changed: set[str] = set()  # carried into since the views reading them were made
        # published name -> its built rows and the snapshot's carried partitions, to link
        self.carried: dict[str, carried.Carried] = {}

    def carry(
        self,
        model: Model,
        folder: Path,
        entry: dict,
        values: list[str],
        keyed: tuple[str, dict] | None = None,
    ) -> None:
        """The snapshot's rows of the periods ``values`` added to the model's view, read by
        the executors and checkpointed; a partitioned table's carried partitions are linked
        into its published folder in ``finish`` instead of written."""
        view = view_name(model.qualified)
        built = self.session.table(view)
        if keyed is not None:
            key, used = keyed
            rows = carried.keyed_rows(self.session, folder, entry, key, (used, values), built)
        else:
            partitions = carried.partition_folders(folder, entry, values)
            rows = carried.partition_rows(self.session, partitions, built)
            self.carried[model.qualified] = carried.Carried(built, tuple(partitions))
        self._register(built.unionByName(rows).localCheckpoint(eager=True), view)
        self.changed.add(model.qualified)

    def _remake_views(self) -> None:
        """Make again, in build order, every view built before a carry that reads a carried
        table or such a view."""
        for model in self.created if self.changed else ():
            if model.materialization not in STORED and self.changed & model.inputs:
                self._register(self._frame(model), view_name(model.qualified))
                self.changed.add(model.qualified)
        self.changed.clear()

    def load_inputs(self, con: duckdb.DuckDBPyConnection) -> None:
        """Register the raw.* and config.* relations of the DuckDB build database in Spark:
        executors read the raw Parquet, small tables pass through the driver (spark.inputs)."""
        started = time.perf_counter()
        self.inputs = load_inputs(self.session, con)
        self.views.update(self.inputs.views)
        self.config_tables = list(self.inputs.config_tables)
        self.seconds["inputs"] = time.perf_counter() - started
        log.info(
            "spark: %d raw views read by the executors (%d Parquet files), %d small tables "
            "(%d rows) through the driver, in %.1f s",
            len(self.inputs.read_by_executors),
            sum(len(files) for files in self.inputs.read_by_executors.values()),
            len(self.inputs.through_driver),
            sum(self.inputs.through_driver.values()),
            self.seconds["inputs"],
            extra={"stage": "build"},
        )

    def prepare(self, schemas: tuple[str, ...]) -> None:
        """Temp views need no schema: `staging.x` is the view `staging__x` (transpile)."""

    def create(self, model: Model) -> None:
        """Build a model; a Spark error is shortened to its message (not the query plan)."""
        self._remake_views()
        frame = self._frame(model)
        if model.materialization in STORED:
            # computed once, like a DuckDB table, instead of re-run by every reader
            frame = frame.localCheckpoint(eager=True)
        self._register(frame, view_name(model.qualified))
        self.created.append(model)

    def _frame(self, model: Model) -> Any:
        # one pass: Spark partitions the work across executors itself (pipeline.dag.partitions)
        return self.session.sql(to_spark(pass_sql(model.sql, 1, 0)))

    def _register(self, frame: Any, view: str) -> None:
        frame.createOrReplaceTempView(view)
        self.views.add(view)

    def check(self, model: Model) -> CheckResult | None:
        self._remake_views()
        query = to_spark(model.sql)
        frame = self.session.sql(f"select * from ({query}) as failing limit {CHECK_SAMPLE_ROWS}")
        rows = [tuple(row) for row in frame.collect()]
        if not rows:
            return None
        total = self.session.sql(f"select count(*) from ({query}) as failing").collect()[0][0]
        return CheckResult(list(frame.columns), rows, int(total))

    def published(self, models: list[Model], with_views: bool = False) -> list[str]:
        """The relations a run publishes: tables past staging, and the telemetry views.

        ``with_views``: also the models published as views (a catalog has no runcost.duckdb to
        hold the views, so they are written as tables there).
        """
        kinds = (*PUBLISHED_TABLES, "view") if with_views else PUBLISHED_TABLES
        names = [
            model.qualified
            for model in models
            if model.layer in PUBLISHED_LAYERS and model.materialization in kinds
        ]
        return names + [f"staging.{name}" for name in TELEMETRY_VIEWS]

    def copy_into(self, con: duckdb.DuckDBPyConnection, models: list[Model]) -> None:
        """Spark writes the published relations as Parquet; ``con`` gets views over the files.

        Spark's values, DuckDB's column types: each view casts to the types DuckDB binds the same
        model to, so a SUM that Spark types BIGINT is published as DuckDB's HUGEINT, as the
        contract says. Publish moves the files into the snapshot (``published_files``).
        """
        names = {
            qualified: f"telemetry.{qualified.split('.', 1)[1]}"
            if qualified.startswith("staging.")
            else qualified
            for qualified in self.published(models)
        }
        started = time.perf_counter()
        self.published_files = write_outputs(
            self.session, con, models, names, self.scratch / "outputs", self.carried
        )
        self.seconds["outputs"] = time.perf_counter() - started
        log.info(
            "spark: %d published tables written as Parquet by the executors in %.1f s",
            len(self.published_files),
            self.seconds["outputs"],
            extra={"stage": "publish"},
        )

    def finish(
        self, con: duckdb.DuckDBPyConnection, models: list[Model], publish: bool = True
    ) -> BuildOutcome:
        """With ``publish``: the published tables into spark.catalog, or as Parquet the
        executors write, with views over it in ``con``. Without (a check failed): nothing is
        written, and ``con`` holds none of the built tables."""
        if not publish:
            return BuildOutcome(in_connection=False)
        self._remake_views()
        if self.options.catalog:
            rows = self.write_catalog(models)
            return BuildOutcome(
                in_connection=False, catalog=self.options.catalog, catalog_rows=rows
            )
        self.copy_into(con, models)
        return BuildOutcome(in_connection=True, published_files=dict(self.published_files))

    def write_catalog(self, models: list[Model]) -> dict[str, int]:
        """Overwrite `<catalog>.<schema>.<table>` for every published relation; rows per table."""
        catalog = self.options.catalog
        rows = {}
        for qualified in [*self.config_tables, *self.published(models, with_views=True)]:
            schema, name = qualified.split(".", 1)
            if schema == "staging":
                schema = "telemetry"
            self.session.sql(f"create namespace if not exists {catalog}.{schema}")
            frame = self.session.table(view_name(qualified))
            frame.write.mode("overwrite").saveAsTable(f"{catalog}.{schema}.{name}")
            rows[f"{schema}.{name}"] = frame.count()
        return rows

    def close(self) -> None:
        """Drop this run's views and cached tables; a local session runcost started is stopped."""
        shutil.rmtree(self.scratch / "outputs", ignore_errors=True)  # published, or not needed
        if self.local and self.owned:
            self.session.stop()
            return
        for view in sorted(self.views):
            self.session.catalog.dropTempView(view)
