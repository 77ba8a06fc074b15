-- An attempt's cost is summed in one currency: no attempt draws slices from lines billed in two currencies.
-- grain: one row per (allocation_model, attempt_id) with more than one billing currency
with cost_allocations as (
    select * from allocation.model_slices
),

final as (
    select
        cost_allocations.allocation_model,
        cost_allocations.attempt_id,
        count(distinct cost_allocations.billing_currency) as currencies
    from cost_allocations
    where cost_allocations.attempt_id is not null
    group by cost_allocations.allocation_model, cost_allocations.attempt_id
    having count(distinct cost_allocations.billing_currency) > 1
)

select * from final
