-- Invoice tie-out: in a final period, the export total, runcost's slices and the analyst's amount agree.
-- grain: one row per (provider, billing_account_id, billing_period, invoice_id, billing_currency) that does not tie out
with invoice_totals as (
    select * from marts.invoice_totals
),

final as (
    select
        invoice_totals.provider,
        invoice_totals.billing_account_id,
        invoice_totals.billing_period,
        invoice_totals.invoice_id,
        invoice_totals.billing_currency,
        invoice_totals.export_total,
        invoice_totals.marginal_total,
        invoice_totals.fully_loaded_total,
        invoice_totals.invoice_amount,
        invoice_totals.invoice_difference
    from invoice_totals
    where
        invoice_totals.period_status = 'final'
        and (
            invoice_totals.marginal_total <> invoice_totals.export_total
            or invoice_totals.fully_loaded_total <> invoice_totals.export_total
            or invoice_totals.invoice_amount <> invoice_totals.export_total
        )
)

select * from final
