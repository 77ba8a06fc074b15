"""The benchmark's world with its bill as FOCUS files or a GCP export, tiny, end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from bench.targets import cross_targets, limit_mb, run_targets, source_targets

ROOT = Path(__file__).resolve().parent.parent
BASES = ("billed_cost", "effective_cost", "list_cost", "net_cost")
SKIPPED = "net_cost: not in expected.json (the source has no such column)"


def _run(tmp_path: Path, source: str, file_format: str) -> dict:
    out = tmp_path / "result.json"
    command = [sys.executable, str(ROOT / "bench" / "run.py"), "--rows", "10_000"]
    command += ["--source", source, f"--{source}-format", file_format, "--no-pandas"]
    command += ["--data", str(tmp_path / "data"), "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(out.read_text(encoding="utf-8"))


def _published_totals(pipeline: dict) -> dict[tuple[str, str], tuple[Decimal, int]]:
    rows = pipeline["published"]["reconciliation"]
    return {(model, basis): (Decimal(total), int(n)) for model, basis, total, _, n in rows}


@pytest.mark.parametrize(
    ("source", "file_format", "names"),
    [
        ("focus", "parquet", ["focus-00001.parquet", "focus-00002.parquet"]),
        ("focus", "csv", ["focus-00001.csv.gz", "focus-00002.csv.gz"]),
        ("gcp", "ndjson", ["billing-000000000001.json", "billing-000000000002.json"]),
        ("gcp", "parquet", ["billing-000000000001.parquet", "billing-000000000002.parquet"]),
    ],
)
def test_bench_run_publishes_the_generated_totals_of_each_source(
    tmp_path: Path, source: str, file_format: str, names: list[str]
) -> None:
    result = _run(tmp_path, source, file_format)
    expected = result["expected"]
    files = sorted((tmp_path / "data").glob(f"*-{source}-{file_format}/{source}/*"))
    assert [path.name for path in files] == names
    pipeline = result["pipeline"]
    assert pipeline["correct"], pipeline["problems"]
    totals = _published_totals(pipeline)
    # FOCUS has no net column: expected.json names none, the check says it skipped it, and
    # runcost publishes a FOCUS line's EffectiveCost as its net cost
    compared = [basis for basis in BASES if basis in expected]
    assert compared == (list(BASES[:3]) if source == "focus" else list(BASES))
    assert pipeline["skipped"] == ([SKIPPED] if source == "focus" else [])
    for model in ("marginal", "fully_loaded"):
        for basis in compared:
            assert totals[model, basis] == (Decimal(expected[basis]), expected["cost_lines"])
        if source == "focus":
            assert totals[model, "net_cost"] == totals[model, "effective_cost"]
    # the same world as the CUR's: its effective cost, its tagged lines; FOCUS adds one
    # unused-commitment row per Savings Plan fee hour (744), GCP drops the negations (credits)
    cur = json.loads(next((tmp_path / "data").glob("*-e0.5/expected.json")).read_text("utf-8"))
    assert Decimal(expected["effective_cost"]) == Decimal(cur["effective_cost"])
    assert expected["tagged_lines"] == cur["tagged_lines"] > 0
    if source == "focus":
        assert expected["cost_lines"] == cur["cost_lines"] + 744
        assert Decimal(expected["billed_cost"]) == Decimal(cur["billed_cost"])
    else:
        assert expected["cost_lines"] < cur["cost_lines"]
        assert Decimal(expected["net_cost"]) == Decimal(cur["net_cost"])
    assert result["floor"]["rows"] == expected["cost_lines"]


def _result(source: str, cpu: float, limit: str | None, peak: float, rows: int = 1_000_000) -> dict:
    return {
        "spec": {"rows": rows, "skew": False},
        "source": source,
        "memory_limit": limit,
        "expected": {"cost_lines": rows},
        "pipeline": {
            "cpu_seconds": cpu,
            "total_seconds": cpu,
            "peak_rss_mb": peak,
            "correct": True,
        },
        "repeat_identical": None,
    }


@pytest.mark.parametrize(("cpu", "peak", "met"), [(14.9, 1_192.0, True), (15.1, 1_193.0, False)])
def test_each_source_is_judged_against_the_cur_run_and_its_memory_limit(
    cpu: float, peak: float, met: bool
) -> None:
    cur = _result("aws", 10.0, "1GB", 600.0)
    focus = _result("focus", cpu, "1GB", peak)
    verdicts = source_targets([focus, cur])
    assert [verdict.met for verdict in verdicts] == [met]
    assert verdicts[0].measured == f"{cpu / 10:.2f}x"
    # 1GB is 953.7 MiB (RSS is measured in MiB); plus 25 %: 1,192 MiB
    peak_verdict = run_targets(focus)[0]
    assert peak_verdict.met is met
    assert peak_verdict.measured == f"peak {peak:,.0f} MB, bound 1,192 MB"
    assert limit_mb("1536MB") == 1536e6 / 2**20 and limit_mb("4GiB") == 4096
    # a CUR run with another memory_limit is no reference
    assert source_targets([focus, _result("aws", 10.0, None, 600.0)])[0].met is None


def test_a_run_of_another_source_is_never_the_cur_run_a_cross_target_compares() -> None:
    runs = [
        _result("focus", 100.0, "4GB", 600.0, rows=10_000_000),
        _result("aws", 500.0, "4GB", 600.0, rows=50_000_000),
    ]
    assert cross_targets(runs)[0].met is None
    runs.append(_result("aws", 100.0, "4GB", 600.0, rows=10_000_000))
    assert cross_targets(runs)[0].met is True
