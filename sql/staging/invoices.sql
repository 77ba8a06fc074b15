-- The analyst's invoice file ([invoices] file), one row per invoice, amounts DECIMAL(38, 10).
-- grain: one row per invoice_id
with source as (
    select * from raw.invoices
),

final as (
    select * from source
)

select * from final
