-- The unattributed rest of each line that a config pool takes, with the window the pool spreads it over.
-- grain: one row per (line_id): the first pool whose selector matches it (allocation.line_remainders.pool_name);
-- excluded inference lines never pool
-- The window is the line's charge period (spread = 'charge_period') or its billing period.
-- materialized: intermediate (a step of the build, never published: allocation.cost_slices carries its result)
with remainders as (
    -- said outright, not left to the join with the pools: DuckDB then skips the unpooled rests' row groups and
    -- builds the join with the lines' windows on the pooled few, not on the month's lines (1-3 CPU s at 10M)
    select * from allocation.line_remainders
    where pool_name is not null
),

cost_lines as (
    select
        cost_lines.line_id,
        line_windows(cost_lines)  -- noqa: AL03
    from normalized.cost_line_facts as cost_lines
),

pools as (
    select * from config.pools
),

final as (
    select
        -- the rest without the line's resource and window the rests carry for the waste findings:
        -- pool_shares repeats these columns on every slice of the line
        remainders.line_id,
        remainders.unallocated_reason,
        bases(remainders),  -- noqa: AL03, RF02
        remainders.billing_period,
        remainders.profile_key,
        pools.pool_order,
        pools.pool_name,
        pools.driver,
        pools.basis,
        case
            when pools.spread = 'billing_period' then cost_lines.billing_period_start
            else cost_lines.charge_period_start
        end as window_start,
        case
            when pools.spread = 'billing_period' then cost_lines.billing_period_end
            else cost_lines.charge_period_end
        end as window_end
    from remainders
    inner join pools on remainders.pool_name = pools.pool_name
    inner join cost_lines on remainders.line_id = cost_lines.line_id
)

select * from final
