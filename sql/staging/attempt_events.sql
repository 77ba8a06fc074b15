-- Telemetry attempt_events in the canonical contract (DESIGN.md section 5), as validated at load.
-- grain: one row per (attempt_id, event_at, event_type)
with source as (
    select * from raw.attempt_events
),

final as (
    select * from source
)

select * from final
