-- What attribution left of each line and why, once the split idle pool took its part: for pools, else unallocated.
-- grain: one row per line_id whose rest is not wholly split idle capacity
-- materialized: parquet (written once, as the published Parquet: allocation.unattributed_slices reads each rest as
-- its unallocated slice through a view, so the rests are not written a second time)
-- The rests are computed here, from the lines attribution did not place whole (attribution.unplaced_lines), and
-- written once: there is no step of the rests before the split idle pool takes its part. A split instance line
-- whose pods are all placed has no rest here: its idle slices take all of it.
-- pool_name is the pool that takes the rest in the fully loaded model (the first pool whose selector matches the
-- line; never an excluded inference line): allocation.pooled_lines reads it, and the rest is unallocated in the
-- marginal model alone; NULL when no pool takes it, the rest then unallocated in both models.
with cost_lines as (
    -- the lines not wholly placed, found in a step of their own (see attribution.unplaced_lines)
    select * from attribution.unplaced_lines
),

line_attributions as (
    select * from attribution.line_attributions
),

attribution_settings as (
    select * from config.attribution
),

excluded_lines as (
    select * from attribution.excluded_lines
),

split_lines as (
    select
        split_cost_shares.line_id,
        bool_or(split_cost_shares.has_unplaced_pods) as has_unplaced_pods
    from attribution.split_cost_shares as split_cost_shares
    group by split_cost_shares.line_id
),

held_resources as (
    select distinct attempt_resources.resource_id
    from staging.attempt_resources as attempt_resources
    where coalesce(attempt_resources.resource_id, '') <> ''
),

placed as (
    -- what the slices of lines placed only in part add up to; a wholly placed line is not
    -- aggregated at all (attribution.unplaced_lines left it out by its id alone)
    select
        line_attributions.line_id,
        sum_bases(line_attributions)  -- noqa: AL03
    from line_attributions
    where not line_attributions.fully_attributed
    group by line_attributions.line_id
),

idle_totals as (
    -- the split idle capacity the placed pods of a line with unplaced pods take (a line whose pods
    -- are all placed has no rest: its idle slices take all of it)
    select
        split_unused_shares.line_id,
        sum_bases(split_unused_shares)  -- noqa: AL03
    from allocation.split_unused_shares as split_unused_shares
    group by split_unused_shares.line_id
),

first_pools as (
    select
        pool_line_matches.line_id,
        pools.pool_name
    from allocation.pool_line_matches as pool_line_matches
    inner join config.pools as pools on pool_line_matches.pool_order = pools.pool_order
    where pool_line_matches.first_match
),

rests as (
    select
        cost_lines.line_id,
        case
            when excluded_lines.line_id is not null then 'excluded_inference'
            -- split lines: pods no tag places keep their split and unused parts together
            when split_lines.has_unplaced_pods then 'split_pod_without_attempt'
            when split_lines.line_id is not null then 'split_unused_capacity'
            when placed.line_id is not null then 'outside_any_attempt'
            when cost_lines.attempt_tag is not null then 'unknown_attempt_tag'
            when cost_lines.experiment_tag is not null then 'unknown_experiment_tag'
            when cost_lines.resource_id is null then 'no_resource_id'
            when not attribution_settings.resource_time then 'resource_time_disabled'
            when held_resources.resource_id is null then 'no_matching_attempt'
            else 'outside_any_attempt'
        end as unallocated_reason,
        cost_lines.billed_cost - coalesce(placed.billed_cost, 0) - coalesce(idle_totals.billed_cost, 0)
            as billed_cost,
        cost_lines.effective_cost - coalesce(placed.effective_cost, 0) - coalesce(idle_totals.effective_cost, 0)
            as effective_cost,
        cost_lines.list_cost - coalesce(placed.list_cost, 0) - coalesce(idle_totals.list_cost, 0) as list_cost,
        cost_lines.net_cost - coalesce(placed.net_cost, 0) - coalesce(idle_totals.net_cost, 0) as net_cost,
        -- the line's own resource, window and effective cost: marts.waste_findings reads the rests
        -- with them, without a join of the month's lines on line_id
        cost_lines.resource_id,
        cost_lines.charge_period_start,
        cost_lines.charge_period_end,
        cost_lines.effective_cost as line_effective_cost,
        cost_lines.billing_period,
        cost_lines.profile_key,
        first_pools.pool_name
    from cost_lines
    cross join attribution_settings
    left join placed on cost_lines.line_id = placed.line_id
    left join split_lines on cost_lines.line_id = split_lines.line_id
    left join held_resources on cost_lines.resource_id = held_resources.resource_id
    left join excluded_lines on cost_lines.line_id = excluded_lines.line_id
    left join idle_totals on cost_lines.line_id = idle_totals.line_id
    left join first_pools on cost_lines.line_id = first_pools.line_id
),

final as (
    select
        rests.line_id,
        rests.unallocated_reason,
        money_bases(rests),  -- noqa: AL03
        rests.resource_id,
        rests.charge_period_start,
        rests.charge_period_end,
        rests.line_effective_cost,
        rests.billing_period,
        rests.profile_key,
        case when rests.unallocated_reason <> 'excluded_inference' then rests.pool_name end as pool_name
    from rests
    where rests.unallocated_reason <> 'split_unused_capacity'
)

select * from final
