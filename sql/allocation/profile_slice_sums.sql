-- The stored slices summed per model set, period, profile, kind and reason: the four bases, their checksums.
-- grain: one row per (allocation_models, billing_period, profile_key, allocation_kind, unallocated_reason)
-- materialized: intermediate (a step of the build, never published: the few thousand sums of the slices that
-- marts.reconciliation, marts.unallocated_costs and checks.slices_sum_to_line read)
-- The slices are read once for the three instead of once by each. Each stored slice
-- is summed once, by the models it belongs to (allocation_models: 'both', 'marginal' or 'fully_loaded'); the readers
-- expand the models over these sums. The checksums (macro line_checksums) weigh each slice's cost by its line's weight,
-- as normalized.profile_line_sums does.
with cost_slices as (
    select * from allocation.cost_slices
),

final as (
    select
        cost_slices.allocation_models,
        cost_slices.billing_period,
        cost_slices.profile_key,
        cost_slices.allocation_kind,
        cost_slices.unallocated_reason,
        count(*) as cost_slices,
        sum_bases(cost_slices),  -- noqa: AL03
        line_checksums(cost_slices)  -- noqa: AL03
    from cost_slices
    group by
        cost_slices.allocation_models,
        cost_slices.billing_period,
        cost_slices.profile_key,
        cost_slices.allocation_kind,
        cost_slices.unallocated_reason
)

select * from final
