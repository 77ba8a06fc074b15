"""The Spark engine: the same models, transpiled by engines.transpile, on a Spark session."""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
from sqlglot.errors import SqlglotError

from pipeline.common.errors import ConfigError
from pipeline.config.engine import SparkOptions
from pipeline.dag.engines.base import CHECK_SAMPLE_ROWS, CheckResult
from pipeline.dag.engines.spark_inputs import Inputs, load_inputs
from pipeline.dag.engines.spark_outputs import write_outputs
from pipeline.dag.engines.transpile import to_spark, view_name
from pipeline.dag.models import PUBLISHED_TABLES, STORED
from pipeline.dag.partitions import pass_sql

if TYPE_CHECKING:
    from pipeline.dag.models import Model

INSTALL_HINT = "pip install 'runcost[spark]'"
PUBLISHED_LAYERS = ("normalized", "attribution", "allocation", "marts")
TELEMETRY_VIEWS = ("attempts", "attempt_resources", "attempt_events", "experiments")
# Settings that make Spark compute what DuckDB computes (docs/scale.md, "Money on Spark"); they
# are applied after [spark.conf], so a configuration cannot change results by accident.
RESULT_SETTINGS = {
    # DECIMAL(38, 10) + DECIMAL(38, 10) stays DECIMAL(38, 10) (not 38, 9) and a product keeps its
    # scale, as in DuckDB; an overflow raises instead of rounding digits away
    "spark.sql.decimalOperations.allowPrecisionLoss": "false",
    # overflow, a bad cast or a division by zero raises, as in DuckDB (never a silent NULL)
    "spark.sql.ansi.enabled": "true",
    # hour buckets and billing periods are UTC whatever the machine's zone
    "spark.sql.session.timeZone": "UTC",
    # Parquet timestamps as UTC instants in microseconds (DuckDB reads INT96 as naive)
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}
# Planner settings, which [spark.conf] may override. Constraint propagation infers filters from
# every alias of a projection and grows with their combinations: on the profiles of the cost lines
# (the distinct source columns and the profile columns computed from them, several providers in
# one union) it ran the driver out of a 1 GB heap while planning.
PLAN_SETTINGS = {"spark.sql.constraintPropagation.enabled": "false"}
# A local session talks to itself only: no network beyond the loopback interface.
LOCAL_SETTINGS = {
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
}
log = logging.getLogger("runcost")


def _pyspark() -> Any:
    try:
        from pyspark.sql import SparkSession
    except ImportError as error:
        raise ConfigError(
            f'engine = "spark" needs PySpark, which is not installed: run `{INSTALL_HINT}` '
            '(it also needs a Java runtime, 17 or later), or set engine = "duckdb"'
        ) from error
    return SparkSession


def spark_errors() -> tuple[type[BaseException], ...]:
    """What a failing Spark statement raises (classic and Connect sessions)."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    return (PySparkException, Py4JError, SqlglotError)


def is_local(options: SparkOptions) -> bool:
    """A session inside this process's machine (local[*]), not a cluster or Spark Connect."""
    return options.remote is None and options.master.startswith("local")


def open_session(options: SparkOptions, scratch: Path) -> tuple[Any, bool]:
    """The configured Spark session (Spark Connect, a cluster master, or local[*]), and whether
    runcost started it (else it is the caller's active session, which runcost leaves running)."""
    session_class = _pyspark()
    started = session_class.getActiveSession() is None
    builder = session_class.builder.appName("runcost")
    if options.remote:
        builder = builder.remote(options.remote)
    else:
        builder = builder.master(options.master)
        settings = dict(LOCAL_SETTINGS) if is_local(options) else {}
        if is_local(options):
            settings["spark.sql.warehouse.dir"] = str(scratch / "spark-warehouse")
            settings["spark.local.dir"] = str(scratch / "spark-local")
        for key, value in {**settings, **PLAN_SETTINGS, **options.conf}.items():
            builder = builder.config(key, value)
    session = builder.getOrCreate()
    for key, value in {**PLAN_SETTINGS, **options.conf}.items() if options.remote else ():
        session.conf.set(key, value)
    for key, value in RESULT_SETTINGS.items():
        session.conf.set(key, value)
    if not options.remote:
        session.sparkContext.setLogLevel("ERROR")
    return session, started


class SparkEngine:
    """Builds models as Spark temp views (`layer__name`); tables are checkpointed DataFrames."""

    name = "spark"

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

    def load_inputs(self, con: duckdb.DuckDBPyConnection) -> None:
        """Register the raw.* and config.* relations of the DuckDB build database in Spark:
        executors read the raw Parquet, small tables pass through the driver (spark_inputs)."""
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
        # one pass: Spark partitions the work across executors itself (pipeline.dag.partitions)
        frame = self.session.sql(to_spark(pass_sql(model.sql, 1, 0)))
        if model.materialization in STORED:
            # computed once, like a DuckDB table, instead of re-run by every reader
            frame = frame.localCheckpoint(eager=True)
        self._register(frame, view_name(model.qualified))

    def _register(self, frame: Any, view: str) -> None:
        frame.createOrReplaceTempView(view)
        self.views.add(view)

    def check(self, model: Model) -> CheckResult | None:
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
            self.session, con, models, names, self.scratch / "outputs"
        )
        self.seconds["outputs"] = time.perf_counter() - started
        log.info(
            "spark: %d published tables written as Parquet by the executors in %.1f s",
            len(self.published_files),
            self.seconds["outputs"],
            extra={"stage": "publish"},
        )

    def finish(self, con: duckdb.DuckDBPyConnection, models: list[Model]) -> dict[str, int] | None:
        if self.options.catalog:
            return self.write_catalog(models)
        self.copy_into(con, models)
        return None

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
