-- The previous snapshot's telemetry.attempt_resources.
-- grain: one row per (attempt_id, resource_id, started_at)
with source as (
    select * from raw.previous_attempt_resources
),

final as (
    select * from source
)

select * from final
