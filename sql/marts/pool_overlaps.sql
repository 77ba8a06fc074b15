-- Cost lines that several pools' selectors match: the first pool in runcost.toml takes them, the later ones do not.
-- grain: one row per (billing_period, billing_currency, pool_name, overlapping_pool_name)
with pool_line_matches as (
    select * from allocation.pool_line_matches
),

pools as (
    select * from config.pools
),

cost_lines as (
    select * from normalized.cost_lines
),

winners as (
    select
        pool_line_matches.line_id,
        pool_line_matches.pool_order
    from pool_line_matches
    where pool_line_matches.first_match
),

losers as (
    select
        pool_line_matches.line_id,
        pool_line_matches.pool_order
    from pool_line_matches
    where not pool_line_matches.first_match
),

final as (
    select
        cost_lines.billing_period,
        cost_lines.billing_currency,
        winning_pools.pool_name,
        losing_pools.pool_name as overlapping_pool_name,
        count(*) as cost_lines,
        money_sum_bases(cost_lines)  -- noqa: AL03
    from losers
    inner join winners on losers.line_id = winners.line_id
    inner join pools as winning_pools on winners.pool_order = winning_pools.pool_order
    inner join pools as losing_pools on losers.pool_order = losing_pools.pool_order
    inner join cost_lines on losers.line_id = cost_lines.line_id
    group by all
)

select * from final
