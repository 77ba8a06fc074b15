-- Conservation: attributed + shared + unallocated equals the bill exactly, per account, period, basis and model.
-- grain: one row per reconciliation row whose difference is not 0
with reconciliation as (
    select * from marts.reconciliation
),

final as (
    select
        reconciliation.allocation_model,
        ledger_keys(reconciliation),  -- noqa: AL03
        reconciliation.cost_basis,
        reconciliation.bill_total,
        reconciliation.difference
    from reconciliation
    where reconciliation.difference <> 0
)

select * from final
