-- Per parent instance-hour, the pods' split cost plus unused cost equals the instance's effective cost.
-- grain: one row per (parent_resource_id, charge_period_start, charge_period_end) whose split rows do not add up
-- Tolerance: one micro-dollar per split row. AWS computes split costs in floating point from an hourly
-- unit rate and writes each as a DOUBLE, so the pods' sum can miss the instance's cost by a rounding
-- error; the demo scenario's rows add up exactly. A missing parent instance line fails too.
with cost_lines as (
    select * from normalized.cost_lines
),

split_cost_lines as (
    select * from normalized.split_cost_lines
),

pod_hours as (
    select
        split_cost_lines.parent_resource_id,
        split_cost_lines.charge_period_start,
        split_cost_lines.charge_period_end,
        count(*) as split_rows,
        sum(split_cost_lines.split_cost) as split_cost,
        sum(split_cost_lines.unused_cost) as unused_cost
    from split_cost_lines
    where split_cost_lines.parent_resource_id is not null
    group by all
),

instance_hours as (
    select
        cost_lines.resource_id,
        cost_lines.charge_period_start,
        cost_lines.charge_period_end,
        count(*) as instance_lines,
        sum(cost_lines.effective_cost) as effective_cost
    from cost_lines
    -- only the instance-hours some pod rows name: a bill without split cost groups no line
    semi join pod_hours
        on
            cost_lines.resource_id = pod_hours.parent_resource_id
            and same_charge_period(cost_lines, pod_hours)  -- noqa: RF02
    where
        cost_lines.charge_category = 'Usage'
        and coalesce(cost_lines.instance_type, '') <> ''
        and cost_lines.resource_id is not null
    group by all
),

final as (
    select
        pod_hours.parent_resource_id,
        pod_hours.charge_period_start,
        pod_hours.charge_period_end,
        pod_hours.split_rows,
        coalesce(instance_hours.instance_lines, 0) as instance_lines,
        money(pod_hours.split_cost + pod_hours.unused_cost) as split_total,
        money(instance_hours.effective_cost) as instance_effective_cost,
        money(
            pod_hours.split_cost + pod_hours.unused_cost - instance_hours.effective_cost
        ) as difference
    from pod_hours
    left join instance_hours
        on
            pod_hours.parent_resource_id = instance_hours.resource_id
            and same_charge_period(pod_hours, instance_hours)  -- noqa: RF02
    where
        instance_hours.resource_id is null
        or abs(pod_hours.split_cost + pod_hours.unused_cost - instance_hours.effective_cost)
        > pod_hours.split_rows * 0.000001
)

select * from final
