-- The unattributed rest of each line that a config pool takes, with the window the pool spreads it over.
-- grain: one row per (line_id): the first pool whose selector matches it; excluded inference lines never pool
-- The window is the line's charge period (spread = 'charge_period') or its billing period.
-- materialized: intermediate (a step of the build, never published: allocation.cost_slices carries its result)
with remainders as (
    select * from allocation.line_remainders
),

cost_lines as (
    select
        cost_lines.line_id,
        cost_lines.charge_period_start,
        cost_lines.charge_period_end,
        cost_lines.billing_period_start,
        cost_lines.billing_period_end
    from normalized.cost_line_facts as cost_lines
),

pool_line_matches as (
    select * from allocation.pool_line_matches
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
        remainders.billed_cost,
        remainders.effective_cost,
        remainders.list_cost,
        remainders.net_cost,
        remainders.provider,
        remainders.billing_account_id,
        remainders.billing_period,
        remainders.billing_currency,
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
    inner join pool_line_matches
        on remainders.line_id = pool_line_matches.line_id and pool_line_matches.first_match
    inner join pools on pool_line_matches.pool_order = pools.pool_order
    inner join cost_lines on remainders.line_id = cost_lines.line_id
    where remainders.unallocated_reason <> 'excluded_inference'
)

select * from final
