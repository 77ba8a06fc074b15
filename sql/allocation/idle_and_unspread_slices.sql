-- The unattributed slices that are neither a line's rest nor a pool's share: split idle capacity, and pooled rests.
-- grain: one row per (allocation_models, line_id, allocation_kind, attribution_method, attempt_id, experiment_id,
-- unallocated_reason)
-- Split instance lines' idle capacity (unallocated in the marginal model, each placed pod's unused share in the
-- fully loaded one) and the rest of a pooled line that its pool found no attempt to spread over (fully loaded).
-- Few rows: allocation.unattributed_slices is the view of these with the lines' rests (allocation.line_remainders)
-- and the pools' shares (allocation.pool_shares), which are published as written. Columns as
-- allocation.cost_slices.
with split_unused_shares as (
    select * from allocation.split_unused_shares
),

pool_shares as (
    select * from allocation.pool_shares
),

pool_windows as (
    -- windows where a pool found candidate attempts (their driver weights may all be 0)
    select distinct
        pool_driver_weights.pool_order,
        pool_driver_weights.window_start,
        pool_driver_weights.window_end
    from allocation.pool_driver_weights as pool_driver_weights
),

first_pools as (
    -- the pooled lines carry their rests' amounts and keys (allocation.line_remainders)
    select * from allocation.pooled_lines
),

split_idle_unallocated as (
    -- marginal: the split idle capacity of an instance line stays unallocated, in one slice
    select
        'marginal' as allocation_models,
        split_unused_shares.line_id,
        'unallocated' as allocation_kind,
        unattributed(),  -- noqa: AL03
        cast(null as varchar) as pool_name,
        'split_unused_capacity' as unallocated_reason,
        cast(null as double) as share,
        split_unused_shares.billing_period,
        sum_bases(split_unused_shares),  -- noqa: AL03
        split_unused_shares.profile_key
    from split_unused_shares
    group by
        split_unused_shares.line_id,
        split_unused_shares.billing_period,
        split_unused_shares.profile_key
),

split_idle_shared as (
    -- fully loaded: each placed pod takes its unused cost share, as AWS spreads it
    select
        'fully_loaded' as allocation_models,
        split_unused_shares.line_id,
        'shared' as allocation_kind,
        split_unused_shares.attempt_id,
        split_unused_shares.experiment_id,
        'split_unused' as attribution_method,
        'billed' as confidence,
        cast(null as varchar) as pool_name,
        cast(null as varchar) as unallocated_reason,
        split_unused_shares.share,
        split_unused_shares.billing_period,
        bases(split_unused_shares),  -- noqa: AL03
        split_unused_shares.profile_key
    from split_unused_shares
),

spread_lines as (
    -- the pooled lines their pool spread over attempts
    select distinct pool_shares.line_id from pool_shares
),

fully_loaded_unallocated as (
    -- a pooled line's rest the pool could not spread (first_pools never holds excluded lines)
    select
        'fully_loaded' as allocation_models,
        first_pools.line_id,
        'unallocated' as allocation_kind,
        unattributed(),  -- noqa: AL03
        first_pools.pool_name,
        case
            when pool_windows.pool_order is not null then 'pool_driver_no_usage'
            else 'pool_no_eligible_attempts'
        end as unallocated_reason,
        cast(null as double) as share,
        first_pools.billing_period,
        bases(first_pools),  -- noqa: AL03, RF02
        first_pools.profile_key
    from first_pools
    left join pool_windows on same_pool_window(first_pools, pool_windows)  -- noqa: RF02
    anti join spread_lines on first_pools.line_id = spread_lines.line_id
),

slices as (
    select * from split_idle_unallocated
    union all
    select * from split_idle_shared
    union all
    select * from fully_loaded_unallocated
),

final as (
    select
        slices.allocation_models,
        slices.line_id,
        slices.allocation_kind,
        slices.attempt_id,
        slices.experiment_id,
        slices.attribution_method,
        slices.confidence,
        slices.pool_name,
        slices.unallocated_reason,
        slices.share,
        slices.billing_period,
        bases(slices),  -- noqa: AL03
        slices.profile_key
    from slices
)

select * from final
