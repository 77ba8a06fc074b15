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
    -- read them again, which spilled at the memory per line of a 100M bill (docs/performance.md, session 24)
    select
        pooled_lines.*,
        pool_driver_weights.attempt_id,
        pool_driver_weights.experiment_id,
        pool_driver_weights.share,
        case when pool_driver_weights.takes_remainder then 1 else 2 end as slice_rank,
        cast(pooled_lines.billed_cost * pool_driver_weights.share as decimal(38, 10)) as billed_part,
        cast(
            pooled_lines.effective_cost * pool_driver_weights.share as decimal(38, 10)
        ) as effective_part,
        cast(pooled_lines.list_cost * pool_driver_weights.share as decimal(38, 10)) as list_part,
        cast(pooled_lines.net_cost * pool_driver_weights.share as decimal(38, 10)) as net_part
    from pooled_lines
    inner join pool_driver_weights
        on
            pooled_lines.pool_order = pool_driver_weights.pool_order
            and pooled_lines.window_start = pool_driver_weights.window_start
            and pooled_lines.window_end = pool_driver_weights.window_end
    where pool_driver_weights.share is not null
),

line_parts as (
    select
        rounded.line_id,
        sum(rounded.billed_part) as billed_parts,
        sum(rounded.effective_part) as effective_parts,
        sum(rounded.list_part) as list_parts,
        sum(rounded.net_part) as net_parts
    from rounded
    group by rounded.line_id
),

totals as (
    select
        rounded.*,
        line_parts.billed_parts,
        line_parts.effective_parts,
        line_parts.list_parts,
        line_parts.net_parts
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
        first_slice_takes_rest(
            totals.slice_rank = 1,
            totals.billed_cost,
            totals.billed_parts,
            totals.billed_part
        ) as billed_cost,
        first_slice_takes_rest(
            totals.slice_rank = 1,
            totals.effective_cost,
            totals.effective_parts,
            totals.effective_part
        ) as effective_cost,
        first_slice_takes_rest(
            totals.slice_rank = 1,
            totals.list_cost,
            totals.list_parts,
            totals.list_part
        ) as list_cost,
        first_slice_takes_rest(
            totals.slice_rank = 1,
            totals.net_cost,
            totals.net_parts,
            totals.net_part
        ) as net_cost,
        totals.billing_period,
        totals.profile_key
    from totals
)

select * from final
