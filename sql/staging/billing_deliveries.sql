-- Each current billing delivery with when the provider delivered it and when runcost ingested it.
-- grain: one row per (provider, export_name, billing_period)
with source as (
    select * from raw.billing_deliveries
),

final as (
    select * from source
)

select * from final
