"""The Spark engine's outputs: executors write the published Parquet, in the snapshot's layout.

Each published table is written by Spark under the run's scratch folder as publish lays it out
(`marts/attempt_costs/billing_period=2026-03/*.parquet` for a table with billing periods,
`config/x.parquet` otherwise), and the build database gets a view over those files, typed as
DuckDB types the same model, so the run's inspections, totals and content hashes read them as
they read DuckDB's tables. Publish then moves the files into the snapshot instead of copying.
A table with carried periods (spark.carry) has only its built rows written: the carried
partitions are the snapshot's files, hard-linked.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from pipeline.dag.engines.spark.carry import Carried, link_carried
from pipeline.dag.engines.spark.schemas import spark_path
from pipeline.dag.engines.spark.transpile import view_name
from pipeline.dag.partitions import pass_sql
from pipeline.warehouse.snapshots import sql_path
from pipeline.warehouse.views import PARTITION_COLUMN

if TYPE_CHECKING:
    from pipeline.dag.models import Model

# Spark's name for a NULL partition value; DuckDB (and publish) write and read NULL
SPARK_NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def write_outputs(
    session: Any,
    con: duckdb.DuckDBPyConnection,
    models: list[Model],
    published: dict[str, str],
    folder: Path,
    carried: Mapping[str, Carried] | None = None,
) -> dict[str, Path]:
    """Write every published relation as Parquet from Spark; views over it in ``con``.

    ``published`` maps the model a relation is built by (`staging.attempts`) to the name it is
    published as (`telemetry.attempts`); ``carried``: the tables with carried periods, whose
    built rows alone are written. Returns published name -> the file or folder written.
    """
    carried = carried or {}
    from pipeline.dag.models import order

    written: dict[str, Path] = {}
    for model in order(models):
        if model.layer == "checks":
            continue
        con.execute(f"create schema if not exists {model.layer}")
        sql = pass_sql(model.sql, 1, 0)  # DuckDB binds the model as one pass
        if model.qualified not in published:
            con.execute(f"create or replace view {model.qualified} as\n{sql}")
            continue
        bound = con.sql(sql)  # binding computes nothing: DuckDB's types for the model
        columns = [
            (str(name), str(kind)) for name, kind in zip(bound.columns, bound.types, strict=True)
        ]
        name = published[model.qualified]
        frame = session.table(view_name(model.qualified))
        names = [column for column, _ in columns]
        partitioned = PARTITION_COLUMN in names and frame.limit(1).count() > 0
        schema, table = name.split(".", 1)
        if partitioned:
            target = folder / schema / table
            held = carried.get(model.qualified)
            if held is None:
                _write_partitioned(frame, target)
            else:  # the built periods, and the carried ones linked
                if held.built.limit(1).count():
                    _write_partitioned(held.built, target)
                link_carried(target, held.partitions)
            source = (
                f"read_parquet('{sql_path(target)}/*/*.parquet', hive_partitioning = true, "
                f"hive_types = {{'{PARTITION_COLUMN}': '{dict(columns)[PARTITION_COLUMN]}'}})"
            )
        else:
            target = folder / schema / f"{table}.parquet"
            _write_single(frame, target)
            source = f"read_parquet('{sql_path(target)}')"
        select = ", ".join(f'cast("{column}" as {kind}) as "{column}"' for column, kind in columns)
        con.execute(f"create or replace view {model.qualified} as select {select} from {source}")
        written[name] = target
    return written


def _write_partitioned(frame: Any, target: Path) -> None:
    writer = frame.write.mode("overwrite").option("compression", "zstd")
    writer.partitionBy(PARTITION_COLUMN).parquet(spark_path(target))
    _tidy(target)
    for folder in target.glob(f"{PARTITION_COLUMN}={SPARK_NULL_PARTITION}"):
        folder.rename(target / f"{PARTITION_COLUMN}=NULL")


def _write_single(frame: Any, target: Path) -> None:
    """One file, as publish writes a table without billing periods (one task writes it)."""
    spark_folder = target.with_name(f".{target.name}.spark")
    frame.coalesce(1).write.mode("overwrite").option("compression", "zstd").parquet(
        spark_path(spark_folder)
    )
    parts = sorted(spark_folder.glob("part-*.parquet"))
    if len(parts) != 1:
        raise RuntimeError(f"Spark wrote {len(parts)} files for {target}, not 1")
    parts[0].replace(target)
    shutil.rmtree(spark_folder)


def _tidy(folder: Path) -> None:
    """Drop the job's marker and the local filesystem's checksum files: only Parquet stays."""
    for path in [*folder.rglob("_SUCCESS"), *folder.rglob(".*.crc")]:
        path.unlink()
