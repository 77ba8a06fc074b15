"""A small, realistic world (CUR 2.0 export, telemetry, runcost.toml) with its expected costs."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

from pipeline.scenario.cur_writer import write_cur_delivery
from pipeline.scenario.expected import write_expected
from pipeline.scenario.gcp_scenario import write_gcp_scenario
from pipeline.scenario.oracle import OraclePool, compute
from pipeline.scenario.telemetry_writer import write_telemetry
from pipeline.scenario.world import build_world

EXPORT_NAME = "runcost-cur"
EXPORT_DIR = f"aws/exports/{EXPORT_NAME}"
ATTEMPT_TAG_KEYS = ("user_attempt_id",)
EXPERIMENT_TAG_KEYS = ("user_experiment_id",)

CONFIG = f"""\
# The runcost demo world, written by pipeline.scenario.write_scenario; see fixtures/README.md.
[warehouse]
path = "warehouse"

[aws]
exports = ["{EXPORT_DIR}"]

[telemetry]
path = "telemetry"

[attribution]
attempt_tag_keys = ["user_attempt_id"]
experiment_tag_keys = ["user_experiment_id"]

# The EKS control plane serves every training job: spread each hour's fee over the month's
# attempts by GPU-seconds.
[[pools]]
name = "eks-control-plane"
selector = "service_name = 'AmazonEKS'"
driver = "gpu_seconds"
spread = "billing_period"

# The Savings Plan's unused commitment is idle capacity the on-demand fleet was sized for:
# spread what its hourly fee did not cover over on-demand attempts, by GPU-seconds.
[[pools]]
name = "unused-savings-plan"
selector = "provider_line_type = 'SavingsPlanRecurringFee'"
attempts = "capacity_type = 'on_demand'"
driver = "gpu_seconds"
spread = "billing_period"
"""

# The oracle's reading of the pool above (service_name is the CUR product code).
POOLS = [
    OraclePool(
        name="eks-control-plane",
        matches=lambda line: line.product_code == "AmazonEKS",
        driver="gpu_seconds",
        spread="billing_period",
    ),
    OraclePool(
        name="unused-savings-plan",
        matches=lambda line: line.line_item_type == "SavingsPlanRecurringFee",
        driver="gpu_seconds",
        spread="billing_period",
        eligible=lambda attempt: attempt.capacity_type == "on_demand",
    ),
]


def execution_id(seed: int) -> str:
    """A stable, UUID-shaped Data Exports execution id for a seed."""
    digest = hashlib.sha256(f"runcost-demo:{seed}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def write_scenario(out_dir: Path, seed: int = 7) -> Path:
    """Write the demo world into out_dir and return its runcost.toml; same seed, same bytes."""
    out_dir = Path(out_dir)
    world = build_world(seed)
    write_cur_delivery(
        out_dir / EXPORT_DIR,
        EXPORT_NAME,
        world.billing_period,
        world.lines,
        execution_id=execution_id(seed),
    )
    write_telemetry(
        out_dir / "telemetry", world.attempts, world.resources, world.experiments, world.events
    )
    expectation = compute(
        world.lines,
        world.attempts,
        world.resources,
        world.experiments,
        POOLS,
        ATTEMPT_TAG_KEYS,
        EXPERIMENT_TAG_KEYS,
    )
    write_expected(out_dir / "expected", expectation, world.attempts, world.experiments)
    config = out_dir / "runcost.toml"
    config.write_text(CONFIG, encoding="utf-8")
    return config


__all__ = ["write_gcp_scenario", "write_scenario"]
