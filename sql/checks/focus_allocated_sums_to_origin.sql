-- Every FOCUS charge split by ratio is split whole, once, under each model: the slices marts.focus_allocated takes
-- its cost from sum to it.
-- grain: one row per (allocation_model, x_SourceFormat, BillingAccountId, BillingPeriodStart, BillingCurrency) that
-- differs
-- Only the origin rows whose cost may be no basis of their line (macro focus_costs_maybe_unmatched: a ContractedCost
-- or PricingCurrencyEffectiveCost that is not NULL, not 0 and equals none of the row's BilledCost, EffectiveCost
-- and ListCost, which normalized.focus maps to a basis) depend on ratios and rounding remainders:
-- allocation.focus_ratio_splits splits those two columns of those rows, and marts.focus_allocated takes them from
-- it. Every other cost column is 0, NULL or a basis of its line, and the mart gives each slice its own amount in
-- that basis, which checks.slices_sum_to_line sums to the line's. That check also sees a line of any cost without
-- slices, so without a FOCUS row in the mart; a FOCUS row of no cost at all is seen by the test suite only.
-- A checksum over those origins and their split slices, as checks.slices_sum_to_line: each row's two columns
-- weighted by its origin row, w = 1 + abs(hash(x_LineId, x_ProviderLineType) % 1021) (macro focus_checksums),
-- summed exactly per model and the origin's source, account, period and currency on both sides; a split slice of
-- no candidate origin counts under no source, which no origin has. It catches a split slice lost, added, inflated
-- or moved to another origin row (a commitment fee's Purchase and its Unused row are two origins), unless another
-- error cancels it exactly under the weights. The mart is never computed here: a bill without such rows (a CUR
-- without net rates) leaves both sides empty. The exact per-row comparison of every origin with its mart slices,
-- and that every row split by ratio is one of these, run in the test suite (tests/exact_checks.py).
-- FOCUS names are PascalCase by specification; DuckDB keeps an alias's case as written
-- noqa: disable=CP02
with focus as (
    select * from normalized.focus
),

splits as (
    select * from allocation.focus_ratio_splits
),

candidates as (
    -- the origin rows that may have a cost column no basis of their line equals
    select
        focus.x_LineId,
        focus.x_ProviderLineType,
        focus.x_SourceFormat,
        focus.BillingAccountId,
        focus.BillingPeriodStart,
        focus.BillingCurrency,
        focus.BilledCost,
        focus.EffectiveCost,
        focus.ListCost,
        focus.ContractedCost,
        focus.PricingCurrencyEffectiveCost
    from focus
    where focus_costs_maybe_unmatched(focus)  -- noqa: RF02
),

origin_sums as (
    select
        candidates.x_SourceFormat,
        candidates.BillingAccountId,
        candidates.BillingPeriodStart,
        candidates.BillingCurrency,
        focus_checksums(candidates)  -- noqa: AL03
    from candidates
    group by all
),

expected as (
    select
        allocation_models.allocation_model,
        origin_sums.*
    from origin_sums
    cross join allocation_models() as allocation_models
),

slice_sums as (
    -- the split slices, counted under their origin's source, account, period and currency
    select
        splits.allocation_model,
        candidates.x_SourceFormat,
        candidates.BillingAccountId,
        candidates.BillingPeriodStart,
        candidates.BillingCurrency,
        focus_checksums(splits)  -- noqa: AL03, RF02
    from splits
    left join candidates
        on
            splits.x_LineId = candidates.x_LineId
            and splits.x_ProviderLineType is not distinct from candidates.x_ProviderLineType
    group by all
),

final as (
    select
        coalesce(expected.allocation_model, slice_sums.allocation_model) as allocation_model,
        coalesce(expected.x_SourceFormat, slice_sums.x_SourceFormat) as x_SourceFormat,
        coalesce(expected.BillingAccountId, slice_sums.BillingAccountId) as BillingAccountId,
        coalesce(expected.BillingPeriodStart, slice_sums.BillingPeriodStart) as BillingPeriodStart,
        coalesce(expected.BillingCurrency, slice_sums.BillingCurrency) as BillingCurrency,
        expected.contracted_checksum as origins_contracted_checksum,
        slice_sums.contracted_checksum as slices_contracted_checksum
    from expected
    full outer join slice_sums
        on
            expected.allocation_model = slice_sums.allocation_model
            and expected.x_SourceFormat is not distinct from slice_sums.x_SourceFormat
            and expected.BillingAccountId is not distinct from slice_sums.BillingAccountId
            and expected.BillingPeriodStart is not distinct from slice_sums.BillingPeriodStart
            and expected.BillingCurrency is not distinct from slice_sums.BillingCurrency
    where
        expected.allocation_model is null
        or slice_sums.allocation_model is null
        or focus_checksums_differ(expected, slice_sums)  -- noqa: RF02
)

-- noqa: enable=CP02
select * from final
