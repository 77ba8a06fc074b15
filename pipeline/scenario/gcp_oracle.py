"""Ground truth for the GCP world: its cost bases and attribution in exact Python arithmetic."""

from __future__ import annotations

from decimal import Decimal

from pipeline.scenario.gcp_rows import GcpRow
from pipeline.scenario.oracle import (
    Attributor,
    Expectation,
    OraclePool,
    PoolSpreader,
    empty_expectation,
    place_line,
)
from pipeline.scenario.oracle_pools import ZERO
from pipeline.scenario.telemetry_writer import Attempt, AttemptResource, Experiment

# Credits that set the usage price (effective cost); every credit counts in net cost.
PRICE_CREDITS = frozenset(
    {
        "SUSTAINED_USAGE_DISCOUNT",
        "COMMITTED_USAGE_DISCOUNT",
        "COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE",
        "FEE_UTILIZATION_OFFSET",
        "FREE_TIER",
        "SUBSCRIPTION_BENEFIT",
    }
)


def gcp_bases(row: GcpRow) -> dict[str, Decimal]:
    """billed = cost; effective = cost + price credits; list = cost_at_list (else cost);
    net = cost + every credit."""
    price = sum((c.amount for c in row.credits if c.type in PRICE_CREDITS), ZERO)
    every = sum((c.amount for c in row.credits), ZERO)
    return {
        "billed_cost": row.cost,
        "effective_cost": row.cost + price,
        "list_cost": row.cost if row.cost_at_list is None else row.cost_at_list,
        "net_cost": row.cost + every,
    }


def compute_gcp(
    rows: list[GcpRow],
    attempts: list[Attempt],
    resources: list[AttemptResource],
    experiments: list[Experiment],
    pools: list[OraclePool],
    attempt_keys: tuple[str, ...] = ("user_attempt_id",),
    experiment_keys: tuple[str, ...] = ("user_experiment_id",),
) -> Expectation:
    """Every attempt's cost under both models; bill totals per invoice month (YYYY-MM)."""
    attributor = Attributor(attempts, resources, experiments, attempt_keys, experiment_keys)
    spreader = PoolSpreader(pools, attempts, resources)
    result = empty_expectation(attempts)
    for row in rows:
        place_line(result, spreader, row, gcp_bases(row), attributor.parts(row))
    spreader.flush(result)
    return result
