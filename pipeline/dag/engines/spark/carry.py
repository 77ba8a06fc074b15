"""A Spark build taking the carried billing periods' rows of a published table from a snapshot
(pipeline.run.carry decides which periods; this module moves the rows).

The executors read the snapshot's Parquet of each carried period (the snapshot's folder is on a
filesystem they share with the driver, as the raw bill is), cast to the types of the table the
build made; the model's temp view becomes the build's rows and the carried ones, checkpointed
like a stored table. The executors then write only the built periods (``Carried.built``): the
carried periods' files are hard-linked from the snapshot into the published folder, as DuckDB
links them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from pathlib import Path
from typing import Any

from pipeline.dag.engines.spark.schemas import spark_path
from pipeline.warehouse.sharing import link_or_copy
from pipeline.warehouse.views import PARTITION_COLUMN


@dataclass(frozen=True)
class Carried:
    """A published table of the build with carried periods: its rows built from the built
    months (``built``, which the executors write) and the snapshot's folders of the carried
    periods (linked into the published folder instead of written)."""

    built: Any
    partitions: tuple[Path, ...]


def partition_folders(folder: Path, entry: dict, values: list[str]) -> list[Path]:
    """The snapshot's folders of a table's periods ``values`` (``entry``: its snapshot.json
    entry)."""
    return [folder / entry["path"] / f"{PARTITION_COLUMN}={value}" for value in values]


def _typed(frame: Any, like: Any, value: str | None = None) -> Any:
    """``frame``'s columns cast to the types of ``like``'s, in its order; ``value``: the
    billing period of a partition's files, which hold no column of it."""
    from pyspark.sql.functions import col, lit

    columns = []
    for field in like.schema.fields:
        given = value is not None and field.name == PARTITION_COLUMN
        column = lit(value) if given else col(f"`{field.name}`")
        columns.append(column.cast(_nullable(field.dataType)).alias(field.name))
    return frame.select(*columns)


def _nullable(kind: Any) -> Any:
    """``kind`` with every element, value and field nullable: a cast may not make a column that
    holds nulls not nullable (Spark refuses ARRAY<STRING> to an ARRAY<STRING> without nulls),
    and a union takes either."""
    from pyspark.sql.types import ArrayType, MapType, StructField, StructType

    if isinstance(kind, ArrayType):
        return ArrayType(_nullable(kind.elementType), True)
    if isinstance(kind, MapType):
        return MapType(_nullable(kind.keyType), _nullable(kind.valueType), True)
    if isinstance(kind, StructType):
        return StructType([StructField(f.name, _nullable(f.dataType), True) for f in kind.fields])
    return kind


def partition_rows(session: Any, folders: list[Path], like: Any) -> Any:
    """The rows of the snapshot's partition ``folders`` (`<table>/billing_period=<value>`),
    typed as ``like``. Each partition is read on its own: its billing period is its folder's
    value, not a type Spark infers from it."""
    frames = [
        _typed(session.read.parquet(spark_path(path)), like, path.name.split("=", 1)[1])
        for path in folders
    ]
    return reduce(lambda left, right: left.unionByName(right), frames)


def keyed_rows(
    session: Any,
    folder: Path,
    entry: dict,
    key: str,
    users: tuple[dict, list[str]],
    built: Any,
) -> Any:
    """The rows of an unpartitioned table in the snapshot whose ``key`` the partitions
    ``users`` (a table's entry, its periods) hold and the build's rows ``built`` do not."""
    used, values = users
    stored = _typed(session.read.parquet(spark_path(folder / entry["path"])), built)
    keys = built.select(f"`{key}`")
    wanted = partition_rows(session, partition_folders(folder, used, values), keys).distinct()
    return stored.join(wanted, on=key, how="left_semi").join(keys, on=key, how="left_anti")


def link_carried(target: Path, partitions: tuple[Path, ...]) -> None:
    """Hard-link each carried partition's files into the table's folder ``target`` (a copy
    where the filesystem has no links)."""
    for source in partitions:
        link_or_copy(source, target / source.name)
