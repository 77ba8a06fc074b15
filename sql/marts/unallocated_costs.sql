-- Cost no attempt, experiment or pool took, by why, in the four bases.
-- grain: one row per (allocation_model, provider, billing_period, billing_currency, unallocated_reason, service_name)
with profile_slice_sums as (
    select * from allocation.profile_slice_sums
),

profiles as (
    select
        profiles.profile_key,
        profiles.provider,
        profiles.billing_currency,
        profiles.service_name
    from normalized.cost_line_profiles as profiles
),

stored_sums as (
    -- the stored slices summed once, by the models they belong to, per period, profile and
    -- reason (allocation.profile_slice_sums), before the models are expanded: a rest no pool takes
    -- is one slice of both models. The provider, currency and service are the profile's.
    select
        profile_slice_sums.allocation_models,
        profiles.provider,
        profile_slice_sums.billing_period,
        profiles.billing_currency,
        profile_slice_sums.unallocated_reason,
        profiles.service_name,
        sum(profile_slice_sums.cost_slices) as cost_lines,
        sum_bases(profile_slice_sums)  -- noqa: AL03, RF02
    from profile_slice_sums
    inner join profiles on profile_slice_sums.profile_key = profiles.profile_key
    where profile_slice_sums.allocation_kind = 'unallocated'
    group by all
),

final as (
    select
        allocation_models.allocation_model,
        stored_sums.provider,
        stored_sums.billing_period,
        stored_sums.billing_currency,
        stored_sums.unallocated_reason,
        stored_sums.service_name,
        cast(sum(stored_sums.cost_lines) as bigint) as cost_lines,
        money_sum_bases(stored_sums)  -- noqa: AL03, RF02
    from stored_sums
    inner join allocation_models() as allocation_models
        on in_allocation_model(stored_sums.allocation_models, allocation_models.allocation_model)
    group by all
)

select * from final
