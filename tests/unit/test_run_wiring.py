"""The nightly run hands its clock and --allow-shrink periods to the stages that judge them."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.common.errors import InputError
from pipeline.config.loader import load_config
from pipeline.run import stages
from pipeline.run.nightly import run_pipeline
from pipeline.scenario import write_scenario


def test_allow_shrink_reaches_the_restated_account_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, ...]] = []
    inspect = stages.inspect_build

    def recording(con, config, clock, allow_shrink=(), built=None):  # type: ignore[no-untyped-def]
        seen.append(tuple(allow_shrink))
        return inspect(con, config, clock, allow_shrink, built)

    monkeypatch.setattr(stages, "inspect_build", recording)
    config = load_config(write_scenario(tmp_path / "world"))
    run_pipeline(config, now=datetime(2026, 11, 20, 12, tzinfo=UTC), allow_shrink=("2026-10",))
    assert seen == [("2026-10",)]


def test_telemetry_is_judged_by_the_runs_clock_not_the_hosts(tmp_path: Path) -> None:
    # the scenario's attempts run in October 2026: a run whose clock is 2026-10-02 finds
    # attempts more than a day past it, whatever the host's own clock says
    config = load_config(write_scenario(tmp_path / "world"))
    with pytest.raises(InputError, match="is in the future: after the run's clock 2026-10-02"):
        run_pipeline(config, now=datetime(2026, 10, 2, tzinfo=UTC))
