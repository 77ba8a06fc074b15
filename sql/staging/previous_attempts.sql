-- The previous snapshot's telemetry.attempts (the columns that change an attempt's cost).
-- grain: one row per attempt_id
with source as (
    select * from raw.previous_attempts
),

final as (
    select * from source
)

select * from final
