-- What each attempt cost under each allocation model, in the four bases; every attempt in telemetry appears.
-- grain: one row per (attempt_id, allocation_model)
with attempts as (
    select * from staging.attempts
),

cost_allocations as (
    select * from allocation.cost_allocations
),

allocation_models as (
    select unnest(['marginal', 'fully_loaded']) as allocation_model
),

attempt_totals as (
    select
        cost_allocations.allocation_model,
        cost_allocations.attempt_id,
        sum(cost_allocations.billed_cost) as billed_cost,
        sum(cost_allocations.effective_cost) as effective_cost,
        sum(cost_allocations.list_cost) as list_cost,
        sum(cost_allocations.net_cost) as net_cost,
        sum(cost_allocations.effective_cost) filter (
            where cost_allocations.attribution_method = 'resource_time'
        ) as estimated_cost,
        sum(cost_allocations.effective_cost) filter (
            where cost_allocations.allocation_kind = 'shared'
        ) as shared_cost,
        min(cost_allocations.billing_currency) as billing_currency,
        count(*) as slices
    from cost_allocations
    where cost_allocations.attempt_id is not null
    group by cost_allocations.allocation_model, cost_allocations.attempt_id
),

final as (
    select
        attempts.attempt_id,
        attempts.experiment_id,
        allocation_models.allocation_model,
        cast(coalesce(attempt_totals.billed_cost, 0) as decimal(38, 10)) as billed_cost,
        cast(coalesce(attempt_totals.effective_cost, 0) as decimal(38, 10)) as effective_cost,
        cast(coalesce(attempt_totals.list_cost, 0) as decimal(38, 10)) as list_cost,
        cast(coalesce(attempt_totals.net_cost, 0) as decimal(38, 10)) as net_cost,
        cast(coalesce(attempt_totals.estimated_cost, 0) as decimal(38, 10)) as estimated_cost,
        cast(coalesce(attempt_totals.shared_cost, 0) as decimal(38, 10)) as shared_cost,
        attempt_totals.billing_currency,
        coalesce(attempt_totals.slices, 0) as cost_slices,
        attempts.status,
        attempts.parent_attempt_id,
        attempts.capacity_type,
        attempts.instance_type,
        attempts.gpu_type,
        attempts.gpu_count,
        attempts.submitted_at,
        attempts.started_at,
        attempts.ended_at,
        (epoch_us(attempts.ended_at) - epoch_us(attempts.started_at))
        / 3600000000.0 as wall_hours,
        (epoch_us(attempts.ended_at) - epoch_us(attempts.started_at))
        / 3600000000.0
        * coalesce(attempts.gpu_count, 0) as gpu_hours
    from attempts
    cross join allocation_models
    left join attempt_totals
        on
            attempts.attempt_id = attempt_totals.attempt_id
            and allocation_models.allocation_model = attempt_totals.allocation_model
)

select * from final
