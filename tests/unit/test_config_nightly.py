"""warehouse.lock_timeout_seconds: how long a run waits for another run on the same warehouse."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.common.errors import ConfigError
from pipeline.config.loader import parse_config


def test_default_is_ten_minutes(tmp_path: Path) -> None:
    assert parse_config({}, base=tmp_path).lock_timeout_seconds == 600.0


@pytest.mark.parametrize("value", [0, 30, 2.5])
def test_accepts_seconds(tmp_path: Path, value: float) -> None:
    config = parse_config({"warehouse": {"lock_timeout_seconds": value}}, base=tmp_path)
    assert config.lock_timeout_seconds == float(value)


@pytest.mark.parametrize("value", [-1, "10", True])
def test_rejects_anything_else(tmp_path: Path, value: object) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"warehouse": {"lock_timeout_seconds": value}}, base=tmp_path)
    assert str(caught.value) == (
        "runcost.toml: warehouse.lock_timeout_seconds must be a number of seconds, 0 or more "
        "(how long a run waits for another run on the same warehouse)"
    )
