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


def test_bench_history_smoke(tmp_path: Path) -> None:
    out = tmp_path / "history.json"
    command = [sys.executable, str(ROOT / "bench" / "run.py"), "--months", "2", "--rows", "5_000"]
    command += ["--data", str(tmp_path / "data"), "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    nights = result["nights"]
    assert set(nights) == {
        "first",
        "redelivery",
        "nothing_new",
        "one_month_first",
        "one_month_redelivery",
    }
    for name, night in nights.items():
        assert night["correct"], (name, night["problems"])
        assert night["run_cpu_seconds"] > 0
        assert night["stages"]["ingest"]["cpu_seconds"] >= 0
    months = [month["period"] for month in result["months"]]
    assert months == ["2026-09", "2026-10", "2026-10"]  # the last: the re-delivered revision
    first = nights["first"]["expected"]
    assert first["billing_periods"] == ["2026-09", "2026-10"]
    assert first["cost_lines"] == sum(month["cost_lines"] for month in result["months"][:2])
    # each month its own billing period: the closed one final (invoiced), the newest open
    statuses = {
        item["billing_period"]: item["period_status"]
        for item in nights["first"]["record"]["periods"]
    }
    assert statuses == {"2026-09": "final", "2026-10": "open"}
    # the re-delivery changed the newest month's bill (its tax lines), on both warehouses alike
    redelivered = nights["redelivery"]["published"]
    assert redelivered != nights["first"]["published"]
    assert nights["redelivery"]["status"] == "published"
    one_month = Decimal(nights["one_month_redelivery"]["expected"]["billed_cost"])
    assert one_month - Decimal(nights["one_month_first"]["expected"]["billed_cost"]) == 20
    # the night with nothing new publishes nothing: the run record says unchanged
    nothing = nights["nothing_new"]
    assert nothing["status"] == nothing["record"]["status"] == "unchanged"
    assert nothing["record"]["unchanged_from"]
    assert nothing["published"] == redelivered
    ratios = result["ratios"]
    assert ratios["redelivery_over_one_month_cpu"] > 0
    assert ratios["nothing_new_over_first_cpu"] > 0
    assert len(result["machine"]["load_average"]) == 3
