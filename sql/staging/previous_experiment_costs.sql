-- The previous snapshot's marts.experiment_costs (the columns cost_changes compares).
-- grain: one row per (experiment_id, allocation_model)
with source as (
    select * from raw.previous_experiment_costs
),

final as (
    select * from source
)

select * from final
