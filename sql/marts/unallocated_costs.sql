-- Cost no attempt, experiment or pool took, by why, in the four bases.
-- grain: one row per (allocation_model, provider, billing_period, billing_currency, unallocated_reason, service_name)
with cost_allocations as (
    select * from allocation.cost_allocations
),

final as (
    select
        cost_allocations.allocation_model,
        cost_allocations.provider,
        cost_allocations.billing_period,
        cost_allocations.billing_currency,
        cost_allocations.unallocated_reason,
        cost_allocations.service_name,
        count(*) as cost_lines,
        cast(sum(cost_allocations.billed_cost) as decimal(38, 10)) as billed_cost,
        cast(sum(cost_allocations.effective_cost) as decimal(38, 10)) as effective_cost,
        cast(sum(cost_allocations.list_cost) as decimal(38, 10)) as list_cost,
        cast(sum(cost_allocations.net_cost) as decimal(38, 10)) as net_cost
    from cost_allocations
    where cost_allocations.allocation_kind = 'unallocated'
    group by
        cost_allocations.allocation_model,
        cost_allocations.provider,
        cost_allocations.billing_period,
        cost_allocations.billing_currency,
        cost_allocations.unallocated_reason,
        cost_allocations.service_name
)

select * from final
