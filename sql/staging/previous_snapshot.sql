-- The snapshot that was current when this run started (cost_changes compares with it); none before the first.
-- grain: one row per previous snapshot (a single row; none before the first publish)
with source as (
    select * from raw.previous_snapshot
),

final as (
    select * from source
)

select * from final
