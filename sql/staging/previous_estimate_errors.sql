-- The previous snapshot's marts.estimate_errors: estimates the bill had already replaced.
-- grain: one row per (attempt_id, resource_id, window_start)
with source as (
    select * from raw.previous_estimate_errors
),

final as (
    select * from source
)

select * from final
