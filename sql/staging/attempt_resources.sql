-- Telemetry attempt_resources in the canonical contract (DESIGN.md section 5), as validated at load.
-- grain: one row per (attempt_id, resource_id, started_at)
with source as (
    select * from raw.attempt_resources
),

final as (
    select * from source
)

select * from final
