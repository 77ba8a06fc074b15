-- Every FOCUS charge split by ratio is split whole, once, under each model: its marts.focus_allocated costs sum to it.
-- grain: one row per (allocation_model, x_SourceFormat, BillingAccountId, BillingPeriodStart, BillingCurrency) that
-- differs
-- Only the origin rows whose cost may be no basis of their line (macro focus_costs_maybe_unmatched: a ContractedCost
-- or PricingCurrencyEffectiveCost that is not NULL, not 0 and equals none of the row's BilledCost, EffectiveCost
-- and ListCost, which normalized.focus maps to a basis) depend on the mart's ratios and rounding remainders. Every
-- other cost column is 0, NULL or a basis of its line, and the mart gives each slice its own amount in that basis,
-- which checks.slices_sum_to_line sums to the line's. That check also sees a line of any cost without slices, so
-- without a FOCUS row in the mart; a FOCUS row of no cost at all is seen by the test suite only.
-- A checksum over those origins and their slices (marts.focus_allocated joined to them), as
-- checks.slices_sum_to_line: each row's cost columns weighted by its origin row, w = 1 + abs(hash(x_LineId,
-- x_ProviderLineType) % 1021) (macro focus_checksums), summed exactly per model and the origin's source, account,
-- period and currency on both sides. It catches a slice of those origins lost, added, inflated or moved to another
-- origin row (a commitment fee's Purchase and its Unused row are two origins), unless another error cancels it
-- exactly under the weights. A CUR without net rates has no such rows, yet DuckDB still builds the mart's hash
-- table of every origin row before the join leaves it no slice to read: at 1M lines 1.34 CPU s against 2.55 for the
-- whole mart (docs/performance.md). The exact per-row comparison of every origin, and that every row split by ratio
-- is one of these, run in the test suite (tests/exact_checks.py).
-- FOCUS names are PascalCase by specification; DuckDB keeps an alias's case as written
-- noqa: disable=CP02
with focus as (
    select * from normalized.focus
),

focus_allocated as (
    select * from marts.focus_allocated
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
    -- the slices of those origins, counted under their origin's source, account, period and currency
    select
        focus_allocated.x_AllocationModel as allocation_model,
        candidates.x_SourceFormat,
        candidates.BillingAccountId,
        candidates.BillingPeriodStart,
        candidates.BillingCurrency,
        focus_checksums(focus_allocated)  -- noqa: AL03, RF02
    from focus_allocated
    inner join candidates
        on
            focus_allocated.x_LineId = candidates.x_LineId
            and focus_allocated.x_ProviderLineType is not distinct from candidates.x_ProviderLineType
    group by all
),

final as (
    select
        coalesce(expected.allocation_model, slice_sums.allocation_model) as allocation_model,
        coalesce(expected.x_SourceFormat, slice_sums.x_SourceFormat) as x_SourceFormat,
        coalesce(expected.BillingAccountId, slice_sums.BillingAccountId) as BillingAccountId,
        coalesce(expected.BillingPeriodStart, slice_sums.BillingPeriodStart) as BillingPeriodStart,
        coalesce(expected.BillingCurrency, slice_sums.BillingCurrency) as BillingCurrency,
        expected.billed_checksum as origins_billed_checksum,
        slice_sums.billed_checksum as slices_billed_checksum
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
