"""The CLI: exit codes and messages for the ways a run can go wrong before any work starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli.app import main
from pipeline.cli.common import EXIT_FAILED, EXIT_USAGE


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
