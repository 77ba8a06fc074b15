"""A run lets go of what it has handed to the build database, so memory_limit bounds it."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from pipeline.config.loader import load_config
from pipeline.run import stages
from pipeline.run.nightly import run_pipeline
from pipeline.scenario import write_scenario
from pipeline.warehouse.snapshots import open_database


def test_the_telemetry_tables_are_released_once_the_build_database_has_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded: list[dict[str, pa.Table]] = []
    held_at_build: list[int] = []
    telemetry, build_models = stages.telemetry, stages.build_models

    def keep(*args: object) -> dict[str, pa.Table]:
        tables = telemetry(*args)
        loaded.append(tables)
        return tables

    def watch(*args: object) -> object:
        held_at_build.append(sum(len(tables) for tables in loaded))
        return build_models(*args)

    monkeypatch.setattr(stages, "telemetry", keep)
    monkeypatch.setattr(stages, "build_models", watch)
    result = run_pipeline(load_config(write_scenario(tmp_path / "world")))
    assert held_at_build == [0]  # the run held no Arrow table while the models were built
    with open_database(result.database) as con:
        attempts = con.execute("select count(*) from telemetry.attempts").fetchone()
    assert attempts is not None and attempts[0] > 0  # and the build had them all the same
