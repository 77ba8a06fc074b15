-- Telemetry experiments in the canonical contract (DESIGN.md section 5), as validated at load.
-- grain: one row per (experiment_id)
with source as (
    select * from raw.experiments
),

final as (
    select * from source
)

select * from final
