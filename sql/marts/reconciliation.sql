-- The bill against what runcost placed: attributed + shared + unallocated per basis, and the difference (must be 0).
-- grain: one row per (allocation_model, provider, billing_account_id, billing_period, billing_currency, cost_basis)
with cost_lines as (
    select * from normalized.cost_lines
),

cost_allocations as (
    select * from allocation.cost_allocations
),

allocation_models as (
    select unnest(['marginal', 'fully_loaded']) as allocation_model
),

bill_lines as (
    select
        cost_lines.provider,
        cost_lines.billing_account_id,
        cost_lines.billing_period,
        cost_lines.billing_currency,
        cost_lines.invoice_id is not null as invoiced,
        unnest([
            { 'cost_basis': 'billed_cost', 'amount': cost_lines.billed_cost },
            { 'cost_basis': 'effective_cost', 'amount': cost_lines.effective_cost },
            { 'cost_basis': 'list_cost', 'amount': cost_lines.list_cost },
            { 'cost_basis': 'net_cost', 'amount': cost_lines.net_cost }
        ]) as basis_amount
    from cost_lines
),

bill as (
    select
        bill_lines.provider,
        bill_lines.billing_account_id,
        bill_lines.billing_period,
        bill_lines.billing_currency,
        bill_lines.basis_amount.cost_basis,
        count(*) as cost_lines,
        bool_and(bill_lines.invoiced) as invoiced,
        sum(bill_lines.basis_amount.amount) as bill_total
    from bill_lines
    group by
        bill_lines.provider,
        bill_lines.billing_account_id,
        bill_lines.billing_period,
        bill_lines.billing_currency,
        bill_lines.basis_amount.cost_basis
),

slice_amounts as (
    select
        cost_allocations.allocation_model,
        cost_allocations.provider,
        cost_allocations.billing_account_id,
        cost_allocations.billing_period,
        cost_allocations.billing_currency,
        cost_allocations.allocation_kind,
        unnest([
            { 'cost_basis': 'billed_cost', 'amount': cost_allocations.billed_cost },
            { 'cost_basis': 'effective_cost', 'amount': cost_allocations.effective_cost },
            { 'cost_basis': 'list_cost', 'amount': cost_allocations.list_cost },
            { 'cost_basis': 'net_cost', 'amount': cost_allocations.net_cost }
        ]) as basis_amount
    from cost_allocations
),

placed as (
    select
        slice_amounts.allocation_model,
        slice_amounts.provider,
        slice_amounts.billing_account_id,
        slice_amounts.billing_period,
        slice_amounts.billing_currency,
        slice_amounts.basis_amount.cost_basis,
        sum(slice_amounts.basis_amount.amount) filter (
            where slice_amounts.allocation_kind = 'attributed'
        ) as attributed,
        sum(slice_amounts.basis_amount.amount) filter (
            where slice_amounts.allocation_kind = 'shared'
        ) as shared,
        sum(slice_amounts.basis_amount.amount) filter (
            where slice_amounts.allocation_kind = 'unallocated'
        ) as unallocated
    from slice_amounts
    group by
        slice_amounts.allocation_model,
        slice_amounts.provider,
        slice_amounts.billing_account_id,
        slice_amounts.billing_period,
        slice_amounts.billing_currency,
        slice_amounts.basis_amount.cost_basis
),

final as (
    select
        allocation_models.allocation_model,
        bill.provider,
        bill.billing_account_id,
        bill.billing_period,
        bill.billing_currency,
        bill.cost_basis,
        bill.cost_lines,
        bill.invoiced,
        cast(bill.bill_total as decimal(38, 10)) as bill_total,
        cast(coalesce(placed.attributed, 0) as decimal(38, 10)) as attributed,
        cast(coalesce(placed.shared, 0) as decimal(38, 10)) as shared,
        cast(coalesce(placed.unallocated, 0) as decimal(38, 10)) as unallocated,
        cast(
            bill.bill_total
            - coalesce(placed.attributed, 0)
            - coalesce(placed.shared, 0)
            - coalesce(placed.unallocated, 0)
            as decimal(38, 10)
        ) as difference
    from bill
    cross join allocation_models
    left join placed
        on
            allocation_models.allocation_model = placed.allocation_model
            and bill.provider is not distinct from placed.provider
            and bill.billing_account_id is not distinct from placed.billing_account_id
            and bill.billing_period is not distinct from placed.billing_period
            and bill.billing_currency is not distinct from placed.billing_currency
            and bill.cost_basis = placed.cost_basis
)

select * from final
