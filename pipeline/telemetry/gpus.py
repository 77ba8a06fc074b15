"""GPUs per instance type (a shipped table), and telemetry that claims more GPUs than it held."""

from __future__ import annotations

import csv
import functools
import io
from importlib import resources

import polars as pl

from pipeline.telemetry.canonical import ROW, ROWS_SHOWN, Problem
from pipeline.telemetry.conversion import show

# EC2 and Compute Engine GPU instance types -> GPUs per instance, as the providers document
# them; a SageMaker ml.<type> has the GPUs of <type>. An unlisted type is not checked.
INSTANCE_TABLE = "instance_gpus.csv"


@functools.cache
def gpus_per_instance() -> dict[str, int]:
    """Instance type -> GPUs one instance of it has."""
    text = resources.files("pipeline.telemetry").joinpath("data", INSTANCE_TABLE).read_text()
    return {
        row["instance_type"]: int(row["gpu_count"]) for row in csv.DictReader(io.StringIO(text))
    }


def _per_instance(instance_type: pl.Expr) -> pl.Expr:
    table = gpus_per_instance()
    return (
        instance_type.str.strip_chars()
        .str.strip_prefix("ml.")
        .replace_strict(list(table), list(table.values()), default=None, return_dtype=pl.Int64)
    )


def attempt_gpu_claims(attempts: pl.DataFrame) -> pl.DataFrame:
    """ROW, gpu_count, node_count, instance_type and per (GPUs per instance) of the attempts
    whose gpu_count exceeds node_count (empty: 1) instances of their type."""
    nodes = pl.col("node_count").fill_null(1)
    return attempts.select(
        ROW, "gpu_count", "node_count", "instance_type", per=_per_instance(pl.col("instance_type"))
    ).filter((pl.col("gpu_count") > pl.col("per") * nodes.clip(lower_bound=1)).fill_null(False))


def attempt_gpu_problems(attempts: pl.DataFrame) -> list[Problem]:
    """Attempts whose gpu_count exceeds node_count (empty: 1) instances of their type."""
    found = attempt_gpu_claims(attempts)

    def text(gpus: int, count: int | None, kind: str, per: int) -> str:
        instances = "1 instance (node_count is empty)" if count is None else f"{count} instance(s)"
        return (
            f"{gpus} GPUs claimed on {instances} of {show(kind)}, which has {per} GPUs each; "
            "fix gpu_count (the attempt's total), or set node_count to the number of instances "
            "it ran on"
        )

    return _listed(
        [
            Problem((row,), "gpu_count", text(gpus, count, kind, per))
            for row, gpus, count, kind, per in found.iter_rows()
        ]
    )


def resource_gpu_problems(resources_frame: pl.DataFrame, attempts: pl.DataFrame) -> list[Problem]:
    """Resource rows (one instance each) claiming more GPUs than their attempt's instance type
    has."""
    types = attempts.select("attempt_id", "instance_type")
    found = (
        resources_frame.select(ROW, "attempt_id", "resource_id", "gpu_count")
        .join(types, on="attempt_id", how="left")
        .with_columns(per=_per_instance(pl.col("instance_type")))
        .filter((pl.col("gpu_count") > pl.col("per")).fill_null(False))
        .sort(ROW)
    )
    return _listed(
        [
            Problem(
                (row,),
                "gpu_count",
                f"{gpus} GPUs claimed on resource {show(resource)} of attempt {show(attempt)}, "
                f"a {show(kind)} with {per} GPUs; fix gpu_count (a row is one resource: list "
                "each instance in its own row)",
            )
            for row, attempt, resource, gpus, kind, per in found.select(
                ROW, "attempt_id", "resource_id", "gpu_count", "instance_type", "per"
            ).iter_rows()
        ]
    )


def _listed(problems: list[Problem]) -> list[Problem]:
    if len(problems) <= ROWS_SHOWN:
        return problems
    last = problems[ROWS_SHOWN - 1]
    more = len(problems) - ROWS_SHOWN
    return [*problems[: ROWS_SHOWN - 1], Problem(last.rows, last.column, last.text, more)]
