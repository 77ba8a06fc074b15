-- Telemetry attempts in the canonical contract (DESIGN.md section 5), as validated at load.
-- grain: one row per (attempt_id)
with source as (
    select * from raw.attempts
),

final as (
    select * from source
)

select * from final
