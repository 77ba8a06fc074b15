-- The instant this run treats as now: estimates stop here, and a billing period that has not ended by then is open.
-- grain: one row per run (a single row)
with source as (
    select * from raw.run_clock
),

final as (
    select * from source
)

select * from final
