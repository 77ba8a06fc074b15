-- The bill against what runcost placed: attributed + shared + unallocated per basis, and the difference (must be 0).
-- grain: one row per (allocation_model, provider, billing_account_id, billing_period, billing_currency, cost_basis)
with profile_line_sums as (
    select * from normalized.profile_line_sums
),

profiles as (
    select * from normalized.cost_line_profiles
),

profile_slice_sums as (
    select * from allocation.profile_slice_sums
),

billing_periods as (
    select * from normalized.billing_periods
),

bill_sums as (
    -- the lines' sums per period and profile (normalized.profile_line_sums), summed per ledger: the
    -- provider, account, currency and invoice are the profile's; the few sums are unpivoted into
    -- bases after grouping (unnesting every line into four rows before grouping made the mart cost
    -- four passes over the bill)
    select
        profiles.provider,
        profiles.billing_account_id,
        profile_line_sums.billing_period,
        profiles.billing_currency,
        cast(sum(profile_line_sums.cost_lines) as bigint) as cost_lines,
        bool_and(profiles.invoice_id is not null) as invoiced,
        sum_bases(profile_line_sums)  -- noqa: AL03, RF02
    from profile_line_sums
    inner join profiles on profile_line_sums.profile_key = profiles.profile_key
    group by all
),

bill_bases as (
    select
        ledger_keys(bill_sums),  -- noqa: AL03
        bill_sums.cost_lines,
        bill_sums.invoiced,
        basis_amounts(bill_sums)  -- noqa: AL03
    from bill_sums
),

bill as (
    select
        ledger_keys(bill_bases),  -- noqa: AL03
        bill_bases.cost_lines,
        bill_bases.invoiced,
        bill_bases.basis_amount.cost_basis,
        bill_bases.basis_amount.amount as bill_total
    from bill_bases
),

stored_sums as (
    -- the stored slices' sums per model set, period, profile and kind (allocation.profile_slice_sums:
    -- each slice summed once, by the models it belongs to), summed per ledger before the models are
    -- expanded
    select
        profile_slice_sums.allocation_models,
        profiles.provider,
        profiles.billing_account_id,
        profile_slice_sums.billing_period,
        profiles.billing_currency,
        profile_slice_sums.allocation_kind,
        sum_bases(profile_slice_sums)  -- noqa: AL03, RF02
    from profile_slice_sums
    left join profiles on profile_slice_sums.profile_key = profiles.profile_key
    group by all
),

kind_sums as (
    select
        allocation_models.allocation_model,
        ledger_keys(stored_sums),  -- noqa: AL03, RF02
        stored_sums.allocation_kind,
        sum_bases(stored_sums)  -- noqa: AL03, RF02
    from stored_sums
    inner join allocation_models() as allocation_models
        on in_allocation_model(stored_sums.allocation_models, allocation_models.allocation_model)
    group by all
),

slice_amounts as (
    select
        kind_sums.allocation_model,
        ledger_keys(kind_sums),  -- noqa: AL03
        kind_sums.allocation_kind,
        basis_amounts(kind_sums)  -- noqa: AL03
    from kind_sums
),

placed as (
    select
        slice_amounts.allocation_model,
        ledger_keys(slice_amounts),  -- noqa: AL03
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
    group by all
),

final as (
    select
        allocation_models.allocation_model,
        ledger_keys(bill),  -- noqa: AL03, RF02
        bill.cost_basis,
        bill.cost_lines,
        bill.invoiced,
        money(bill.bill_total) as bill_total,
        money(coalesce(placed.attributed, 0)) as attributed,
        money(coalesce(placed.shared, 0)) as shared,
        money(coalesce(placed.unallocated, 0)) as unallocated,
        money(
            bill.bill_total
            - coalesce(placed.attributed, 0)
            - coalesce(placed.shared, 0)
            - coalesce(placed.unallocated, 0)
        ) as difference,
        billing_periods.period_status
    from bill
    cross join allocation_models() as allocation_models
    left join placed
        on
            allocation_models.allocation_model = placed.allocation_model
            and bill.provider is not distinct from placed.provider
            and bill.billing_account_id is not distinct from placed.billing_account_id
            and bill.billing_period is not distinct from placed.billing_period
            and bill.billing_currency is not distinct from placed.billing_currency
            and bill.cost_basis = placed.cost_basis
    left join billing_periods on same_billing_period(bill, billing_periods)  -- noqa: RF02
)

select * from final
