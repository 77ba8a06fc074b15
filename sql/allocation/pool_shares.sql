-- Slices of unattributed cost that a pool spreads over attempts by its driver's shares (fully loaded model).
-- grain: one row per (line_id, attempt_id)
-- materialized: parquet (written once, as the published Parquet: allocation.unattributed_slices reads each share as
-- its shared slice through a view, so the shares are not written a second time)
with pool_driver_weights as (
    select * from allocation.pool_driver_weights
),

pooled_lines as (
    select * from allocation.pooled_lines
),

rounded as not materialized (
    -- read twice (summed per line, then joined to the sums) and computed twice: the join that makes it is a few
    -- thousand pooled lines against their windows' shares, cheaper than DuckDB storing its millions of slices to
    -- read them again, which spilled at the memory per line of a 100M bill
    select
        pooled_lines.*,
        pool_driver_weights.attempt_id,
        pool_driver_weights.experiment_id,
        pool_driver_weights.share,
        case when pool_driver_weights.takes_remainder then 1 else 2 end as slice_rank,
        shared_parts(pooled_lines, pool_driver_weights.share)  -- noqa: AL03, RF02
    from pooled_lines
    inner join pool_driver_weights on same_pool_window(pooled_lines, pool_driver_weights)  -- noqa: RF02
    where pool_driver_weights.share is not null
),

line_parts as (
    select
        rounded.line_id,
        sum_parts(rounded)  -- noqa: AL03
    from rounded
    group by rounded.line_id
),

totals as (
    select
        rounded.*,
        line_bases(rounded),  -- noqa: AL03, RF02
        parts_totals(line_parts)  -- noqa: AL03, RF02
    from rounded
    inner join line_parts on rounded.line_id = line_parts.line_id
),

final as (
    -- the first slice takes the rounding remainder so a pooled line's slices sum to it exactly
    select
        totals.line_id,
        totals.attempt_id,
        totals.experiment_id,
        totals.pool_name,
        totals.share,
        slices_taking_rest(totals.slice_rank = 1, totals, 'line'),  -- noqa: AL03
        totals.billing_period,
        totals.profile_key
    from totals
)

select * from final
