-- The cost slices attribution did not place: lines' unallocated rests, split idle capacity and pool shares.
-- grain: one row per (allocation_models, line_id, allocation_kind, attribution_method, attempt_id,
-- experiment_id, unallocated_reason)
-- materialized: parquet (written once, as the published Parquet; allocation.cost_slices reads it through a view)
-- allocation_models is 'both' (a rest no pool takes), 'marginal' or 'fully_loaded'. With
-- attribution.line_attributions (the attributed slices, 'both') it makes allocation.cost_slices: every slice of
-- every line, each stored once. Only the line's ledger keys are carried (provider, account, period, currency) and
-- its profile's key (profile_key), from the attribution steps, never by a join on line_id.
with remainders as (
    select * from allocation.line_remainders
),

split_unused_shares as (
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
    select * from allocation.pooled_lines
),

marginal_unallocated as (
    -- a rest no pool takes is the same slice in both models: stored once
    select
        case when first_pools.line_id is null then 'both' else 'marginal' end as allocation_models,
        remainders.line_id,
        'unallocated' as allocation_kind,
        cast(null as varchar) as attempt_id,
        cast(null as varchar) as experiment_id,
        cast(null as varchar) as attribution_method,
        cast(null as varchar) as confidence,
        cast(null as varchar) as pool_name,
        remainders.unallocated_reason,
        cast(null as double) as share,
        remainders.provider,
        remainders.billing_account_id,
        remainders.billing_period,
        remainders.billing_currency,
        remainders.billed_cost,
        remainders.effective_cost,
        remainders.list_cost,
        remainders.net_cost,
        remainders.profile_key
    from remainders
    left join first_pools on remainders.line_id = first_pools.line_id
),

split_idle_unallocated as (
    -- marginal: the split idle capacity of an instance line stays unallocated, in one slice
    select
        'marginal' as allocation_models,
        split_unused_shares.line_id,
        'unallocated' as allocation_kind,
        cast(null as varchar) as attempt_id,
        cast(null as varchar) as experiment_id,
        cast(null as varchar) as attribution_method,
        cast(null as varchar) as confidence,
        cast(null as varchar) as pool_name,
        'split_unused_capacity' as unallocated_reason,
        cast(null as double) as share,
        split_unused_shares.provider,
        split_unused_shares.billing_account_id,
        split_unused_shares.billing_period,
        split_unused_shares.billing_currency,
        sum(split_unused_shares.billed_cost) as billed_cost,
        sum(split_unused_shares.effective_cost) as effective_cost,
        sum(split_unused_shares.list_cost) as list_cost,
        sum(split_unused_shares.net_cost) as net_cost,
        split_unused_shares.profile_key
    from split_unused_shares
    group by
        split_unused_shares.line_id,
        split_unused_shares.provider,
        split_unused_shares.billing_account_id,
        split_unused_shares.billing_period,
        split_unused_shares.billing_currency,
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
        split_unused_shares.provider,
        split_unused_shares.billing_account_id,
        split_unused_shares.billing_period,
        split_unused_shares.billing_currency,
        split_unused_shares.billed_cost,
        split_unused_shares.effective_cost,
        split_unused_shares.list_cost,
        split_unused_shares.net_cost,
        split_unused_shares.profile_key
    from split_unused_shares
),

shared as (
    select
        'fully_loaded' as allocation_models,
        pool_shares.line_id,
        'shared' as allocation_kind,
        pool_shares.attempt_id,
        pool_shares.experiment_id,
        'pool' as attribution_method,
        'allocated' as confidence,
        pool_shares.pool_name,
        cast(null as varchar) as unallocated_reason,
        pool_shares.share,
        pool_shares.provider,
        pool_shares.billing_account_id,
        pool_shares.billing_period,
        pool_shares.billing_currency,
        pool_shares.billed_cost,
        pool_shares.effective_cost,
        pool_shares.list_cost,
        pool_shares.net_cost,
        pool_shares.profile_key
    from pool_shares
),

pooled_lines as (
    select distinct pool_shares.line_id from pool_shares
),

fully_loaded_unallocated as (
    -- a pooled line's rest the pool could not spread (first_pools never holds excluded lines)
    select
        'fully_loaded' as allocation_models,
        remainders.line_id,
        'unallocated' as allocation_kind,
        cast(null as varchar) as attempt_id,
        cast(null as varchar) as experiment_id,
        cast(null as varchar) as attribution_method,
        cast(null as varchar) as confidence,
        first_pools.pool_name,
        case
            when pool_windows.pool_order is not null then 'pool_driver_no_usage'
            else 'pool_no_eligible_attempts'
        end as unallocated_reason,
        cast(null as double) as share,
        remainders.provider,
        remainders.billing_account_id,
        remainders.billing_period,
        remainders.billing_currency,
        remainders.billed_cost,
        remainders.effective_cost,
        remainders.list_cost,
        remainders.net_cost,
        remainders.profile_key
    from remainders
    inner join first_pools on remainders.line_id = first_pools.line_id
    left join pool_windows
        on
            first_pools.pool_order = pool_windows.pool_order
            and first_pools.window_start = pool_windows.window_start
            and first_pools.window_end = pool_windows.window_end
    anti join pooled_lines on remainders.line_id = pooled_lines.line_id
),

slices as (
    select * from marginal_unallocated
    union all
    select * from split_idle_unallocated
    union all
    select * from shared
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
        slices.provider,
        slices.billing_account_id,
        slices.billing_period,
        slices.billing_currency,
        slices.billed_cost,
        slices.effective_cost,
        slices.list_cost,
        slices.net_cost,
        slices.profile_key
    from slices
)

select * from final
