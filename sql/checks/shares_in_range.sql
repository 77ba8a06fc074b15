-- Shares lie in [0, 1]; a line's attributed shares sum to at most 1, and to 1 where nothing is left over.
-- grain: one row per (allocation_model, line_id) with a share out of range or shares over 1
with cost_allocations as (
    select * from allocation.model_slices
),

line_shares as (
    select
        cost_allocations.allocation_model,
        cost_allocations.line_id,
        min(cost_allocations.share) as smallest_share,
        max(cost_allocations.share) as largest_share,
        sum(cost_allocations.share) filter (
            where cost_allocations.allocation_kind = 'attributed'
        ) as attributed_shares,
        count(*) filter (where cost_allocations.allocation_kind = 'unallocated') as remainders,
        count(*) filter (where cost_allocations.allocation_kind = 'shared') as shared_slices
    from cost_allocations
    group by cost_allocations.allocation_model, cost_allocations.line_id
),

final as (
    select line_shares.* from line_shares
    where
        line_shares.smallest_share < 0
        or line_shares.largest_share > 1 + 1e-9
        or line_shares.attributed_shares > 1 + 1e-9
        or (
            line_shares.remainders = 0
            and line_shares.shared_slices = 0
            and line_shares.attributed_shares < 1 - 1e-9
        )
)

select * from final
