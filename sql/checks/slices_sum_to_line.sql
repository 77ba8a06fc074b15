-- Every cost line is split whole, once, under each model: a line-weighted checksum of the slices equals the lines'.
-- grain: one row per (allocation_model, billing_period, profile_key) that differs (the provider, account and currency
-- are the profile's)
-- A checksum, not a per-line comparison: a group-by on line_id is the largest hash table of a month at scale.
-- On both sides each line's cost is weighted by w = 1 + abs(hash(line_id) % 1021) (macro line_checksums), summed
-- exactly in DECIMAL, in every basis, per billing period, profile and model: the lines' sums are
-- normalized.profile_line_sums', the slices' allocation.profile_slice_sums' (each read once for this check and the
-- marts that sum them). It catches a slice lost, added, inflated or moved to another
-- line, and a slice carrying another profile_key than its line's (the marts would count it under another account,
-- currency, service or category), unless another error cancels it exactly under the weights; it cannot see a line
-- missing whose cost is 0 in all four bases, nor two lines of equal weight and profile trading cost. The exact
-- per-line comparisons (tests/exact_checks.py) run in the test suite on every scenario world.
with profile_line_sums as (
    select * from normalized.profile_line_sums
),

profile_slice_sums as (
    select * from allocation.profile_slice_sums
),

line_sums as (
    select
        profile_line_sums.billing_period,
        profile_line_sums.profile_key,
        profile_line_sums.billed_checksum,
        profile_line_sums.effective_checksum,
        profile_line_sums.list_checksum,
        profile_line_sums.net_checksum
    from profile_line_sums
),

stored_sums as (
    -- each stored slice weighed once, by the models it belongs to, before the models are expanded
    select
        profile_slice_sums.allocation_models,
        profile_slice_sums.billing_period,
        profile_slice_sums.profile_key,
        sum_checksums(profile_slice_sums)  -- noqa: AL03
    from profile_slice_sums
    group by all
),

slice_sums as (
    select
        allocation_models.allocation_model,
        stored_sums.billing_period,
        stored_sums.profile_key,
        sum_checksums(stored_sums)  -- noqa: AL03, RF02
    from stored_sums
    inner join allocation_models() as allocation_models
        on in_allocation_model(stored_sums.allocation_models, allocation_models.allocation_model)
    group by all
),

expected as (
    select
        allocation_models.allocation_model,
        line_sums.*
    from line_sums
    cross join allocation_models() as allocation_models
),

final as (
    select
        coalesce(expected.allocation_model, slice_sums.allocation_model) as allocation_model,
        coalesce(expected.billing_period, slice_sums.billing_period) as billing_period,
        coalesce(expected.profile_key, slice_sums.profile_key) as profile_key,
        expected.billed_checksum as lines_billed_checksum,
        slice_sums.billed_checksum as slices_billed_checksum
    from expected
    full outer join slice_sums
        on
            expected.allocation_model = slice_sums.allocation_model
            and expected.billing_period is not distinct from slice_sums.billing_period
            and expected.profile_key = slice_sums.profile_key
    where
        expected.allocation_model is null
        or slice_sums.allocation_model is null
        or checksums_differ(expected, slice_sums)  -- noqa: RF02
)

select * from final
