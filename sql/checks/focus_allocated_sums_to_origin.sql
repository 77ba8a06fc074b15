-- Every FOCUS charge is split whole, once, under each model: marts.focus_allocated's costs sum to normalized.focus's.
-- grain: one row per (allocation_model, x_SourceFormat, BillingAccountId, BillingPeriodStart, BillingCurrency) that
-- differs
-- A checksum, as checks.slices_sum_to_line: each row's cost columns (BilledCost, EffectiveCost, ListCost,
-- ContractedCost, PricingCurrencyEffectiveCost) weighted by its origin row, w = 1 + abs(hash(x_LineId,
-- x_ProviderLineType) % 1021) (macro focus_checksums), summed exactly per model, source, account, period and
-- currency on both sides. It catches a slice lost, added, inflated or moved to another origin row (a commitment
-- fee's Purchase and its Unused row are two origins), unless another error cancels it exactly under the weights;
-- the exact per-row comparison runs in the test suite (tests/sql/test_model_focus_allocated.py).
-- FOCUS names are PascalCase by specification; DuckDB keeps an alias's case as written
-- noqa: disable=CP02
with focus as (
    select * from normalized.focus
),

focus_allocated as (
    select * from marts.focus_allocated
),

origin_sums as (
    select
        focus.x_SourceFormat,
        focus.BillingAccountId,
        focus.BillingPeriodStart,
        focus.BillingCurrency,
        focus_checksums(focus)  -- noqa: AL03
    from focus
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
    select
        focus_allocated.x_AllocationModel as allocation_model,
        focus_allocated.x_SourceFormat,
        focus_allocated.BillingAccountId,
        focus_allocated.BillingPeriodStart,
        focus_allocated.BillingCurrency,
        focus_checksums(focus_allocated)  -- noqa: AL03
    from focus_allocated
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
