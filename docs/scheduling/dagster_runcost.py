"""Dagster: the published runcost snapshot as an asset, materialized by `runcost run` nightly."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import dagster as dg

RUNCOST_HOME = Path("/srv/runcost")


@dg.asset(description="runcost's published snapshot (warehouse/runcost.duckdb)")
def runcost_snapshot(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    completed = subprocess.run(
        [str(RUNCOST_HOME / "nightly.sh")],
        cwd=RUNCOST_HOME,
        capture_output=True,
        text=True,
        check=False,
    )
    context.log.info(completed.stderr[-20000:])
    if completed.returncode != 0:
        raise dg.Failure(
            f"runcost run exited {completed.returncode}",
            metadata={"stderr": dg.MetadataValue.text(completed.stderr[-5000:])},
        )
    pointer = json.loads((RUNCOST_HOME / "warehouse" / "CURRENT").read_text(encoding="utf-8"))
    return dg.MaterializeResult(metadata={"snapshot": pointer["run_id"]})


nightly = dg.ScheduleDefinition(
    name="runcost_nightly",
    target=dg.AssetSelection.assets(runcost_snapshot),
    cron_schedule="30 6 * * *",
    execution_timezone="UTC",
)

defs = dg.Definitions(assets=[runcost_snapshot], schedules=[nightly])
