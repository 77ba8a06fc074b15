-- Each invoice the bill names: the export's own total, what runcost placed of it, and the analyst's invoice amount.
-- grain: one row per (provider, billing_account_id, billing_period, invoice_id, billing_currency)
-- export_total sums billed_cost over the export's lines carrying the invoice id (FOCUS: the sum of
-- BilledCost per InvoiceId is the invoice); marginal_total and fully_loaded_total sum the slices
-- runcost made of those lines; invoice_amount comes from [invoices] file. checks.invoice_tie_out
-- fails a final period when any of them differ.
with cost_lines as (
    select * from normalized.cost_lines
),

cost_allocations as (
    select * from allocation.model_slices
),

billing_periods as (
    select * from normalized.billing_periods
),

reconciliation as (
    select * from marts.reconciliation
),

invoices as (
    select * from staging.invoices
),

export_totals as (
    select
        cost_lines.provider,
        cost_lines.billing_account_id,
        cost_lines.billing_period,
        cost_lines.invoice_id,
        cost_lines.billing_currency,
        count(*) as cost_lines,
        sum(cost_lines.billed_cost) as export_total
    from cost_lines
    where cost_lines.invoice_id is not null
    group by all
),

group_invoices as (
    select
        ledger_keys(export_totals),  -- noqa: AL03
        count(*) as invoices
    from export_totals
    group by all
),

single_invoice_placed as (
    -- one invoice for the whole (account, period, currency), the usual case: what runcost placed
    -- of its lines is what the reconciliation placed of the group, with no pass over the slices
    select
        ledger_keys(reconciliation),  -- noqa: AL03, RF02
        sum(
            case
                when reconciliation.allocation_model = 'marginal'
                    then reconciliation.attributed + reconciliation.shared + reconciliation.unallocated
            end
        ) as marginal_total,
        sum(
            case
                when reconciliation.allocation_model = 'fully_loaded'
                    then reconciliation.attributed + reconciliation.shared + reconciliation.unallocated
            end
        ) as fully_loaded_total
    from reconciliation
    inner join group_invoices on same_ledger(reconciliation, group_invoices)  -- noqa: RF02
    where reconciliation.cost_basis = 'billed_cost' and group_invoices.invoices = 1
    group by all
),

split_lines as (
    -- several invoices in one group (marketplace, tax invoices): follow each line's slices
    select
        cost_lines.line_id,
        cost_lines.invoice_id
    from cost_lines
    inner join group_invoices on same_ledger(cost_lines, group_invoices)  -- noqa: RF02
    where cost_lines.invoice_id is not null and group_invoices.invoices > 1
),

split_placed as (
    select
        ledger_keys(cost_allocations),  -- noqa: AL03, RF02
        split_lines.invoice_id,
        sum(case when cost_allocations.allocation_model = 'marginal' then cost_allocations.billed_cost end)
            as marginal_total,
        sum(case when cost_allocations.allocation_model = 'fully_loaded' then cost_allocations.billed_cost end)
            as fully_loaded_total
    from cost_allocations
    inner join split_lines on cost_allocations.line_id = split_lines.line_id
    group by all
),

placed_totals as (
    select
        ledger_keys(export_totals),  -- noqa: AL03, RF02
        export_totals.invoice_id,
        coalesce(single_invoice_placed.marginal_total, split_placed.marginal_total) as marginal_total,
        coalesce(single_invoice_placed.fully_loaded_total, split_placed.fully_loaded_total)
            as fully_loaded_total
    from export_totals
    left join single_invoice_placed on same_ledger(export_totals, single_invoice_placed)  -- noqa: RF02
    left join split_placed
        on
            same_ledger(export_totals, split_placed)  -- noqa: RF02
            and export_totals.invoice_id = split_placed.invoice_id
),

final as (
    select
        export_totals.provider,
        export_totals.billing_account_id,
        export_totals.billing_period,
        export_totals.invoice_id,
        export_totals.billing_currency,
        billing_periods.period_status,
        export_totals.cost_lines,
        money(export_totals.export_total) as export_total,
        money(coalesce(placed_totals.marginal_total, 0)) as marginal_total,
        money(coalesce(placed_totals.fully_loaded_total, 0)) as fully_loaded_total,
        invoices.amount as invoice_amount,
        invoices.currency as invoice_currency,
        money(export_totals.export_total - invoices.amount) as invoice_difference
    from export_totals
    left join placed_totals
        on
            same_billing_period(export_totals, placed_totals)  -- noqa: RF02
            and export_totals.invoice_id = placed_totals.invoice_id
            and export_totals.billing_currency is not distinct from placed_totals.billing_currency
    left join billing_periods on same_billing_period(export_totals, billing_periods)  -- noqa: RF02
    left join invoices on export_totals.invoice_id = invoices.invoice_id
)

select * from final
