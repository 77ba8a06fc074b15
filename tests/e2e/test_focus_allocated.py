"""marts.focus_allocated end to end on the AWS, Google Cloud and FOCUS worlds: every origin charge
split exactly, the attempts' FOCUS costs equal to their marts.attempt_costs, and docs/focus.md's
query for a FOCUS tool summing to the bill."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import pytest
from exact_checks import exact_problems
from mart_worlds import run_world_database

from pipeline.warehouse.snapshots import open_database

DOC = Path(__file__).resolve().parents[2] / "docs" / "focus.md"
METHOD = re.compile(
    r"^runcost:(marginal|fully_loaded):(tag|experiment_tag|split_cost|resource_time|split_unused"
    r"|unallocated|(gpu_seconds|cpu_memory_requested|attempt_count|even|cost_weighted):.+)"
    r"(:[^:]+)?$"
)
# the basis of marts.attempt_costs that FOCUS BilledCost is: Google Cloud's is cost after credits
BILLED_BASIS = {"aws": "billed_cost", "gcp": "net_cost", "focus": "billed_cost"}


def doc_query() -> str:
    section = DOC.read_text(encoding="utf-8").split("## FOCUS 1.3 out", 1)[1].split("\n## ")[0]
    (query,) = re.findall(r"```sql\n(.*?)```", section, re.DOTALL)
    return query


@pytest.mark.parametrize("world", ["aws", "gcp", "focus"])
def test_focus_allocated_splits_every_charge_of_the_world(world: str, tmp_path: Path) -> None:
    con = open_database(run_world_database(world, tmp_path / "world"))
    assert exact_problems(con)["focus_allocated_sums"] == []
    methods = con.execute(
        'select distinct "AllocatedMethodId", "AllocatedResourceId" is null, '
        '"AllocatedTags" is null, x_UnallocatedReason is null from marts.focus_allocated'
    ).fetchall()
    for method, no_attempt, no_tags, placed in methods:
        assert METHOD.match(method), method
        unallocated = ":unallocated" in method
        assert placed is not unallocated and (no_tags is unallocated), method
        assert no_attempt or not unallocated, method
    assert any(":unallocated" not in method for method, *_ in methods)
    # each attempt's FOCUS BilledCost is its cost in the invoice's basis, in each model
    basis = BILLED_BASIS[world]
    differing = con.execute(
        f"""
        with focus_costs as (
            select x_AllocationModel as allocation_model, "AllocatedResourceId" as attempt_id,
                sum("BilledCost") as billed
            from marts.focus_allocated where "AllocatedResourceId" is not null group by all
        )
        select attempt_costs.allocation_model, attempt_costs.attempt_id,
            attempt_costs.{basis}, focus_costs.billed
        from marts.attempt_costs as attempt_costs
        left join focus_costs using (allocation_model, attempt_id)
        where coalesce(focus_costs.billed, 0) <> attempt_costs.{basis}
        """
    ).fetchall()
    assert differing == []
    # the ratios of one origin add up to 1; the details are JSON a FOCUS tool can read
    ratios = con.execute(
        "select x_AllocationModel, x_LineId, x_ProviderLineType, sum(cast(json_extract_string("
        "\"AllocatedMethodDetails\", '$.Elements[0].AllocatedRatio') as decimal(38, 10))) as r "
        'from marts.focus_allocated where "BilledCost" <> 0 or "EffectiveCost" <> 0 '
        "group by all having abs(r - 1) > 0.000001"
    ).fetchall()
    assert ratios == []
    (details,) = con.execute(
        'select "AllocatedMethodDetails" from marts.focus_allocated limit 1'
    ).fetchone()
    assert set(json.loads(details)["Elements"][0]) == {
        "AllocatedRatio",
        "UsageUnit",
        "UsageQuantity",
    }
    # the query docs/focus.md gives a FOCUS tool: cost per experiment sums to the period's bill
    month = con.execute(
        'select min("BillingPeriodStart") from marts.focus_allocated '
        'where "AllocatedResourceId" is not null'
    ).fetchone()[0]
    query = doc_query().replace("timestamptz '2026-10-01 00:00:00+00'", "?")
    per_experiment = con.execute(query, [month]).fetchall()
    assert any(experiment is not None for experiment, *_ in per_experiment)
    billed = {}
    for _experiment, currency, amount, _effective in per_experiment:
        billed[currency] = billed.get(currency, Decimal(0)) + amount
    bill = con.execute(
        'select "BillingCurrency", sum("BilledCost") from normalized.focus '
        'where "BillingPeriodStart" = ? group by all',
        [month],
    ).fetchall()
    assert billed == dict(bill)
    con.close()
