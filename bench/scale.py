"""A large, real-shaped CUR 2.0 export with telemetry, generated in DuckDB and written in chunks."""

from __future__ import annotations

import itertools
import json
from dataclasses import asdict
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from bench.scale_render import expected_sql, render_sql
from bench.scale_sql import (
    BATCH,
    BLOCK,
    EXPORT_DIR,
    EXPORT_NAME,
    PERIOD,
    ScaleSpec,
    attempts_sql,
    extras_sql,
    lines_sql,
    resources_sql,
)
from pipeline.ingest.aws.manifest import write_manifest
from pipeline.telemetry.canonical import arrow_schema as telemetry_schema
from schemas.aws_cur2 import COLUMNS, arrow_schema


def _write(con: duckdb.DuckDBPyConnection, sql: str, path: Path, schema: pa.Schema) -> int:
    """Stream a query into one Parquet file with exactly `schema`; returns rows written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = 0
    with pq.ParquetWriter(path, schema, compression="snappy") as writer:
        for batch in con.sql(sql).to_arrow_reader(BATCH):
            # a column the generator does not write (an optional telemetry column) is empty
            columns = [
                batch.column(field.name)
                if field.name in batch.schema.names
                else pa.nulls(batch.num_rows, field.type)
                for field in schema
            ]
            writer.write_batch(pa.RecordBatch.from_arrays(columns, names=schema.names).cast(schema))
            rows += batch.num_rows
    return rows


def generate(spec: ScaleSpec, out_dir: Path, threads: int | None = None) -> dict:
    """Write the export, telemetry, runcost.toml and expected.json into out_dir; return expected."""
    out_dir = Path(out_dir)
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    con.execute("set enable_progress_bar = false")
    # insertion order kept: the same seed writes the same rows in the same order (same bytes)
    if threads:
        con.execute(f"set threads = {int(threads)}")
    export = out_dir / EXPORT_DIR
    partition = f"BILLING_PERIOD={spec.period}"
    node_rows = spec.node_hours * BLOCK
    bounds = [*range(0, node_rows, spec.rows_per_file), node_rows]
    schema = arrow_schema()
    keys: list[str] = []
    totals = [0] * 7
    chunks = [lines_sql(spec, lo, hi) for lo, hi in itertools.pairwise(bounds)]
    for number, semantic in enumerate([*chunks, extras_sql(spec)], start=1):
        key = f"data/{partition}/{EXPORT_NAME}-{number:05d}.snappy.parquet"
        _write(con, render_sql(semantic, spec), export / key, schema)
        keys.append(key)
        row = con.execute(expected_sql(semantic, spec)).fetchall()[0]
        totals = [a + int(b or 0) for a, b in zip(totals, row, strict=True)]
    write_manifest(
        export / "metadata" / partition / f"{EXPORT_NAME}-Manifest.json",
        export_name=EXPORT_NAME,
        bucket="runcost-bench-billing",
        prefix=f"exports/{EXPORT_NAME}",
        billing_period=spec.period,
        execution_id=execution_id(spec),
        data_keys=keys,
        columns=list(COLUMNS),
    )
    telemetry = out_dir / "telemetry"
    con.execute(f"create temp table attempts as {attempts_sql(spec)}")
    attempts = _write(
        con,
        "select * exclude (g) from attempts",
        telemetry / "attempts.parquet",
        telemetry_schema("attempts"),
    )
    resources = _write(
        con,
        resources_sql(spec),
        telemetry / "attempt_resources.parquet",
        telemetry_schema("attempt_resources"),
    )
    con.close()
    (out_dir / "runcost.toml").write_text(config_text(), encoding="utf-8")
    micro = Decimal(1_000_000)
    expected = {
        "spec": asdict(spec),
        "billing_period": spec.period,
        "cost_lines": totals[0],
        "billed_cost": str(Decimal(totals[1]) / micro),
        "list_cost": str(Decimal(totals[2]) / micro),
        "effective_cost": str(Decimal(totals[3]) / micro),
        "net_cost": str(Decimal(totals[4]) / micro),
        "tagged_lines": totals[5],
        "tagged_billed_cost": str(Decimal(totals[6]) / micro),
        "attempts": attempts,
        "attempt_resources": resources,
        "data_files": len(keys),
    }
    (out_dir / "expected.json").write_text(json.dumps(expected, indent=2) + "\n", "utf-8")
    return expected


def execution_id(spec: ScaleSpec) -> str:
    """The delivery's manifest executionId: one per month and revision (a UUID's shape)."""
    if spec.period == PERIOD and not spec.revision:
        return f"00000000-0000-4000-8000-{spec.seed:012d}"
    month = spec.period.replace("-", "")
    return f"00000000-{spec.revision:04d}-4000-8000-{month}{spec.seed:06d}"


def config_text(warehouse: str = "warehouse", memory_limit: str | None = None) -> str:
    """A runcost.toml for the generated world; the EKS cluster fee is pooled per hour."""
    limit = f'memory_limit = "{memory_limit}"\n' if memory_limit else ""
    return f"""\
# Written by bench.scale: a large generated world for the benchmark.
[warehouse]
path = "{warehouse}"
{limit}
[aws]
exports = ["{EXPORT_DIR}"]

[telemetry]
path = "telemetry"

[attribution]
attempt_tag_keys = ["user_attempt_id"]
experiment_tag_keys = ["user_experiment_id"]

[[pools]]
name = "eks-control-plane"
selector = "service_name = 'AmazonEKS'"
driver = "gpu_seconds"
spread = "charge_period"
"""
