-- Attempt-hours the bill does not cover yet, priced: seconds held x the hourly price / 3600.
-- grain: one row per (attempt_id, resource_id, estimate_start)
-- periods: combined (prices are the billed rates of every billing period)
-- Estimated time starts where the bill's usage stops (the later of the resource's and the account's
-- usage_until in normalized.usage_horizons: month-long tax, credit and fee lines do not count) and
-- ends at the earlier of the attempt's end and the run clock: telemetry ahead of the clock is never
-- estimated. The price is config.estimate_prices, else the list price per hour the bill shows for
-- the instance type and region. Only instances (resource_kind naming an instance, node, vm or host,
-- or an i- id) are estimated; disks and transfer wait for the bill. Money is exact: microseconds
-- held x price in units of 1e-10, divided by 3600 s once and rounded half up once.
with attempts as (
    select * from staging.attempts
),

attempt_resources as (
    select * from staging.attempt_resources
),

cost_lines as (
    select * from normalized.cost_lines
),

usage_horizons as (
    select * from normalized.usage_horizons
),

estimate_prices as (
    select * from config.estimate_prices
),

run_clock as (
    select * from staging.run_clock
),

resource_horizons as (
    select
        usage_horizons.resource_id,
        max(usage_horizons.usage_until) as billed_until
    from usage_horizons
    where usage_horizons.resource_id is not null
    group by usage_horizons.resource_id
),

account_horizons as (
    select
        usage_horizons.provider,
        usage_horizons.sub_account_id,
        max(usage_horizons.usage_until) as billed_until
    from usage_horizons
    group by usage_horizons.provider, usage_horizons.sub_account_id
),

billed_prices as (
    -- the list price per hour the bill shows (list_cost is the public on-demand cost)
    select
        cost_lines.instance_type,
        cost_lines.region_id,
        cost_lines.billing_currency,
        sum(cost_lines.list_cost) as list_cost,
        sum(cost_lines.usage_seconds) as usage_seconds
    from cost_lines
    where
        cost_lines.resource_class = 'compute'
        and cost_lines.charge_category = 'Usage'
        and cost_lines.instance_type <> ''
        and cost_lines.usage_seconds > 0
        and cost_lines.list_cost > 0
    group by cost_lines.instance_type, cost_lines.region_id, cost_lines.billing_currency
),

held as (
    select
        attempts.attempt_id,
        attempts.experiment_id,
        attempt_resources.resource_id,
        attempts.provider,
        attempts.account_id,
        attempts.region,
        attempts.instance_type,
        attempts.capacity_type,
        coalesce(attempt_resources.started_at, attempts.started_at) as held_from,
        -- still running: held until now
        coalesce(attempt_resources.ended_at, attempts.ended_at, run_clock.now) as held_until,
        greatest(
            coalesce(resource_horizons.billed_until, account_horizons.billed_until),
            coalesce(account_horizons.billed_until, resource_horizons.billed_until)
        ) as billed_until,
        run_clock.now
    from attempt_resources
    inner join attempts on attempt_resources.attempt_id = attempts.attempt_id
    cross join run_clock
    left join resource_horizons on attempt_resources.resource_id = resource_horizons.resource_id
    left join account_horizons
        on
            attempts.account_id = account_horizons.sub_account_id
            and coalesce(attempts.provider, account_horizons.provider) = account_horizons.provider
    where
        coalesce(attempt_resources.started_at, attempts.started_at) is not null
        and (
            lower(coalesce(attempt_resources.resource_kind, '')) like '%instance%'
            or lower(coalesce(attempt_resources.resource_kind, '')) like '%node%'
            or lower(coalesce(attempt_resources.resource_kind, '')) like '%vm%'
            or lower(coalesce(attempt_resources.resource_kind, '')) like '%host%'
            or (attempt_resources.resource_kind is null and attempt_resources.resource_id like 'i-%')
        )
),

windows as (
    select
        held.*,
        greatest(held.held_from, coalesce(held.billed_until, held.held_from)) as estimate_start,
        least(held.held_until, held.now) as estimate_end
    from held
),

unbilled as (
    select
        windows.*,
        cast(epoch_us(windows.estimate_end) - epoch_us(windows.estimate_start) as hugeint) as estimated_us
    from windows
    where windows.estimate_end > windows.estimate_start
),

priced as (
    select
        unbilled.*,
        case
            when estimate_prices.price_per_hour is not null then estimate_prices.price_per_hour
            when billed_prices.usage_seconds > 0
                then money(
                    cast(round(billed_prices.list_cost * 3600 / billed_prices.usage_seconds, 10) as varchar)
                )
        end as price_per_hour,
        case
            when estimate_prices.price_per_hour is not null then 'config'
            when billed_prices.usage_seconds > 0 then 'billing'
        end as price_source,
        coalesce(estimate_prices.currency, billed_prices.billing_currency) as billing_currency
    from unbilled
    left join estimate_prices
        on
            unbilled.instance_type = estimate_prices.instance_type
            and unbilled.region = estimate_prices.region
    left join billed_prices
        on
            unbilled.instance_type = billed_prices.instance_type
            and unbilled.region = billed_prices.region_id
),

final as (
    select
        priced.attempt_id,
        priced.experiment_id,
        priced.resource_id,
        priced.provider,
        priced.account_id,
        priced.region,
        priced.instance_type,
        priced.capacity_type,
        priced.held_from,
        priced.held_until,
        priced.billed_until,
        priced.estimate_start,
        priced.estimate_end,
        cast(cast(priced.estimated_us as decimal(38, 0)) * cast(0.000001 as decimal(7, 6)) as decimal(38, 6))
            as estimated_seconds,
        -- hours and money: one division by 3600 s (3.6e9 us), rounded half up to 1e-10, once
        money(
            cast((priced.estimated_us * 20000000000 + 3600000000) // 7200000000 as decimal(38, 0))
            * cast(0.0000000001 as decimal(11, 10))
        ) as estimated_hours,
        priced.price_per_hour,
        priced.price_source,
        priced.billing_currency,
        money(
            cast(
                (cast(priced.price_per_hour * 10000000000 as hugeint) * priced.estimated_us * 2 + 3600000000)
                // 7200000000 as decimal(38, 0)
            )
            * cast(0.0000000001 as decimal(11, 10))
        ) as estimated_cost,
        'estimated' as cost_status
    from priced
)

select * from final
