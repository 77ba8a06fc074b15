-- The previous snapshot's normalized.billing_periods: status, deliveries, billed horizon.
-- grain: one row per (provider, billing_account_id, billing_period)
with source as (
    select * from raw.previous_billing_periods
),

final as (
    select * from source
)

select * from final
