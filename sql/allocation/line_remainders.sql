-- What attribution left of each line once the split idle pool took its part: for config pools, else unallocated.
-- grain: one row per line_id whose rest is not wholly split idle capacity
-- materialized: parquet (written once, as the published Parquet: allocation.unattributed_slices reads each rest as
-- its unallocated slice through a view, so the rests are not written a second time)
-- pool_name is the pool that takes the rest in the fully loaded model (the first pool whose selector matches the
-- line; never an excluded inference line): allocation.pooled_lines reads it, and the rest is unallocated in the
-- marginal model alone; NULL when no pool takes it, the rest then unallocated in both models.
with remainders as (
    select * from attribution.unattributed_lines
),

split_unused_shares as (
    select * from allocation.split_unused_shares
),

idle_totals as (
    select
        split_unused_shares.line_id,
        sum(split_unused_shares.billed_cost) as billed_cost,
        sum(split_unused_shares.effective_cost) as effective_cost,
        sum(split_unused_shares.list_cost) as list_cost,
        sum(split_unused_shares.net_cost) as net_cost
    from split_unused_shares
    group by split_unused_shares.line_id
),

first_pools as (
    select
        pool_line_matches.line_id,
        pools.pool_name
    from allocation.pool_line_matches as pool_line_matches
    inner join config.pools as pools on pool_line_matches.pool_order = pools.pool_order
    where pool_line_matches.first_match
),

final as (
    -- a split line whose pods are all placed has no rest here: its idle slices take all of it
    select
        remainders.line_id,
        remainders.unallocated_reason,
        cast(
            remainders.billed_cost - coalesce(idle_totals.billed_cost, 0) as decimal(38, 10)
        ) as billed_cost,
        cast(
            remainders.effective_cost - coalesce(idle_totals.effective_cost, 0) as decimal(38, 10)
        ) as effective_cost,
        cast(
            remainders.list_cost - coalesce(idle_totals.list_cost, 0) as decimal(38, 10)
        ) as list_cost,
        cast(remainders.net_cost - coalesce(idle_totals.net_cost, 0) as decimal(38, 10)) as net_cost,
        remainders.resource_id,
        remainders.charge_period_start,
        remainders.charge_period_end,
        remainders.line_effective_cost,
        remainders.provider,
        remainders.billing_account_id,
        remainders.billing_period,
        remainders.billing_currency,
        remainders.profile_key,
        case
            when remainders.unallocated_reason <> 'excluded_inference' then first_pools.pool_name
        end as pool_name
    from remainders
    left join idle_totals on remainders.line_id = idle_totals.line_id
    left join first_pools on remainders.line_id = first_pools.line_id
    where remainders.unallocated_reason <> 'split_unused_capacity'
)

select * from final
