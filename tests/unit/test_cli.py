"""The CLI: exit codes and messages for what goes wrong before any work, and the run summary."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from pipeline.cli.app import ALL_EXPERIMENTS_SQL, _print_run_summary, main
from pipeline.cli.common import EXIT_FAILED, EXIT_USAGE
from pipeline.common.money import MONEY_SQL


def test_version() -> None:
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0
    assert "runcost" in result.output


def test_usage_error_exits_2() -> None:
    result = CliRunner().invoke(main, ["run", "--no-such-option"])
    assert result.exit_code == EXIT_USAGE
    assert "No such option" in result.output


def test_missing_config_exits_1_with_the_fix(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["run", "--config", str(tmp_path / "none.toml")])
    assert result.exit_code == EXIT_FAILED
    assert "error:" in result.output
    assert "no such configuration file; pass --config PATH" in result.output


def test_bad_config_key_exits_1(tmp_path: Path) -> None:
    config = tmp_path / "runcost.toml"
    config.write_text("[aws]\nbucket = 'x'\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["run", "--config", str(config)])
    assert result.exit_code == EXIT_FAILED
    assert (
        "unknown key aws.bucket; allowed in [aws]: endpoint_url, exports, region" in result.output
    )


def test_sql_before_anything_is_published(tmp_path: Path) -> None:
    config = tmp_path / "runcost.toml"
    config.write_text("", encoding="utf-8")
    result = CliRunner().invoke(main, ["sql", "select 1", "--config", str(config)])
    assert result.exit_code == EXIT_FAILED
    assert "nothing is published yet; run `runcost run` first" in result.output


@pytest.mark.parametrize("command", ["run", "demo"])
def test_top_is_a_count(command: str) -> None:
    result = CliRunner().invoke(main, [command, "--top", "-1"])
    assert result.exit_code == EXIT_USAGE
    assert "Invalid value for '--top': -1 is not in the range x>=0." in result.output


BILL = {
    "bill_total": 1234.5,
    "attributed": 1000,
    "shared": 200,
    "unallocated": 34.5,
    "difference": 0,
}


def summary_database(path: Path, experiments: int) -> Path:
    """A database with the two marts the summary reads: exp-i costs i * 100.25 fully loaded."""
    con = duckdb.connect(str(path))
    con.execute("create schema marts")
    con.execute(
        "create table marts.experiment_costs as select 'exp-' || i as experiment_id, "
        "model as allocation_model, 2 as attempts, 1 as failed_attempts, "
        f"cast(i * (case model when 'marginal' then 10 else 100.25 end) as {MONEY_SQL}) "
        f"as effective_cost, cast(i as {MONEY_SQL}) as failed_attempt_cost, "
        f"cast(0 as {MONEY_SQL}) as experiment_only_cost "
        f"from range(1, {experiments + 1}) as numbers(i), "
        "unnest(['marginal', 'fully_loaded']) as models(model)"
    )
    con.execute(
        "create table marts.reconciliation as select 'fully_loaded' as allocation_model, "
        "'effective_cost' as cost_basis, '2026-10' as billing_period, 'USD' as billing_currency, "
        + ", ".join(f"cast({value} as {MONEY_SQL}) as {name}" for name, value in BILL.items())
    )
    con.close()
    return path


@pytest.mark.parametrize(
    ("top", "title", "listed", "more"),
    [
        (1, "the costliest of 12", ["exp-12"], "and 11 more experiments"),
        (2, "the 2 costliest of 12", ["exp-12", "exp-11"], "and 10 more experiments"),
        (
            11,
            "the 11 costliest of 12",
            [f"exp-{i}" for i in range(12, 1, -1)],
            "and 1 more experiment;",
        ),
        (0, None, [f"exp-{i}" for i in range(12, 0, -1)], None),
        (12, None, [f"exp-{i}" for i in range(12, 0, -1)], None),
    ],
)
def test_the_run_summary_lists_the_top_experiments(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
    top: int,
    title: str | None,
    listed: list[str],
    more: str | None,
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    _print_run_summary(summary_database(tmp_path / "runcost.duckdb", 12), "run-1", top)
    text = capsys.readouterr().out
    heading = "Experiment costs, run run-1" + (f": {title}" if title else "")
    assert f"{heading} (effective cost, rounded to the cent)" in " ".join(text.split())
    assert re.findall(r"^(exp-\d+) ", text, re.M) == listed
    row = ["exp-12", "2", "1", "120.00", "1,203.00", "12.00", "0.00"]
    assert row in [line.split() for line in text.splitlines()]
    if more is None:
        assert "more experiment" not in text
    else:
        assert f"{more}" in text
        assert f'  runcost sql "{ALL_EXPERIMENTS_SQL}"\n' in text
    assert re.search(r"^2026-10 +USD +1,234.50 +1,000.00 +200.00 +34.50 +0.00$", text, re.M)
