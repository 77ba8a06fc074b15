"""The exact per-line forms of the checks that run as checksums or filters in a build.

sql/checks/slices_sum_to_line.sql, focus_allocated_sums_to_origin.sql, shares_in_range.sql and
no_double_counting.sql avoid a group-by on line_id, the largest hash table of a month at scale;
their headers say what they cannot see. These queries group by line and catch it all. They run
on a build database or a published runcost.duckdb (both have allocation.model_slices and the
normalized cost lines) in tests/e2e/test_core_shape.py for every scenario world, and in
tests/sql/test_model_checks.py against planted corruptions.
"""

from __future__ import annotations

from typing import Any

import duckdb

from pipeline.dag.macros import expand_macros

# every line is split whole, once, under each model: its slices sum exactly to it in each basis
SLICES_SUM_TO_LINE = """
with slice_totals as (
    select
        allocation_model,
        line_id,
        sum(billed_cost) as billed_cost,
        sum(effective_cost) as effective_cost,
        sum(list_cost) as list_cost,
        sum(net_cost) as net_cost
    from allocation.model_slices
    group by allocation_model, line_id
)
select models.allocation_model, lines.line_id
from normalized.cost_lines as lines
cross join (select unnest(['marginal', 'fully_loaded']) as allocation_model) as models
left join slice_totals as totals
    on lines.line_id = totals.line_id and models.allocation_model = totals.allocation_model
where totals.line_id is null
    or totals.billed_cost <> lines.billed_cost
    or totals.effective_cost <> lines.effective_cost
    or totals.list_cost <> lines.list_cost
    or totals.net_cost <> lines.net_cost
order by all
"""

# shares in [0, 1]; a line's attributed shares sum to at most 1, and to 1 where nothing is left
SHARES_PER_LINE = """
with line_shares as (
    select
        allocation_model,
        line_id,
        min(share) as smallest_share,
        max(share) as largest_share,
        sum(share) filter (where allocation_kind = 'attributed') as attributed_shares,
        count(*) filter (where allocation_kind = 'unallocated') as remainders,
        count(*) filter (where allocation_kind = 'shared') as shared_slices
    from allocation.model_slices
    group by allocation_model, line_id
)
select allocation_model, line_id from line_shares
where smallest_share < 0
    or largest_share > 1 + 1e-9
    or attributed_shares > 1 + 1e-9
    or (remainders = 0 and shared_slices = 0 and attributed_shares < 1 - 1e-9)
order by all
"""

# no line id and no source row twice
UNIQUE_LINES = """
select 'line_id' as key, cast(line_id as varchar) as value
from normalized.cost_lines group by line_id having count(*) > 1
union all
select 'source row', concat_ws(':', source_delivery, source_file, source_line)
from normalized.cost_lines
group by source_delivery, source_file, source_line having count(*) > 1
order by all
"""

# every slice carries its line's profile_key: the marts read a line's service and category by it
SLICE_PROFILES = """
select slices.allocation_model, slices.line_id
from allocation.model_slices as slices
left join normalized.cost_line_facts as facts on slices.line_id = facts.line_id
where facts.profile_key is distinct from slices.profile_key
order by all
"""

# every FOCUS charge (an origin row of normalized.focus) is split whole, once, under each model:
# its marts.focus_allocated slices sum exactly to it in each cost column (checks.
# focus_allocated_sums_to_origin weighs those split by ratio per period instead)
FOCUS_ALLOCATED_SUMS = """
with slice_totals as (
    select
        x_AllocationModel as allocation_model,
        x_LineId,
        x_ProviderLineType,
        sum("BilledCost") as billed,
        sum("EffectiveCost") as effective,
        sum("ListCost") as list,
        sum("ContractedCost") as contracted,
        sum("PricingCurrencyEffectiveCost") as pricing_effective
    from marts.focus_allocated
    group by all
)
select models.allocation_model, origins.x_LineId, origins.x_ProviderLineType
from normalized.focus as origins
cross join (select unnest(['marginal', 'fully_loaded']) as allocation_model) as models
left join slice_totals as totals
    on origins.x_LineId = totals.x_LineId
    and origins.x_ProviderLineType is not distinct from totals.x_ProviderLineType
    and models.allocation_model = totals.allocation_model
where totals.x_LineId is null
    or totals.billed is distinct from origins."BilledCost"
    or totals.effective is distinct from origins."EffectiveCost"
    or totals.list is distinct from origins."ListCost"
    or totals.contracted is distinct from origins."ContractedCost"
    or totals.pricing_effective is distinct from origins."PricingCurrencyEffectiveCost"
order by all
"""

# every FOCUS origin row with a cost column no basis of its line equals (split by ratio, with a
# rounding remainder) is one checks.focus_allocated_sums_to_origin checks (macro
# focus_costs_maybe_unmatched), and no BilledCost, EffectiveCost or ListCost is such a column
FOCUS_UNMATCHED_CHECKED = expand_macros(
    """
with line_facts as (
    select facts.line_id, line_bases(facts)
    from normalized.cost_line_facts as facts
),
sourced as (
    select origins.*, focus_cost_sources(origins)
    from (
        select focus.*, line_costs(line_facts)
        from normalized.focus as focus
        inner join line_facts on focus.x_LineId = line_facts.line_id
    ) as origins
)
select sourced.x_LineId, sourced.x_ProviderLineType
from sourced
where focus_costs_unmatched(sourced)
    and (
        not coalesce(focus_costs_maybe_unmatched(sourced), false)
        or 'other' in (sourced.billed_from, sourced.effective_from, sourced.list_from)
    )
order by all
""",
    "tests/exact_checks.py",
)

EXACT_CHECKS = {
    "slices_sum_to_line": SLICES_SUM_TO_LINE,
    "focus_allocated_sums": FOCUS_ALLOCATED_SUMS,
    "focus_unmatched_checked": FOCUS_UNMATCHED_CHECKED,
    "shares_per_line": SHARES_PER_LINE,
    "unique_lines": UNIQUE_LINES,
    "slice_profiles": SLICE_PROFILES,
}


def exact_problems(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[Any, ...]]]:
    """Rows each exact check finds (every list empty on a sound build)."""
    return {name: con.execute(sql).fetchall() for name, sql in EXACT_CHECKS.items()}
