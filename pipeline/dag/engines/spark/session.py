"""The Spark session a run builds on: Spark Connect, a cluster master, or local[*], with the
settings that make Spark compute what DuckDB computes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlglot.errors import SqlglotError

from pipeline.common.errors import ConfigError
from pipeline.config.engine import SparkOptions

INSTALL_HINT = "pip install 'runcost[spark]'"
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


# DuckDB functions the models call that Spark SQL has not, registered on every session under the
# same name (the transpiled SQL calls them as DuckDB does)
FUNCTIONS = ("nfc_normalize",)


def register_functions(session: Any) -> None:
    """Register FUNCTIONS on a classic or Spark Connect session, as Python UDFs."""

    # defined here, not at module level, so the UDF is shipped by value: an executor or a Spark
    # Connect server need not have runcost installed
    def nfc_normalize(value: str | None) -> str | None:
        import unicodedata

        # ASCII is NFC already (most tags): returned as it is, as DuckDB's nfc_normalize does
        if value is None or value.isascii():
            return value
        return unicodedata.normalize("NFC", value)

    session.udf.register("nfc_normalize", nfc_normalize, "string")


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
    register_functions(session)
    if not options.remote:
        session.sparkContext.setLogLevel("ERROR")
    return session, started
