-- What attribution did not place: whole lines, and the rest of lines placed only in part, with the reason.
-- grain: one row per line_id not wholly attributed
-- materialized: intermediate (a step of the build, never published: allocation.cost_slices carries its result)
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
        sum(line_attributions.billed_cost) as billed_cost,
        sum(line_attributions.effective_cost) as effective_cost,
        sum(line_attributions.list_cost) as list_cost,
        sum(line_attributions.net_cost) as net_cost
    from line_attributions
    where not line_attributions.fully_attributed
    group by line_attributions.line_id
),

final as (
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
        cast(
            cost_lines.billed_cost - coalesce(placed.billed_cost, 0) as decimal(38, 10)
        ) as billed_cost,
        cast(
            cost_lines.effective_cost - coalesce(placed.effective_cost, 0) as decimal(38, 10)
        ) as effective_cost,
        cast(
            cost_lines.list_cost - coalesce(placed.list_cost, 0) as decimal(38, 10)
        ) as list_cost,
        cast(cost_lines.net_cost - coalesce(placed.net_cost, 0) as decimal(38, 10)) as net_cost,
        -- the line's own resource, window and effective cost: marts.waste_findings reads the rests
        -- with them, without a join of the month's lines on line_id
        cost_lines.resource_id,
        cost_lines.charge_period_start,
        cost_lines.charge_period_end,
        cost_lines.effective_cost as line_effective_cost,
        cost_lines.provider,
        cost_lines.billing_account_id,
        cost_lines.billing_period,
        cost_lines.billing_currency,
        cost_lines.profile_key
    from cost_lines
    cross join attribution_settings
    left join placed on cost_lines.line_id = placed.line_id
    left join split_lines on cost_lines.line_id = split_lines.line_id
    left join held_resources on cost_lines.resource_id = held_resources.resource_id
    left join excluded_lines on cost_lines.line_id = excluded_lines.line_id
)

select * from final
