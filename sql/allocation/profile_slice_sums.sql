-- The stored slices summed per model set, period, profile, kind and reason: the four bases, their checksums.
-- grain: one row per (allocation_models, billing_period, profile_key, allocation_kind, unallocated_reason)
-- materialized: intermediate (a step of the build, never published: the few thousand sums of the slices that
-- marts.reconciliation, marts.unallocated_costs and checks.slices_sum_to_line read)
-- The slices are read once for the three instead of once by each (docs/performance.md, session 31). Each stored slice
-- is summed once, by the models it belongs to (allocation_models: 'both', 'marginal' or 'fully_loaded'); the readers
-- expand the models over these sums. The checksums weigh each slice's cost by line_weight(line_id), as
-- normalized.profile_line_sums weighs its lines.
with cost_slices as (
    select * from allocation.cost_slices
),

weighted_slices as (
    select
        cost_slices.*,
        line_weight(cost_slices.line_id) as line_weight
    from cost_slices
),

final as (
    select
        weighted_slices.allocation_models,
        weighted_slices.billing_period,
        weighted_slices.profile_key,
        weighted_slices.allocation_kind,
        weighted_slices.unallocated_reason,
        count(*) as cost_slices,
        sum(weighted_slices.billed_cost) as billed_cost,
        sum(weighted_slices.effective_cost) as effective_cost,
        sum(weighted_slices.list_cost) as list_cost,
        sum(weighted_slices.net_cost) as net_cost,
        sum(weighted_slices.billed_cost * weighted_slices.line_weight) as billed_checksum,
        sum(weighted_slices.effective_cost * weighted_slices.line_weight) as effective_checksum,
        sum(weighted_slices.list_cost * weighted_slices.line_weight) as list_checksum,
        sum(weighted_slices.net_cost * weighted_slices.line_weight) as net_checksum
    from weighted_slices
    group by
        weighted_slices.allocation_models,
        weighted_slices.billing_period,
        weighted_slices.profile_key,
        weighted_slices.allocation_kind,
        weighted_slices.unallocated_reason
)

select * from final
