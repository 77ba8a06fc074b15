"""bench/targets.py: each target judged met, not met or not shown from benchmark results."""

from __future__ import annotations

import json
from pathlib import Path

from bench.targets import cross_targets, main, run_targets


def result(rows: int, seconds: float, *, skew: bool = False, limit: str | None = "4GB", **extra):
    lines = rows + 2_252
    return {
        "spec": {"rows": rows, "skew": skew},
        "memory_limit": limit,
        "expected": {"cost_lines": lines},
        "pipeline": {
            "total_seconds": seconds,
            "cpu_seconds": seconds * 2,
            "peak_rss_mb": extra.get("peak", 1_000),
            "correct": extra.get("correct", True),
        },
        "ratios": extra.get("ratios", {}),
        "repeat_identical": extra.get("identical"),
    }


def states(verdicts) -> list[bool | None]:
    return [verdict.met for verdict in verdicts]


def test_one_run_judges_memory_ratios_and_repeats() -> None:
    fast = result(
        10_000_000,
        9.0,
        limit="1536MB",
        peak=1_500,
        identical=True,
        ratios={
            "pipeline_over_floor_cpu": 25.0,
            "pandas_over_pipeline_cpu": 12.0,
            "pandas_over_pipeline_attribution_cpu": 40.0,
            "pandas_rss_over_pipeline_rss": 3.0,
        },
    )
    assert states(run_targets(fast)) == [True, True, True, True]
    assert "12.0x less CPU (the attribution stage alone 40.0x)" in run_targets(fast)[2].measured
    slow = result(
        10_000_000,
        200.0,
        limit="1536MB",
        peak=3_000,
        identical=False,
        ratios={
            "pipeline_over_floor_cpu": 95.0,
            "pandas_over_pipeline_cpu": 0.5,
            "pandas_rss_over_pipeline_rss": 6.0,
        },
    )
    assert states(run_targets(slow)) == [False, False, False, False]
    # the peak target needs memory_limit=1536MB; the floor ratio is judged at 10M only
    other = result(1_000_000, 9.0, limit="4GB", ratios={"pipeline_over_floor_cpu": 25.0})
    assert states(run_targets(other)) == [None, None]
    assert "shown, not judged" in run_targets(other)[0].measured
    assert states(run_targets(result(1_000, 1.0, peak=10)))[-1] is None, "no earlier run"


def test_scaling_100m_and_skew_compare_runs() -> None:
    runs = [
        result(10_000_000, 100.0),
        result(50_000_000, 540.0),
        result(100_000_000, 1_200.0),
        result(10_000_000, 250.0, skew=True),
    ]
    verdicts = cross_targets(runs)
    assert states(verdicts) == [True, True, True]
    assert "5.40x CPU" in verdicts[0].measured
    assert "2.50x CPU" in verdicts[2].measured
    runs[1]["pipeline"]["cpu_seconds"] = 1_200.0
    runs[3]["pipeline"]["cpu_seconds"] = 800.0
    assert states(cross_targets(runs)) == [False, True, False]
    assert states(cross_targets([result(10_000_000, 1.0, limit=None)])) == [None, None, None]
    failed = result(100_000_000, 1.0, correct=False)
    assert cross_targets([failed])[1].met is None, "an incorrect run shows nothing"


def test_main_reads_result_files(tmp_path: Path, capsys) -> None:
    path = tmp_path / "r.json"
    run = result(10_000_000, 2.0, limit="1536MB", peak=3_000)
    path.write_text(json.dumps(run), encoding="utf-8")
    assert main([str(path)]) == 0
    printed = capsys.readouterr().out
    assert "NOT met" in printed and "not shown" in printed
    (tmp_path / "other.json").write_text("{}", encoding="utf-8")
    assert main([str(tmp_path / "other.json")]) == 1
