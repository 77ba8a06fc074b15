-- The previous snapshot's marts.attempt_costs (the columns cost_changes compares).
-- grain: one row per (attempt_id, allocation_model)
with source as (
    select * from raw.previous_attempt_costs
),

final as (
    select * from source
)

select * from final
