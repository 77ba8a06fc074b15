"""Models written once, straight into the snapshot's Parquet layout (`-- materialized: parquet`).

A wide table with a row per cost line costs more to write into the build database and then
again into the snapshot than to compute. Such a model is written once, as the Parquet the
snapshot will hold (one hive folder per billing period, as publish writes it), and the build
reads it through a view over the files; publish moves the files into the snapshot instead of
copying the table (as it does with the Parquet Spark's executors write).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from pipeline.common.duck import identifier, literal
from pipeline.warehouse.views import PARTITION_COLUMN

if TYPE_CHECKING:
    from pipeline.dag.models import Model

OPTIONS = "format parquet, compression zstd"
# PARTITION_BY buffers rows per partition; flushing at one row group keeps memory flat
FLUSH_ROWS = 122_880


def write_model(con: duckdb.DuckDBPyConnection, model: Model, outputs: Path) -> Path:
    """Write ``model`` as Parquet under ``outputs`` and make ``model.qualified`` a view over it.

    Returns the file (or the hive folder of a table with billing periods and rows) that publish
    moves to ``<snapshot>/<schema>/<name>``.
    """
    schema, name = model.qualified.split(".", 1)
    columns = [
        (str(row[0]), str(row[1])) for row in con.execute(f"describe ({model.sql})").fetchall()
    ]
    (outputs / schema).mkdir(parents=True, exist_ok=True)
    folder, single = outputs / schema / name, outputs / schema / f"{name}.parquet"
    shutil.rmtree(folder, ignore_errors=True)
    single.unlink(missing_ok=True)
    kinds = dict(columns)
    if PARTITION_COLUMN in kinds:
        con.execute(f"set partitioned_write_flush_threshold = {FLUSH_ROWS}")
        con.execute(
            f"copy ({model.sql}) to {literal(folder)} ({OPTIONS}, "
            f"partition_by ({PARTITION_COLUMN}), filename_pattern 'part_{{i}}')"
        )
    if folder.is_dir() and any(folder.rglob("*.parquet")):
        target = folder
        hive = f"{{{literal(PARTITION_COLUMN)}: {literal(kinds[PARTITION_COLUMN])}}}"
        source = (
            f"read_parquet({literal(f'{folder}/*/*.parquet')}, "
            f"hive_partitioning = true, hive_types = {hive})"
        )
    else:  # no billing periods, or no rows: one file, as publish writes it
        shutil.rmtree(folder, ignore_errors=True)
        target = single
        con.execute(f"copy ({model.sql}) to {literal(single)} ({OPTIONS})")
        source = f"read_parquet({literal(single)})"
    read = {
        str(row[0]): str(row[1])
        for row in con.execute(f"describe select * from {source}").fetchall()
    }
    # the model's column order and types: a hive column comes last and Parquet may widen types
    select = ", ".join(
        identifier(column)
        if read.get(column) == kind
        else f"cast({identifier(column)} as {kind}) as {identifier(column)}"
        for column, kind in columns
    )
    con.execute(f"create or replace view {model.qualified} as select {select} from {source}")
    return target
