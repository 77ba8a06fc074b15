-- The previous snapshot's marts.cost_estimates: the hours it estimated before the bill.
-- grain: one row per (attempt_id, resource_id, estimate_start)
with source as (
    select * from raw.previous_cost_estimates
),

final as (
    select * from source
)

select * from final
