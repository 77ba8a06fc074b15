"""[economics] in runcost.toml: defaults, overrides, refusals, and config.economics."""

from __future__ import annotations

import duckdb
import pytest

from pipeline.common.errors import ConfigError
from pipeline.config.loader import Economics, parse_config
from pipeline.run.settings import write_economics_settings


def test_defaults_are_the_documented_calibration(tmp_path) -> None:
    economics = parse_config({}, base=tmp_path).economics
    # Llama 3: 419 interruptions / (16,384 GPUs x 54 days x 24 h) = 1.97e-5 per GPU-hour
    assert round(419 / (16384 * 54 * 24), 7) == economics.failure_rate_per_gpu_hour
    assert economics == Economics(1.97e-5, 10.0, 60.0, 1.0, 24.0, 7.0)


def test_overrides_reach_config_economics(tmp_path) -> None:
    config = parse_config(
        {"economics": {"recovery_minutes": 15, "stale_checkpoint_days": 30}}, base=tmp_path
    )
    con = duckdb.connect()
    write_economics_settings(con, config)
    row = con.execute(
        "select failure_rate_per_gpu_hour, recovery_minutes, stale_checkpoint_days "
        "from config.economics"
    ).fetchall()
    assert row == [(1.97e-5, 15.0, 30.0)]


@pytest.mark.parametrize("value", [0, -1, "10", True])
def test_refuses_non_positive_or_non_numbers(tmp_path, value) -> None:
    with pytest.raises(ConfigError, match=r"economics\.recovery_minutes must be a number above 0"):
        parse_config({"economics": {"recovery_minutes": value}}, base=tmp_path)


def test_refuses_unknown_keys(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"unknown key economics\.mtbf"):
        parse_config({"economics": {"mtbf": 3}}, base=tmp_path)
