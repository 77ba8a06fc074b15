-- How far each estimate was from the bill that replaced it: estimated against billed, per window.
-- grain: one row per (attempt_id, resource_id, window_start)
-- periods: combined (an estimate's window may reach into any billing period)
-- A window is the part of an earlier snapshot's estimate (marts.cost_estimates) that the bill now
-- covers. Windows replaced before are carried from the previous snapshot; billed_cost is always
-- what the current bill places on the attempt for that resource in the window (marginal,
-- billed_cost basis, compute lines), so a restated bill updates the error.
with previous_estimates as (
    select * from staging.previous_cost_estimates
),

previous_errors as (
    select * from staging.previous_estimate_errors
),

cost_estimates as (
    select * from marts.cost_estimates
),

attempts as (
    select * from staging.attempts
),

cost_allocations as (
    select * from allocation.cost_allocations
),

cost_lines as (
    select * from normalized.cost_lines
),

still_estimated as (
    select
        previous_estimates.attempt_id,
        previous_estimates.resource_id,
        previous_estimates.estimate_start,
        min(cost_estimates.estimate_start) as estimated_from
    from previous_estimates
    inner join cost_estimates
        on
            same_attempt_resource(previous_estimates, cost_estimates)  -- noqa: RF02
            and previous_estimates.estimate_start < cost_estimates.estimate_end
    group by previous_estimates.attempt_id, previous_estimates.resource_id, previous_estimates.estimate_start
),

newly_replaced as (
    -- the part of a previous estimate before the current one starts is billed now
    select
        previous_estimates.attempt_id,
        previous_estimates.resource_id,
        previous_estimates.estimate_start as window_start,
        least(
            previous_estimates.estimate_end,
            coalesce(still_estimated.estimated_from, previous_estimates.estimate_end)
        ) as window_end,
        previous_estimates.price_per_hour,
        previous_estimates.billing_currency,
        true as replaced_since_previous
    from previous_estimates
    left join still_estimated
        on
            same_attempt_resource(previous_estimates, still_estimated)  -- noqa: RF02
            and previous_estimates.estimate_start = still_estimated.estimate_start
    where previous_estimates.price_per_hour is not null
),

new_windows as (
    select
        newly_replaced.attempt_id,
        newly_replaced.resource_id,
        newly_replaced.window_start,
        newly_replaced.window_end,
        cast(epoch_us(newly_replaced.window_end) - epoch_us(newly_replaced.window_start) as hugeint)
            as estimated_us,
        newly_replaced.price_per_hour,
        newly_replaced.billing_currency,
        newly_replaced.replaced_since_previous
    from newly_replaced
    where newly_replaced.window_end > newly_replaced.window_start
),

windows as (
    select
        new_windows.attempt_id,
        new_windows.resource_id,
        new_windows.window_start,
        new_windows.window_end,
        -- as marts.cost_estimates: one division by 3600 s (3.6e9 us), rounded half up to 1e-10, once
        money(
            cast((new_windows.estimated_us * 20000000000 + 3600000000) // 7200000000 as decimal(38, 0))
            * cast(0.0000000001 as decimal(11, 10))
        ) as estimated_hours,
        money(
            cast(
                (
                    cast(new_windows.price_per_hour * 10000000000 as hugeint) * new_windows.estimated_us * 2
                    + 3600000000
                )
                // 7200000000 as decimal(38, 0)
            )
            * cast(0.0000000001 as decimal(11, 10))
        ) as estimated_cost,
        new_windows.billing_currency,
        new_windows.replaced_since_previous
    from new_windows
    union all
    select
        previous_errors.attempt_id,
        previous_errors.resource_id,
        previous_errors.window_start,
        previous_errors.window_end,
        money(previous_errors.estimated_hours) as estimated_hours,
        previous_errors.estimated_cost,
        previous_errors.billing_currency,
        false as replaced_since_previous
    from previous_errors
),

window_resources as (
    select distinct
        windows.attempt_id,
        windows.resource_id
    from windows
),

attempt_slices as (
    -- only the slices of estimated attempts and instances: a few, whatever the bill's size
    select
        cost_allocations.line_id,
        cost_allocations.attempt_id,
        cost_allocations.resource_id,
        cost_allocations.charge_period_start,
        cost_allocations.charge_period_end,
        cost_allocations.billed_cost
    from cost_allocations
    inner join window_resources on same_attempt_resource(cost_allocations, window_resources)  -- noqa: RF02
    where
        cost_allocations.allocation_model = 'marginal'
        and cost_allocations.allocation_kind = 'attributed'
),

billed_slices as (
    select attempt_slices.*
    from attempt_slices
    inner join cost_lines on attempt_slices.line_id = cost_lines.line_id
    where cost_lines.resource_class = 'compute'
),

billed as (
    select
        windows.attempt_id,
        windows.resource_id,
        windows.window_start,
        sum(billed_slices.billed_cost) as billed_cost
    from windows
    inner join billed_slices
        on
            same_attempt_resource(windows, billed_slices)  -- noqa: RF02
            and windows.window_start < billed_slices.charge_period_end
            and windows.window_end > billed_slices.charge_period_start
    group by windows.attempt_id, windows.resource_id, windows.window_start
),

final as (
    select
        windows.attempt_id,
        attempts.experiment_id,
        windows.resource_id,
        windows.window_start,
        windows.window_end,
        windows.estimated_hours,
        windows.billing_currency,
        windows.estimated_cost,
        money(coalesce(billed.billed_cost, 0)) as billed_cost,
        money(windows.estimated_cost - coalesce(billed.billed_cost, 0)) as estimate_error,
        (windows.estimated_cost - coalesce(billed.billed_cost, 0)) / nullif(billed.billed_cost, 0)
            as relative_error,
        windows.replaced_since_previous
    from windows
    left join attempts on windows.attempt_id = attempts.attempt_id
    left join billed
        on
            same_attempt_resource(windows, billed)  -- noqa: RF02
            and windows.window_start = billed.window_start
)

select * from final
