"""The benchmark at a tiny scale: generator shape and totals, join plan shape, and a smoke run."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from bench.plan import check_plan, join_plan
from bench.scale import ScaleSpec, generate
from pipeline.telemetry.canonical import arrow_schema as telemetry_schema
from schemas.aws_cur2 import arrow_schema

ROOT = Path(__file__).resolve().parent.parent


def test_generated_export_has_the_cur2_schema_and_the_expected_bill(tmp_path: Path) -> None:
    expected = generate(ScaleSpec(rows=20_000, seed=3), tmp_path)
    files = sorted((tmp_path / "aws").rglob("*.parquet"))
    assert len(files) == expected["data_files"] == 2
    for path in files:
        assert pq.read_schema(path).equals(arrow_schema())
    telemetry = tmp_path / "telemetry"
    assert pq.read_schema(telemetry / "attempts.parquet").equals(telemetry_schema("attempts"))
    resources = pq.read_schema(telemetry / "attempt_resources.parquet")
    assert resources.equals(telemetry_schema("attempt_resources"))
    listed = [str(path) for path in files]
    billed, lines = duckdb.sql(
        "select sum(cast(line_item_unblended_cost as decimal(38, 10))), count(*) "
        f"from read_parquet({listed})"
    ).fetchall()[0]
    assert lines == expected["cost_lines"] == 20_000 + 744 + 2 * 744 + 20
    assert billed == Decimal(expected["billed_cost"])
    again = generate(ScaleSpec(rows=20_000, seed=3), tmp_path / "again")
    assert again == expected


def test_resource_time_join_is_a_hash_join_on_resource_and_hour(tmp_path: Path) -> None:
    generate(ScaleSpec(rows=20_000, skew=True), tmp_path)
    plan = check_plan(join_plan(tmp_path / "runcost.toml"))
    assert plan["hash_join_on_resource_hour"], plan
    assert plan["forbidden_operators"] == []
    assert sorted(plan["conditions"]) == [
        "hour_start_us = hour_start_us",
        "resource_id = resource_id",
    ]


def test_bench_run_smoke(tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    command = [sys.executable, str(ROOT / "bench" / "run.py"), "--rows", "20_000"]
    command += ["--data", str(tmp_path / "data"), "--out", str(out), "--subset", "20_000"]
    command.append("--nightly")
    has_pandas = importlib.util.find_spec("pandas") is not None  # the `bench` extra
    if not has_pandas:
        command.append("--no-pandas")
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    pipeline = result["pipeline"]
    assert pipeline["correct"], pipeline["problems"]
    assert pipeline["plan"]["ok"]
    stages = set(pipeline["stages"])
    assert {"ingest", "normalized", "attribution", "allocation", "marts", "checks"} <= stages
    assert result["floor"]["rows"] == result["expected"]["cost_lines"]
    assert "pipeline_over_floor" in result["ratios"]
    if has_pandas:
        assert result["pandas"]["lines"] == 20_000
        assert result["pandas"]["overlap_pairs"] > 0
        assert "pandas_over_pipeline" in result["ratios"]
        assert result["ratios"]["pandas_over_pipeline_attribution_cpu"] > 0
    assert pipeline["disk_peaks"]["warehouse"]["bytes"] > 0  # the snapshot, at least
    assert result["repeat_identical"] is None  # first run on a fresh dataset
    # the next night's run, over the first run's snapshot, publishes the same totals
    nightly = result["nightly"]
    assert nightly["correct"], nightly["problems"]
    assert nightly["published"] == pipeline["published"]
    assert result["ratios"]["nightly_over_first_cpu"] > 0
