-- Shares of unattributed cost that a pool spreads over attempts, by the pool's driver (fully loaded model).
-- grain: one row per (line_id, attempt_id)
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
    from normalized.cost_lines as cost_lines
),

pool_line_matches as (
    select * from allocation.pool_line_matches
),

pool_eligible_attempts as (
    select * from allocation.pool_eligible_attempts
),

pools as (
    select * from config.pools
),

attempts as (
    select
        attempts.attempt_id,
        attempts.experiment_id,
        attempts.started_at,
        attempts.ended_at,
        attempts.gpu_count
    from staging.attempts as attempts
    where attempts.started_at is not null
),

pooled_lines as (
    select
        remainders.*,
        pools.pool_order,
        pools.pool_name,
        pools.driver,
        case
            when pools.spread = 'billing_period' then cost_lines.billing_period_start
            else cost_lines.charge_period_start
        end as window_start,
        case
            when pools.spread = 'billing_period' then cost_lines.billing_period_end
            else cost_lines.charge_period_end
        end as window_end
    from remainders
    inner join pool_line_matches on remainders.line_id = pool_line_matches.line_id
    inner join pools on pool_line_matches.pool_order = pools.pool_order
    inner join cost_lines on remainders.line_id = cost_lines.line_id
),

candidates as (
    select
        pooled_lines.*,
        attempts.attempt_id,
        attempts.experiment_id,
        case
            when pooled_lines.driver = 'gpu_seconds'
                then
                    (
                        epoch_us(
                            least(
                                pooled_lines.window_end,
                                coalesce(attempts.ended_at, pooled_lines.window_end)
                            )
                        )
                        - epoch_us(greatest(pooled_lines.window_start, attempts.started_at))
                    )
                    * coalesce(attempts.gpu_count, 0)
            else 1
        end as weight
    from pooled_lines
    inner join pool_eligible_attempts
        on pooled_lines.pool_order = pool_eligible_attempts.pool_order
    inner join attempts on pool_eligible_attempts.attempt_id = attempts.attempt_id
    where
        attempts.started_at < pooled_lines.window_end
        and coalesce(attempts.ended_at, pooled_lines.window_end) > pooled_lines.window_start
),

positive as (
    select candidates.* from candidates
    where candidates.weight > 0
),

line_weights as (
    -- hash aggregates per line instead of window functions partitioned by line_id: the
    -- largest slice (ties: smallest attempt_id) takes the rounding remainder
    select
        positive.line_id,
        sum(positive.weight) as total_weight,
        arg_min(positive.attempt_id, (-positive.weight, positive.attempt_id)) as first_attempt_id
    from positive
    group by positive.line_id
),

rounded as (
    select
        positive.*,
        positive.weight / line_weights.total_weight as share,
        case when positive.attempt_id = line_weights.first_attempt_id then 1 else 2 end
            as slice_rank,
        cast(
            positive.billed_cost * (positive.weight / line_weights.total_weight) as decimal(38, 10)
        ) as billed_part,
        cast(
            positive.effective_cost * (positive.weight / line_weights.total_weight)
            as decimal(38, 10)
        ) as effective_part,
        cast(
            positive.list_cost * (positive.weight / line_weights.total_weight) as decimal(38, 10)
        ) as list_part,
        cast(
            positive.net_cost * (positive.weight / line_weights.total_weight) as decimal(38, 10)
        ) as net_part
    from positive
    inner join line_weights on positive.line_id = line_weights.line_id
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
        cast(
            case
                when totals.slice_rank = 1
                    then totals.billed_cost - (totals.billed_parts - totals.billed_part)
                else totals.billed_part
            end as decimal(38, 10)
        ) as billed_cost,
        cast(
            case
                when totals.slice_rank = 1
                    then totals.effective_cost - (totals.effective_parts - totals.effective_part)
                else totals.effective_part
            end as decimal(38, 10)
        ) as effective_cost,
        cast(
            case
                when totals.slice_rank = 1
                    then totals.list_cost - (totals.list_parts - totals.list_part)
                else totals.list_part
            end as decimal(38, 10)
        ) as list_cost,
        cast(
            case
                when totals.slice_rank = 1
                    then totals.net_cost - (totals.net_parts - totals.net_part)
                else totals.net_part
            end as decimal(38, 10)
        ) as net_cost
    from totals
)

select * from final
