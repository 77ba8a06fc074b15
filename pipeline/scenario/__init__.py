"""A small, realistic world (CUR 2.0 export, telemetry, runcost.toml) with its expected costs."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

from pipeline.scenario.cur_writer import CurLine, write_cur_delivery
from pipeline.scenario.dcgm import FOLDER as DCGM_FOLDER
from pipeline.scenario.dcgm import write_dcgm
from pipeline.scenario.expected import write_expected
from pipeline.scenario.gcp_scenario import write_gcp_scenario
from pipeline.scenario.oracle import OraclePool, compute
from pipeline.scenario.shared_costs import MONITOR
from pipeline.scenario.telemetry_writer import write_telemetry
from pipeline.scenario.world import CHECKPOINTS, build_world

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

# Monitoring nodes watch whatever runs: spread each hour over the attempts running in it, by the
# vCPUs and memory they requested (hours when nothing runs stay unallocated).
[[pools]]
name = "monitoring"
selector = "resource_class = 'compute' and tags['user_role'] = 'monitoring'"
driver = "cpu_memory_requested"
spread = "charge_period"

# Checkpoints outlive their attempts: what no attempt held, the experiment's attempts launched
# this month share equally.
[[pools]]
name = "checkpoint-storage"
selector = "resource_id = '{CHECKPOINTS}'"
attempts = "experiment_id = 'exp-llm-7b'"
driver = "attempt_count"
spread = "billing_period"

# An account-level credit: spread over the month's attempts by their net attributed cost.
[[pools]]
name = "account-credits"
selector = "provider_line_type = 'Credit'"
driver = "cost_weighted"
basis = "net_cost"
spread = "billing_period"

# Inference and API spend (Bedrock, SageMaker endpoints, Vertex AI prediction) is not training:
# the default [allocation] exclude leaves it unallocated as excluded_inference.
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
    OraclePool(
        name="monitoring",
        matches=lambda line: line.resource_id == MONITOR and line.usage_type.startswith("BoxUsage"),
        driver="cpu_memory_requested",
    ),
    OraclePool(
        name="checkpoint-storage",
        matches=lambda line: line.resource_id == CHECKPOINTS,
        driver="attempt_count",
        spread="billing_period",
        eligible=lambda attempt: attempt.experiment_id == "exp-llm-7b",
    ),
    OraclePool(
        name="account-credits",
        matches=lambda line: line.line_item_type == "Credit",
        driver="cost_weighted",
        spread="billing_period",
        basis="net_cost",
    ),
]


def is_inference(line: CurLine) -> bool:
    """The oracle's reading of the default [allocation] exclude on this AWS bill."""
    hosting = line.product_code == "AmazonSageMaker" and "Host" in line.usage_type
    return line.product_code == "AmazonBedrock" or hosting


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
    # DCGM samples of two GPU nodes, for a prometheus source (not configured: it needs a server)
    write_dcgm(out_dir / DCGM_FOLDER)
    expectation = compute(
        world.lines,
        world.attempts,
        world.resources,
        world.experiments,
        POOLS,
        ATTEMPT_TAG_KEYS,
        EXPERIMENT_TAG_KEYS,
        excluded=is_inference,
    )
    write_expected(out_dir / "expected", expectation, world.attempts, world.experiments)
    config = out_dir / "runcost.toml"
    config.write_text(CONFIG, encoding="utf-8")
    return config


__all__ = ["write_gcp_scenario", "write_scenario"]
