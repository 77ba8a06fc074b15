"""The benchmark's world with its bill as FOCUS files, at a tiny scale, end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("focus_format", ["parquet", "csv"])
def test_bench_run_focus_publishes_the_generated_totals(tmp_path: Path, focus_format: str) -> None:
    out = tmp_path / "result.json"
    command = [sys.executable, str(ROOT / "bench" / "run.py"), "--rows", "10_000"]
    command += ["--source", "focus", "--focus-format", focus_format, "--no-pandas"]
    command += ["--data", str(tmp_path / "data"), "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    expected = result["expected"]
    suffix = {"parquet": ".parquet", "csv": ".csv.gz"}[focus_format]
    files = sorted((tmp_path / "data").glob("*-focus-*/focus/*"))
    assert [path.name for path in files] == [f"focus-0000{n}{suffix}" for n in (1, 2)]
    # FOCUS has no net column: expected.json names none and the check says it skipped it
    assert set(expected) >= {"billed_cost", "effective_cost", "list_cost", "tagged_billed_cost"}
    assert "net_cost" not in expected
    pipeline = result["pipeline"]
    assert pipeline["correct"], pipeline["problems"]
    assert pipeline["skipped"] == ["net_cost: not in expected.json (the source has no such column)"]
    rows = pipeline["published"]["reconciliation"]
    totals = {
        (model, basis): (Decimal(total), int(lines)) for model, basis, total, _, lines in rows
    }
    for model in ("marginal", "fully_loaded"):
        for basis in ("billed_cost", "effective_cost", "list_cost"):
            assert totals[model, basis] == (Decimal(expected[basis]), expected["cost_lines"])
        # runcost publishes a FOCUS line's EffectiveCost as its net cost
        assert totals[model, "net_cost"] == totals[model, "effective_cost"]
    # the CUR world's lines, plus one unused-commitment row per Savings Plan fee hour (744)
    cur = json.loads(next((tmp_path / "data").glob("*-e0.5/expected.json")).read_text("utf-8"))
    assert expected["cost_lines"] == cur["cost_lines"] + 744
    assert Decimal(expected["billed_cost"]) == Decimal(cur["billed_cost"])
    assert Decimal(expected["effective_cost"]) == Decimal(cur["effective_cost"])
    assert expected["tagged_lines"] == cur["tagged_lines"] > 0
    assert result["floor"]["rows"] == expected["cost_lines"]
