-- The cost slices attribution did not place: lines' unallocated rests, split idle capacity and pool shares.
-- grain: one row per (allocation_models, line_id, allocation_kind, attribution_method, attempt_id,
-- experiment_id, unallocated_reason)
-- materialized: view (of three published tables, each written once: the lines' rests, allocation.line_remainders;
-- the pools' shares, allocation.pool_shares; and the few other slices, allocation.idle_and_unspread_slices. Copying
-- the rests and shares into one table cost about 6 CPU s at 10M lines)
-- allocation_models is 'both' (a rest no pool takes), 'marginal' or 'fully_loaded'. With
-- attribution.line_attributions (the attributed slices, 'both') it makes allocation.cost_slices: every slice of
-- every line, each stored once. The stored slices carry their line's billing period and its profile's key
-- (profile_key), never joined to the lines on line_id; the other ledger keys (provider, account, currency) are the
-- profile's, read here from the bill's few thousand profiles (normalized.cost_line_profiles) so that no per-line
-- table stores them (contract version 4).
with remainders as (
    select * from allocation.line_remainders
),

pool_shares as (
    select * from allocation.pool_shares
),

idle_and_unspread_slices as (
    select * from allocation.idle_and_unspread_slices
),

profiles as (
    select * from normalized.cost_line_profiles
),

rests as (
    -- a rest no pool takes is the same slice in both models: stored once; a pooled line's rest is
    -- unallocated in the marginal model and spread by its pool in the fully loaded one
    select
        case when remainders.pool_name is null then 'both' else 'marginal' end as allocation_models,
        remainders.line_id,
        'unallocated' as allocation_kind,
        unattributed(),  -- noqa: AL03
        cast(null as varchar) as pool_name,
        remainders.unallocated_reason,
        cast(null as double) as share,
        remainders.billing_period,
        bases(remainders),  -- noqa: AL03
        remainders.profile_key
    from remainders
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
        pool_shares.billing_period,
        bases(pool_shares),  -- noqa: AL03
        pool_shares.profile_key
    from pool_shares
),

stored as (
    select * from rests
    union all
    select * from shared
    union all
    select * from idle_and_unspread_slices
),

final as (
    select
        stored.allocation_models,
        stored.line_id,
        stored.allocation_kind,
        stored.attempt_id,
        stored.experiment_id,
        stored.attribution_method,
        stored.confidence,
        stored.pool_name,
        stored.unallocated_reason,
        stored.share,
        profiles.provider,
        profiles.billing_account_id,
        stored.billing_period,
        profiles.billing_currency,
        bases(stored),  -- noqa: AL03, RF02
        stored.profile_key
    from stored
    left join profiles on stored.profile_key = profiles.profile_key
)

select * from final
