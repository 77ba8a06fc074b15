-- Each instance line's split among the pods (tasks) of its hour, by split cost and unused cost, per attempt.
-- grain: one row per (line_id, attempt_id, experiment_id); both NULL for the pods no known tag places
-- Only instance usage lines that no tag placed, and whose hour has a pod placed on an attempt or experiment.
-- Shares are of hour_total = sum over the hour's pods of (split_cost + unused_cost), so they sum to 1.
-- materialized: intermediate (a step of the build, never published: allocation.cost_slices carries its result)
with cost_lines as (
    select * from normalized.cost_lines
),

split_cost_lines as (
    select * from normalized.split_cost_lines
),

tag_matches as (
    select tag_matches.line_id from attribution.tag_matches as tag_matches
),

attempts as (
    select
        attempts.attempt_id,
        attempts.experiment_id
    from staging.attempts as attempts
),

known_experiments as (
    select * from known_experiments()
),

pods as (
    -- one pod (task) in one hour: its vCPU, memory and accelerator rows together
    select
        split_cost_lines.parent_resource_id,
        split_cost_lines.charge_period_start,
        split_cost_lines.charge_period_end,
        split_cost_lines.pod_resource_id,
        max(split_cost_lines.attempt_tag) as attempt_tag,
        max(split_cost_lines.experiment_tag) as experiment_tag,
        sum(split_cost_lines.split_cost) as split_cost,
        sum(split_cost_lines.unused_cost) as unused_cost
    from split_cost_lines
    where split_cost_lines.parent_resource_id is not null
    group by all
),

placed_pods as (
    select
        pods.*,
        attempts.attempt_id,
        coalesce(attempts.experiment_id, known_experiments.experiment_id) as experiment_id
    from pods
    left join attempts on pods.attempt_tag = attempts.attempt_id
    left join known_experiments
        on
            attempts.attempt_id is null
            and pods.experiment_tag = known_experiments.experiment_id
),

groups as (
    select
        placed_pods.parent_resource_id,
        placed_pods.charge_period_start,
        placed_pods.charge_period_end,
        placed_pods.attempt_id,
        placed_pods.experiment_id,
        sum(placed_pods.split_cost) as split_cost,
        sum(placed_pods.unused_cost) as unused_cost
    from placed_pods
    group by all
),

hours as (
    select
        groups.*,
        sum(groups.split_cost + groups.unused_cost) over (
            partition by
                groups.parent_resource_id, groups.charge_period_start, groups.charge_period_end
        ) as hour_total,
        sum(groups.split_cost + groups.unused_cost) filter (
            where groups.experiment_id is not null
        ) over (
            partition by
                groups.parent_resource_id, groups.charge_period_start, groups.charge_period_end
        ) as placed_total,
        sum(groups.split_cost + groups.unused_cost) filter (
            where groups.experiment_id is null
        ) over (
            partition by
                groups.parent_resource_id, groups.charge_period_start, groups.charge_period_end
        ) as unplaced_total
    from groups
),

instance_lines as (
    -- the instance's own usage lines (box, spot, Savings Plan covered and negation), not the
    -- data transfer or other lines that carry the same resource id
    select
        cost_lines.line_id,
        cost_lines.resource_id,
        cost_lines.charge_period_start,
        cost_lines.charge_period_end
    from cost_lines
    anti join tag_matches on cost_lines.line_id = tag_matches.line_id
    where
        cost_lines.charge_category = 'Usage'
        and coalesce(cost_lines.instance_type, '') <> ''
        and cost_lines.resource_id is not null
),

final as (
    select
        instance_lines.line_id,
        hours.attempt_id,
        hours.experiment_id,
        hours.split_cost,
        hours.unused_cost,
        hours.hour_total,
        cast(hours.split_cost as double) / cast(hours.hour_total as double) as split_share,
        cast(hours.unused_cost as double) / cast(hours.hour_total as double) as unused_share,
        coalesce(hours.unplaced_total, 0) > 0 as has_unplaced_pods
    from instance_lines
    inner join hours
        on
            instance_lines.resource_id = hours.parent_resource_id
            and same_charge_period(instance_lines, hours)  -- noqa: RF02
    where hours.hour_total > 0 and coalesce(hours.placed_total, 0) > 0
)

select * from final
