"""The scenario as a gzip CSV export read from S3 publishes exactly the Parquet export's marts."""

from __future__ import annotations

import csv
import math
import tomllib
from decimal import Decimal
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline import scenario
from pipeline.config.loader import load_config, parse_config
from pipeline.run.nightly import run_pipeline
from pipeline.scenario.cur_csv import write_csv_scenario
from pipeline.warehouse.snapshots import open_database
from schemas.aws_cur2 import arrow_schema

BUCKET = "billing-bucket"  # the conftest s3 fixture creates it
PREFIX = f"cur/{scenario.EXPORT_NAME}"
pytestmark = pytest.mark.slow


def marts(database: Path) -> dict[str, list[tuple]]:
    con = open_database(database)
    try:
        names = [
            row[0]
            for row in con.execute(
                "select table_name from information_schema.tables "
                "where table_schema = 'marts' order by 1"
            ).fetchall()
        ]
        return {
            name: con.execute(f"select * from marts.{name} order by all").fetchall()
            for name in names
        }
    finally:
        con.close()


def same(got: object, want: object) -> bool:
    """Equal; DOUBLE aggregates only to 1e-12 relative (DuckDB sums floats in any order)."""
    if isinstance(got, float) and isinstance(want, float):
        return math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-12)
    return got == want


def test_csv_export_publishes_the_same_marts_as_parquet(tmp_path: Path, s3) -> None:
    url, client, _gets = s3
    parquet_world = tmp_path / "parquet"
    parquet_run = run_pipeline(load_config(scenario.write_scenario(parquet_world)))
    csv_world = tmp_path / "csv"
    write_csv_scenario(csv_world)
    export_root = csv_world / scenario.EXPORT_DIR
    uploaded = sorted(p.relative_to(export_root).as_posix() for p in export_root.rglob("*.*"))
    assert [name for name in uploaded if name.startswith("data/")] == [
        f"data/BILLING_PERIOD=2026-10/{scenario.EXPORT_NAME}-00001.csv.gz"
    ]
    for name in uploaded:
        client.upload_file(str(export_root / name), BUCKET, f"{PREFIX}/{name}")
    data = tomllib.loads((csv_world / "runcost.toml").read_text(encoding="utf-8"))
    data["aws"] = {"exports": [f"s3://{BUCKET}/{PREFIX}"], "endpoint_url": url}

    csv_run = run_pipeline(parse_config(data, base=csv_world, path=csv_world / "runcost.toml"))

    # The staged table is the Parquet export's, value for value and type for type.
    [delivery] = csv_run.deliveries
    [converted] = delivery.files
    assert converted.relative_to(delivery.folder).as_posix() == (
        f"converted/{scenario.EXPORT_NAME}-00001.parquet"
    )
    staged = pq.read_table(converted)
    assert staged.schema.equals(arrow_schema())
    assert staged.equals(pq.read_table(parquet_run.deliveries[0].files[0]))
    assert (delivery.folder / f"{scenario.EXPORT_NAME}-00001.csv.gz").is_file()  # kept as delivered

    expected = marts(parquet_run.database)
    actual = marts(csv_run.database)
    assert sorted(actual) == sorted(expected)
    assert {"attempt_costs", "experiment_costs", "reconciliation"} <= set(actual)
    for name, rows in expected.items():
        assert len(actual[name]) == len(rows), name
        for got, want in zip(actual[name], rows, strict=True):
            assert all(map(same, got, want)), (name, got, want)

    with (csv_world / "expected" / "bill_totals.csv").open(encoding="utf-8", newline="") as f:
        (totals,) = list(csv.DictReader(f))
    con = open_database(csv_run.database)
    reconciliation = con.execute(
        "select cost_basis, bill_total, difference from marts.reconciliation"
    ).fetchall()
    con.close()
    assert len(reconciliation) == 8
    for basis, bill_total, difference in reconciliation:
        assert difference == 0
        assert Decimal(str(bill_total)) == Decimal(totals[basis])
