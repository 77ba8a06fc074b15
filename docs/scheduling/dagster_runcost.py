"""Dagster: the published runcost snapshot as an asset, materialized by `runcost run` nightly.

Runs as: the user of the Dagster daemon and code server on the runcost machine, which must be
`runcost`, the owner of /srv/runcost (nightly.sh refuses any other user): the asset runs
nightly.sh from their process, as their user.
"""

# No `from __future__ import annotations`: Dagster reads the `context` annotation when the asset
# is defined, and a string annotation fails with "Cannot annotate `context` parameter".
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
