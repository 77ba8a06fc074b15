-- Where each dollar went: every slice of every cost line per model, how it was placed, and the line dimensions.
-- grain: one row per allocation.cost_allocations slice: (allocation_model, line_id, allocation_kind,
-- allocation_method, attempt_id, experiment_id, unallocated_reason)
-- The slices of a line sum exactly to it in each basis and model (FOCUS 1.3 split rules).
-- materialized: view (a join of two published tables: computed when read, never written)
with cost_allocations as (
    select * from allocation.model_slices
),

cost_lines as (
    select * from normalized.cost_lines
),

pools as (
    select * from config.pools
),

final as (
    select
        cost_allocations.allocation_model,
        cost_allocations.line_id,
        cost_allocations.attempt_id,
        cost_allocations.experiment_id,
        cost_allocations.allocation_kind,
        coalesce(cost_allocations.attribution_method, 'unallocated') as allocation_method,
        cost_allocations.confidence,
        cost_allocations.pool_name,
        pools.driver,
        case when pools.driver = 'cost_weighted' then pools.basis end as driver_basis,
        cost_allocations.unallocated_reason,
        cost_allocations.share,
        bases(cost_allocations),  -- noqa: AL03, RF02
        cost_lines.provider,
        cost_lines.billing_account_id,
        cost_lines.sub_account_id,
        cost_lines.billing_period,
        cost_lines.billing_currency,
        cost_lines.charge_period_start,
        cost_lines.charge_period_end,
        cost_lines.charge_category,
        cost_lines.provider_line_type,
        cost_lines.service_name,
        cost_lines.resource_class,
        cost_lines.usage_type,
        cost_lines.operation,
        cost_lines.resource_id,
        cost_lines.region_id,
        cost_lines.availability_zone,
        cost_lines.instance_type,
        line_bases(cost_lines)  -- noqa: AL03, RF02
    from cost_allocations
    inner join cost_lines on cost_allocations.line_id = cost_lines.line_id
    left join pools on cost_allocations.pool_name = pools.pool_name
)

select * from final
